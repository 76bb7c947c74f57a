import { Center, Stack, Text, Title } from '@mantine/core';
import { AnchorLink } from '../components/links';

export function NotFoundPage() {
  return (
    <Center h="60vh">
      <Stack align="center" gap="xs">
        <Title order={1}>Page not found</Title>
        <Text c="dimmed">There is nothing at this address.</Text>
        <AnchorLink to="/">Go to the overview</AnchorLink>
      </Stack>
    </Center>
  );
}
