/** Rename, Stop/Start and archive a process, each where the role allows. */
import { useState } from 'react';
import { Alert, Button, Card, Group, List, Modal, Stack, Text, TextInput, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useGate, useUpdateProcess } from '../../api/mutations';
import { errorMessage } from '../../lib/http';
import type { ProcessDetail } from '../../lib/api-types';

export function ProcessAdmin({ process, canManage, canGate }: { process: ProcessDetail; canManage: boolean; canGate: boolean }) {
  const update = useUpdateProcess(process.id);
  const gate = useGate();
  const [name, setName] = useState(process.name);
  const [confirm, setConfirm] = useState(false);
  const [failure, setFailure] = useState<string | null>(null);
  const open = process.state.gateOpen;

  const run = async (what: () => Promise<unknown>, done: string) => {
    setFailure(null);
    try {
      await what();
      notifications.show({ color: 'teal', message: done });
      return true;
    } catch (err) {
      setFailure(errorMessage(err));
      return false;
    }
  };

  return (
    <Card withBorder component="section" aria-label="Process">
      <Stack gap="sm">
        <Title order={2} size="h4">
          Process
        </Title>
        {failure && (
          <Alert color="red" role="alert" title="That did not work">
            {failure}
          </Alert>
        )}
        {canManage ? (
          <form
            onSubmit={(e) => {
              e.preventDefault();
              if (name.trim() && name.trim() !== process.name)
                void run(() => update.mutateAsync({ name: name.trim() }), `Renamed to ${name.trim()}.`);
            }}
          >
            <Group align="flex-end" gap="xs">
              <TextInput
                label="Name"
                value={name}
                onChange={(e) => setName(e.currentTarget.value)}
                maxLength={200}
                required
                style={{ flex: '1 1 220px' }}
              />
              <Button type="submit" variant="default" loading={update.isPending} disabled={!name.trim() || name.trim() === process.name}>
                Rename
              </Button>
            </Group>
          </form>
        ) : (
          <Text>
            Name: <strong>{process.name || process.key}</strong>
          </Text>
        )}
        <Text size="sm">
          {open
            ? 'Running: Mates may take tasks.'
            : 'Stopped: Mates are told not to run and are handed no tasks; people can still work the queues.'}
        </Text>
        <Group gap="xs">
          {canGate && (
            <Button
              color={open ? 'red' : 'teal'}
              variant="light"
              loading={gate.isPending}
              onClick={() =>
                void run(
                  () => gate.mutateAsync({ id: process.id, open: !open }),
                  open ? 'Stopped: Mates are handed no tasks.' : 'Started: Mates may take tasks.',
                )
              }
            >
              {open ? 'Stop process' : 'Start process'}
            </Button>
          )}
          {canManage &&
            (process.archived ? (
              <Button
                variant="default"
                onClick={() => void run(() => update.mutateAsync({ archived: false }), 'Unarchived: the process is back.')}
              >
                Unarchive
              </Button>
            ) : (
              <Button variant="default" color="red" onClick={() => setConfirm(true)}>
                Archive…
              </Button>
            ))}
        </Group>
        {process.archived && <Text size="sm">This process is archived: Mates get “process not found” for its ProcessKey.</Text>}
      </Stack>
      <Modal opened={confirm} onClose={() => setConfirm(false)} title={`Archive ${process.name || process.key}?`}>
        <Stack>
          <Text size="sm">Archiving means:</Text>
          <List size="sm" spacing={4}>
            <List.Item>the process leaves the overview;</List.Item>
            <List.Item>
              Mates calling with its ProcessKey <strong>{process.key}</strong> get “process not found”, so robots stop working it;
            </List.Item>
            <List.Item>its tasks, history and settings are kept, and unarchiving brings it all back.</List.Item>
          </List>
          <Group justify="flex-end">
            <Button variant="default" onClick={() => setConfirm(false)}>
              Cancel
            </Button>
            <Button
              color="red"
              loading={update.isPending}
              onClick={() => void run(() => update.mutateAsync({ archived: true }), 'Archived.').then((ok) => ok && setConfirm(false))}
            >
              Archive process
            </Button>
          </Group>
        </Stack>
      </Modal>
    </Card>
  );
}
