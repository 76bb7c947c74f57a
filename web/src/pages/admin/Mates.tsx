/** Mates: list with last contact, create, rename, disable/enable, new password shown once (admins and developers). */
import { useState } from 'react';
import { Badge, Button, Group, Modal, Stack, Text, TextInput, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useForm } from 'react-hook-form';
import { matesKey, matesQuery } from '../../api/queries';
import { useSession } from '../../api/session';
import { api, errorMessage } from '../../lib/http';
import type { CreatedMate, Mate, NewPassword } from '../../lib/api-types';
import { placeFieldErrors, usernameProblem } from '../../lib/admin';
import { formatDateTime, formatRelative } from '../../lib/time';
import { Allowed } from '../../components/admin/NotAllowed';
import { Confirm, Problem } from '../../components/admin/Confirm';
import { ShownOnce } from '../../components/admin/ShownOnce';
import { DataTable } from '../../components/DataTable';
import { Empty } from '../../components/Empty';
import { ErrorAlert } from '../../components/ErrorAlert';

function CreateMate({ onDone }: { onDone: (created: CreatedMate) => void }) {
  const qc = useQueryClient();
  const [failure, setFailure] = useState<string | null>(null);
  const form = useForm<{ username: string; name: string }>({ defaultValues: { username: '', name: '' } });
  const { errors, isSubmitting } = form.formState;
  const submit = form.handleSubmit(async (v) => {
    setFailure(null);
    try {
      const created = await api<CreatedMate>('/v1/mates', {
        method: 'POST',
        body: { username: v.username.trim(), ...(v.name.trim() ? { name: v.name.trim() } : {}) },
      });
      void qc.invalidateQueries({ queryKey: matesKey() });
      form.reset();
      onDone(created);
    } catch (err) {
      const placed = placeFieldErrors(err, { username: /username|named/i, name: /^name/i });
      for (const [f, m] of Object.entries(placed.byField)) form.setError(f as 'username' | 'name', { message: m as string });
      setFailure(placed.message);
    }
  });
  return (
    <form onSubmit={submit} noValidate aria-label="New Mate">
      <Stack>
        <Problem message={failure} onClose={() => setFailure(null)} />
        <TextInput
          label="Mate username"
          description="The robot signs in with it: letters, digits and . _ @ + -"
          required
          autoComplete="off"
          error={errors.username?.message}
          {...form.register('username', { validate: (v) => usernameProblem(v.trim()) ?? true })}
        />
        <TextInput
          label="Name"
          description="Optional, for people"
          autoComplete="off"
          error={errors.name?.message}
          {...form.register('name')}
        />
        <Text size="sm" c="dimmed">
          A password is generated and shown once after the Mate is created.
        </Text>
        <Group justify="flex-end">
          <Button type="submit" loading={isSubmitting}>
            Create Mate
          </Button>
        </Group>
      </Stack>
    </form>
  );
}

function Rename({ mate, onClose }: { mate: Mate; onClose: () => void }) {
  const qc = useQueryClient();
  const [failure, setFailure] = useState<string | null>(null);
  const form = useForm<{ name: string }>({ defaultValues: { name: mate.name } });
  const submit = form.handleSubmit(async (v) => {
    setFailure(null);
    try {
      await api<Mate>(`/v1/mates/${mate.id}`, { method: 'PATCH', body: { name: v.name.trim() } });
      void qc.invalidateQueries({ queryKey: matesKey() });
      notifications.show({ message: `${mate.username} is now called ${v.name.trim()}.` });
      onClose();
    } catch (err) {
      const placed = placeFieldErrors(err, { name: /name/i });
      if (placed.byField.name) form.setError('name', { message: placed.byField.name });
      setFailure(placed.message);
    }
  });
  return (
    <form onSubmit={submit} noValidate>
      <Stack>
        <Problem message={failure} onClose={() => setFailure(null)} />
        <TextInput
          label="Name"
          required
          data-autofocus
          error={form.formState.errors.name?.message}
          {...form.register('name', {
            validate: (v) => (v.trim() === '' ? 'Enter a name' : v.length > 200 ? 'At most 200 characters' : true),
          })}
        />
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            Cancel
          </Button>
          <Button type="submit" loading={form.formState.isSubmitting}>
            Save name
          </Button>
        </Group>
      </Stack>
    </form>
  );
}

