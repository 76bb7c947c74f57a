import { Alert, Button, Text } from '@mantine/core';
import { errorMessage } from '../lib/http';

export function ErrorAlert({ error, title = 'Could not load this', retry }: { error: unknown; title?: string; retry?: () => void }) {
  return (
    <Alert color="red" title={title} role="alert">
      <Text size="sm">{errorMessage(error)}</Text>
      {retry && (
        <Button size="xs" variant="light" color="red" mt="sm" onClick={retry}>
          Try again
        </Button>
      )}
    </Alert>
  );
}
