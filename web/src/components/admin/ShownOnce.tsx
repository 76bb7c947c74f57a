/** A secret or password shown once: the value to copy, a copy button and "you will not see this again". */
import type { ReactNode } from 'react';
import { Alert, Button, Code, CopyButton, Group, Stack, Text } from '@mantine/core';

export function ShownOnce({ label, value, children }: { label: string; value: string; children?: ReactNode }) {
  // "Password" → "password", but "API secret" stays
  const noun = /^[A-Z][a-z]/.test(label) ? label[0].toLowerCase() + label.slice(1) : label;
  return (
    <Alert color="yellow" variant="light" title={`${label}: copy it now`} data-testid="shown-once">
      <Stack gap="xs">
        <Text size="sm" fw={600}>
          You will not see this again. Queuemate keeps only a hash of it; if it is lost, make a new one.
        </Text>
        <Group gap="xs" wrap="nowrap" align="center">
          <Code block data-testid="shown-once-value" style={{ flex: 1, wordBreak: 'break-all', whiteSpace: 'pre-wrap' }}>
            {value}
          </Code>
          <CopyButton value={value}>
            {({ copied, copy }) => (
              <Button size="xs" variant={copied ? 'filled' : 'light'} color={copied ? 'teal' : undefined} onClick={copy}>
                {copied ? 'Copied' : `Copy ${noun}`}
              </Button>
            )}
          </CopyButton>
        </Group>
        {children}
      </Stack>
    </Alert>
  );
}