function MatesScreen() {
  const tz = useSession().tenant.timeZone;
  const mates = useQuery(matesQuery());
  const qc = useQueryClient();
  const [problem, setProblem] = useState<string | null>(null);
  const [creating, setCreating] = useState(false);
  const [renaming, setRenaming] = useState<Mate | null>(null);
  const [renewing, setRenewing] = useState<Mate | null>(null);
  const [shown, setShown] = useState<{ title: string; username: string; password: string } | null>(null);

  const toggle = async (m: Mate) => {
    setProblem(null);
    try {
      await api<Mate>(`/v1/mates/${m.id}`, { method: 'PATCH', body: { disabled: !m.disabled } });
      notifications.show({ message: m.disabled ? `${m.username} is enabled.` : `${m.username} is disabled: its tokens stopped working.` });
    } catch (err) {
      setProblem(`${m.username}: ${errorMessage(err)}`);
    } finally {
      void qc.invalidateQueries({ queryKey: matesKey() });
    }
  };

  if (mates.isPending) return <Text>Loading Mates…</Text>;
  if (mates.isError) return <ErrorAlert error={mates.error} title="Could not load the Mates" retry={() => mates.refetch()} />;

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2} size="h3">
          Mates
        </Title>
        <Button onClick={() => setCreating(true)}>New Mate</Button>
      </Group>
      <Text c="dimmed" size="sm">
        Mates are the robots that work the queues through the Mate API. Each signs in with the tenant&apos;s Client Id and API secret and
        its own username and password.
      </Text>
      <Problem message={problem} onClose={() => setProblem(null)} />
      <DataTable
        rows={mates.data}
        rowKey={(m) => m.id}
        rowTestId={(m) => `mate-${m.username}`}
        testId="mates-table"
        minWidth={720}
        empty={<Empty title="No Mates yet">Create one with New Mate, then give its password to the robot.</Empty>}
        columns={[
          {
            header: 'Mate',
            cell: (m) => (
              <>
                <Text fw={600}>{m.username}</Text>
                {m.name && m.name !== m.username && (
                  <Text size="sm" c="dimmed">
                    {m.name}
                  </Text>
                )}
              </>
            ),
          },
          {
            header: 'Status',
            cell: (m) => (m.disabled ? <Badge color="gray">Disabled</Badge> : <Badge color="teal">Enabled</Badge>),
          },
          {
            header: 'Last contact',
            td: () => ({ 'data-testid': 'last-contact' }),
            cell: (m) =>
              m.lastContactAt ? (
                <>
                  <Text size="sm">{formatRelative(m.lastContactAt)}</Text>
                  <Text size="xs" c="dimmed">
                    {formatDateTime(m.lastContactAt, tz)}
                  </Text>
                </>
              ) : (
                <Text size="sm">Never</Text>
              ),
          },
          {
            header: 'Actions',
            hidden: true,
            cell: (m) => (
              <Group gap="xs" justify="flex-end" wrap="nowrap">
                <Button size="compact-sm" variant="default" aria-label={`Rename ${m.username}`} onClick={() => setRenaming(m)}>
                  Rename
                </Button>
                <Button
                  size="compact-sm"
                  variant="default"
                  aria-label={`${m.disabled ? 'Enable' : 'Disable'} ${m.username}`}
                  onClick={() => void toggle(m)}
                >
                  {m.disabled ? 'Enable' : 'Disable'}
                </Button>
                <Button size="compact-sm" variant="default" aria-label={`New password for ${m.username}`} onClick={() => setRenewing(m)}>
                  New password
                </Button>
              </Group>
            ),
          },
        ]}
      />

      <Modal opened={creating} onClose={() => setCreating(false)} title="New Mate" centered>
        <CreateMate
          onDone={(c) => {
            setCreating(false);
            if (c.password) setShown({ title: 'Mate created', username: c.mate.username, password: c.password });
          }}
        />
      </Modal>

      <Modal opened={renaming !== null} onClose={() => setRenaming(null)} title={`Rename ${renaming?.username ?? ''}`} centered>
        {renaming && <Rename mate={renaming} onClose={() => setRenaming(null)} />}
      </Modal>

      <Confirm
        opened={renewing !== null}
        title={`New password for ${renewing?.username ?? ''}?`}
        confirmLabel="Make a new password"
        color="red"
        onClose={() => setRenewing(null)}
        onConfirm={async () => {
          const m = renewing!;
          const r = await api<NewPassword>(`/v1/mates/${m.id}/password`, { method: 'POST', body: {} });
          setRenewing(null);
          if (r.password) setShown({ title: 'New Mate password', username: m.username, password: r.password });
        }}
      >
        <Text>The old password stops working at once, and so do the tokens the robot holds: it must sign in with the new one.</Text>
      </Confirm>

      <Modal opened={shown !== null} onClose={() => setShown(null)} title={shown?.title ?? 'Password'} centered>
        {shown && (
          <Stack>
            <Text>
              The password of the Mate <b>{shown.username}</b>. Put it in the robot&apos;s credential store now.
            </Text>
            <ShownOnce label="Password" value={shown.password} />
            <Group justify="flex-end">
              <Button onClick={() => setShown(null)}>Done</Button>
            </Group>
          </Stack>
        )}
      </Modal>
    </Stack>
  );
}

export function MatesPage() {
  return (
    <Allowed permission="mates.manage" what="Mates">
      <MatesScreen />
    </Allowed>
  );
}
