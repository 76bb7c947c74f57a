/** Users and roles: list, create, change role, disable/enable, reset password (admins). */
import { useState } from 'react';
import { Badge, Button, Group, Modal, PasswordInput, Select, Stack, Text, TextInput, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { Controller, useForm } from 'react-hook-form';
import { usersKey, usersQuery } from '../../api/queries';
import { useSession } from '../../api/session';
import { api, errorMessage } from '../../lib/http';
import type { CreatedUser, NewPassword, Role, User } from '../../lib/api-types';
import { passwordProblem, placeFieldErrors, usernameProblem } from '../../lib/admin';
import { formatDateTime, formatRelative } from '../../lib/time';
import { Allowed } from '../../components/admin/NotAllowed';
import { Confirm, Problem } from '../../components/admin/Confirm';
import { ShownOnce } from '../../components/admin/ShownOnce';
import { DataTable } from '../../components/DataTable';
import { Empty } from '../../components/Empty';
import { ErrorAlert } from '../../components/ErrorAlert';

const ROLES: { value: Role; label: string }[] = [
  { value: 'admin', label: 'Admin: everything, including users and settings' },
  { value: 'developer', label: 'Developer: processes, Mates, webhooks' },
  { value: 'agent', label: 'Agent: works tasks' },
  { value: 'viewer', label: 'Viewer: reads only' },
];
const ROLE_SHORT = ROLES.map((r) => ({ value: r.value, label: r.value[0].toUpperCase() + r.value.slice(1) }));

interface NewUser {
  username: string;
  name: string;
  role: Role;
  password: string;
}

function CreateUser({ onDone }: { onDone: (created: CreatedUser, password: string) => void }) {
  const qc = useQueryClient();
  const [failure, setFailure] = useState<string | null>(null);
  const form = useForm<NewUser>({ defaultValues: { username: '', name: '', role: 'agent', password: '' } });
  const { errors, isSubmitting } = form.formState;
  const submit = form.handleSubmit(async (v) => {
    setFailure(null);
    try {
      const created = await api<CreatedUser>('/v1/users', {
        method: 'POST',
        body: {
          username: v.username.trim(),
          role: v.role,
          ...(v.name.trim() ? { name: v.name.trim() } : {}),
          ...(v.password ? { password: v.password } : {}),
        },
      });
      void qc.invalidateQueries({ queryKey: usersKey() });
      form.reset();
      onDone(created, v.password);
    } catch (err) {
      const placed = placeFieldErrors(err, { username: /username|named/i, password: /password/i, name: /^name/i, role: /role/i });
      for (const [f, m] of Object.entries(placed.byField)) form.setError(f as keyof NewUser, { message: m as string });
      setFailure(placed.message);
    }
  });
  return (
    <form onSubmit={submit} noValidate aria-label="New user">
      <Stack>
        <Problem message={failure} onClose={() => setFailure(null)} />
        <TextInput
          label="Username"
          description="Used to sign in: letters, digits and . _ @ + -"
          required
          autoComplete="off"
          error={errors.username?.message}
          {...form.register('username', { validate: (v) => usernameProblem(v.trim()) ?? true })}
        />
        <TextInput label="Name" autoComplete="off" error={errors.name?.message} {...form.register('name')} />
        <Controller
          control={form.control}
          name="role"
          render={({ field }) => (
            <Select
              label="Role"
              required
              data={ROLES}
              allowDeselect={false}
              value={field.value}
              onChange={(v) => field.onChange(v as Role)}
              error={errors.role?.message}
            />
          )}
        />
        <PasswordInput
          label="Initial password"
          description="At least 12 characters. Leave empty to have one generated and shown once."
          autoComplete="new-password"
          error={errors.password?.message}
          {...form.register('password', { validate: (v) => (v === '' ? true : (passwordProblem(v) ?? true)) })}
        />
        <Group justify="flex-end">
          <Button type="submit" loading={isSubmitting}>
            Create user
          </Button>
        </Group>
      </Stack>
    </form>
  );
}

function UsersScreen() {
  const session = useSession();
  const tz = session.tenant.timeZone;
  const users = useQuery(usersQuery());
  const qc = useQueryClient();
  const [problem, setProblem] = useState<string | null>(null);
  const [creating, setCreating] = useState(false);
  const [shown, setShown] = useState<{ title: string; username: string; password: string | null } | null>(null);
  const [resetting, setResetting] = useState<User | null>(null);

  const patch = async (u: User, body: { role?: Role; disabled?: boolean }, done: string) => {
    setProblem(null);
    try {
      await api<User>(`/v1/users/${u.id}`, { method: 'PATCH', body });
      notifications.show({ message: done });
    } catch (err) {
      setProblem(`${u.username}: ${errorMessage(err)}`);
    } finally {
      void qc.invalidateQueries({ queryKey: usersKey() });
    }
  };

  if (users.isPending) return <Text>Loading users…</Text>;
  if (users.isError) return <ErrorAlert error={users.error} title="Could not load the users" retry={() => users.refetch()} />;

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2} size="h3">
          Users and roles
        </Title>
        <Button onClick={() => setCreating(true)}>New user</Button>
      </Group>
      <Problem message={problem} onClose={() => setProblem(null)} />
      <DataTable
        rows={users.data}
        rowKey={(u) => u.id}
        rowTestId={(u) => `user-${u.username}`}
        testId="users-table"
        minWidth={760}
        empty={<Empty title="No users yet">Create one with New user.</Empty>}
        columns={[
          {
            header: 'User',
            cell: (u) => (
              <>
                <Text fw={600}>{u.username}</Text>
                {u.name && u.name !== u.username && (
                  <Text size="sm" c="dimmed">
                    {u.name}
                  </Text>
                )}
              </>
            ),
          },
          {
            header: 'Role',
            cell: (u) => (
              <Select
                aria-label={`Role of ${u.username}`}
                data={ROLE_SHORT}
                value={u.role}
                allowDeselect={false}
                w={140}
                onChange={(v) => v && v !== u.role && void patch(u, { role: v as Role }, `${u.username} is now ${v}.`)}
              />
            ),
          },
          {
            header: 'Status',
            cell: (u) => (u.disabled ? <Badge color="gray">Disabled</Badge> : <Badge color="teal">Enabled</Badge>),
          },
          {
            header: 'Last sign-in',
            td: (u) => ({ title: formatDateTime(u.lastSignInAt, tz) }),
            cell: (u) => (u.lastSignInAt ? formatRelative(u.lastSignInAt) : 'Never'),
          },
          {
            header: 'Actions',
            hidden: true,
            cell: (u) => (
              <Group gap="xs" justify="flex-end" wrap="nowrap">
                {/* one cannot disable oneself (the server refuses it too) */}
                {u.id !== session.user.id && (
                  <Button
                    size="compact-sm"
                    variant="default"
                    aria-label={`${u.disabled ? 'Enable' : 'Disable'} ${u.username}`}
                    onClick={() =>
                      void patch(
                        u,
                        { disabled: !u.disabled },
                        `${u.username} is ${u.disabled ? 'enabled' : 'disabled: signed out everywhere'}.`,
                      )
                    }
                  >
                    {u.disabled ? 'Enable' : 'Disable'}
                  </Button>
                )}
                <Button size="compact-sm" variant="default" aria-label={`Reset password of ${u.username}`} onClick={() => setResetting(u)}>
                  Reset password
                </Button>
              </Group>
            ),
          },
        ]}
      />

      <Modal opened={creating} onClose={() => setCreating(false)} title="New user" centered>
        <CreateUser
          onDone={(c, given) => {
            setCreating(false);
            notifications.show({ message: `${c.user.username} created as ${c.user.role}.` });
            if (c.password) setShown({ title: 'User created', username: c.user.username, password: c.password });
            else if (!given) setShown(null);
          }}
        />
      </Modal>

      <Confirm
        opened={resetting !== null}
        title={`Reset the password of ${resetting?.username ?? ''}?`}
        confirmLabel="Reset password"
        color="red"
        onClose={() => setResetting(null)}
        onConfirm={async () => {
          const u = resetting!;
          const r = await api<NewPassword>(`/v1/users/${u.id}/password`, { method: 'POST', body: {} });
          setResetting(null);
          setShown({ title: 'Password reset', username: u.username, password: r.password });
        }}
      >
        <Text>A new password is generated and shown once. Their sessions and personal access tokens end at once.</Text>
      </Confirm>

      <Modal opened={shown !== null} onClose={() => setShown(null)} title={shown?.title ?? 'Password'} centered>
        {shown?.password && (
          <Stack>
            <Text>
              The password of <b>{shown.username}</b>. Give it to them in a safe way; they can change it under their account.
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

export function UsersPage() {
  return (
    <Allowed permission="users.manage" what="Users and roles">
      <UsersScreen />
    </Allowed>
  );
}
