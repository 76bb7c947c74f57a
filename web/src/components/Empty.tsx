import { Paper, Stack, Text, Title } from '@mantine/core';
import type { ReactNode } from 'react';

export function Empty({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <Paper withBorder p="xl" radius="md">
      <Stack align="center" gap={4}>
        <Title order={2} size="h4">
          {title}
        </Title>
        {children && (
          <Text c="dimmed" ta="center">
            {children}
          </Text>
        )}
      </Stack>
    </Paper>
  );
}
