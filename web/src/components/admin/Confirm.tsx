/** A dialog that asks before an action and shows the server's refusal in words inside it. */
import { useState, type ReactNode } from 'react';
import { Alert, Button, Group, Modal, Stack } from '@mantine/core';
import { errorMessage } from '../../lib/http';

export function Confirm({
  opened,
  title,
  children,
  confirmLabel,
  color,
  onConfirm,
  onClose,
}: {
  opened: boolean;
  title: string;
  children: ReactNode;
  confirmLabel: string;
  color?: string;
  /** resolves when done; a rejection is shown in the dialog */
  onConfirm: () => Promise<unknown>;
  onClose: () => void;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const close = () => {
    setError(null);
    onClose();
  };
  const run = async () => {
    setBusy(true);
    setError(null);
    try {
      await onConfirm();
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <Modal opened={opened} onClose={close} title={title} centered>
      <Stack>
        {children}
        {error && (
          <Alert color="red" role="alert" title="Not done">
            {error}
          </Alert>
        )}
        <Group justify="flex-end">
          <Button variant="default" onClick={close}>
            Cancel
          </Button>
          <Button color={color} loading={busy} onClick={() => void run()}>
            {confirmLabel}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

/** A page's error in words, dismissable (a refusal such as "the last enabled admin"). */
export function Problem({ message, onClose }: { message: string | null; onClose: () => void }) {
  if (!message) return null;
  return (
    <Alert color="red" role="alert" title="Not done" withCloseButton closeButtonLabel="Dismiss" onClose={onClose} data-testid="problem">
      {message}
    </Alert>
  );
}
