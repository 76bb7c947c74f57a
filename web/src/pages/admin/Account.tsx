/** One's own account (any signed-in person): personal access tokens (create shown once, list, revoke) and the password. */
import { useState } from 'react';
import { Button, Card, Code, Group, PasswordInput, Select, Stack, Text, TextInput, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { Controller, useForm } from 'react-hook-form';
import { sessionQuery, tokensKey, tokensQuery } from '../../api/queries';
import { useSession } from '../../api/session';
import { api, setCsrfToken } from '../../lib/http';
import type { CreatedToken, Session, Token } from '../../lib/api-types';
import { passwordProblem, placeFieldErrors, TOKEN_LIFETIMES, tokenExpiry } from '../../lib/admin';
import { formatDate, formatRelative } from '../../lib/time';
import { Confirm, Problem } from '../../components/admin/Confirm';
import { ShownOnce } from '../../components/admin/ShownOnce';
import { DataTable } from '../../components/DataTable';
import { ErrorAlert } from '../../components/ErrorAlert';

function NewToken({ onCreated }: { onCreated: (t: CreatedToken) => void }) {
  const qc = useQueryClient();
  const [failure, setFailure] = useState<string | null>(null);
  const form = useForm<{ name: string; days: string }>({ defaultValues: { name: '', days: '90' } });
  const { errors, isSubmitting } = form.formState;
  const submit = form.handleSubmit(async (v) => {
    setFailure(null);
    try {
      const t = await api<CreatedToken>('/v1/me/tokens', {
        method: 'POST',
        body: { name: v.name.trim(), expiresAt: tokenExpiry(Number(v.days)) },
      });
      void qc.invalidateQueries({ queryKey: tokensKey() });
      form.reset();
      onCreated(t);
    } catch (err) {
      const placed = placeFieldErrors(err, { name: /^name/i, days: /expires/i });
      for (const [f, m] of Object.entries(placed.byField)) form.setError(f as 'name' | 'days', { message: m as string });
      setFailure(placed.message);
    }
  });
  return (
    <form onSubmit={submit} noValidate aria-label="New personal access token">
      <Stack>
        <Problem message={failure} onClose={() => setFailure(null)} />
        <Group align="flex-start" grow preventGrowOverflow={false} wrap="wrap">
          <TextInput
            label="Token name"
            description="What it is for, e.g. nightly export"
            required
            miw={220}
            error={errors.name?.message}
            {...form.register('name', {
              validate: (v) => (v.trim() === '' ? 'Enter a name' : v.trim().length > 100 ? 'At most 100 characters' : true),
            })}
          />
          <Controller
            control={form.control}
            name="days"
            render={({ field }) => (
              <Select
                label="Expires after"
                description="At most a year"
                data={TOKEN_LIFETIMES}
                value={field.value}
                onChange={(v) => field.onChange(v ?? '90')}
                allowDeselect={false}
                miw={160}
                error={errors.days?.message}
              />
            )}
          />
        </Group>
        <Group justify="flex-end">
          <Button type="submit" loading={isSubmitting}>
            Create token
          </Button>
        </Group>
      </Stack>
    </form>
  );
}

function Tokens() {
  const tz = useSession().tenant.timeZone;
  const tokens = useQuery(tokensQuery());
  const qc = useQueryClient();
  const [created, setCreated] = useState<CreatedToken | null>(null);
  const [revoking, setRevoking] = useState<Token | null>(null);
  return (
    <Card withBorder component="section" aria-labelledby="tokens-heading">
      <Stack>
        <Title order={2} size="h3" id="tokens-heading">
          Personal access tokens
        </Title>
        <Text size="sm" c="dimmed">
          A token acts as you, with your role, for scripts and tools: send it as <Code>Authorization: Bearer qmp_…</Code>. Changing your
          password ends every token.
        </Text>
        <NewToken onCreated={setCreated} />
        {created && (
          <ShownOnce label="Token" value={created.token}>
            <Group justify="space-between">
              <Text size="sm">
                {created.name}, valid until {formatDate(created.expiresAt, tz)}.
              </Text>
              <Button size="xs" variant="default" onClick={() => setCreated(null)}>
                I have copied it
              </Button>
            </Group>
          </ShownOnce>
        )}
        {tokens.isPending ? (
          <Text>Loading tokens…</Text>
        ) : tokens.isError ? (
          <ErrorAlert error={tokens.error} title="Could not load your tokens" retry={() => tokens.refetch()} />
        ) : (
          <DataTable
            rows={tokens.data}
            rowKey={(t) => t.id}
            testId="tokens-table"
            minWidth={560}
            framed={false}
            empty={<Text c="dimmed">You have no live tokens.</Text>}
            columns={[
              { header: 'Name', cell: (t) => t.name },
              { header: 'Created', cell: (t) => formatDate(t.createdAt, tz) },
              { header: 'Expires', cell: (t) => (t.expiresAt ? formatDate(t.expiresAt, tz) : 'Never') },
              { header: 'Last used', cell: (t) => (t.lastUsedAt ? formatRelative(t.lastUsedAt) : 'Never') },
              {
                header: 'Actions',
                hidden: true,
                cell: (t) => (
                  <Button size="compact-sm" variant="default" color="red" aria-label={`Revoke ${t.name}`} onClick={() => setRevoking(t)}>
                    Revoke
                  </Button>
                ),
              },
            ]}
          />
        )}
      </Stack>
      <Confirm
        opened={revoking !== null}
        title={`Revoke ${revoking?.name ?? ''}?`}
        confirmLabel="Revoke token"
        color="red"
        onClose={() => setRevoking(null)}
        onConfirm={async () => {
          await api(`/v1/me/tokens/${revoking!.id}`, { method: 'DELETE' });
          setRevoking(null);
          void qc.invalidateQueries({ queryKey: tokensKey() });
          notifications.show({ message: 'Token revoked: it stopped working.' });
        }}
      >
        <Text>Anything using it is refused from now on.</Text>
      </Confirm>
    </Card>
  );
}

interface PasswordForm {
  currentPassword: string;
  newPassword: string;
  confirm: string;
}

function ChangePassword() {
  const qc = useQueryClient();
  const [failure, setFailure] = useState<string | null>(null);
  const form = useForm<PasswordForm>({ defaultValues: { currentPassword: '', newPassword: '', confirm: '' } });
  const { errors, isSubmitting } = form.formState;
  const submit = form.handleSubmit(async (v) => {
    setFailure(null);
    try {
      const s = await api<Session | undefined>('/v1/me/password', {
        method: 'POST',
        body: { currentPassword: v.currentPassword, newPassword: v.newPassword },
      });
      // the session goes on with a new cookie and CSRF token; every other session and token has ended
      if (s) {
        setCsrfToken(s.csrfToken);
        qc.setQueryData(sessionQuery().queryKey, s);
      }
      void qc.invalidateQueries({ queryKey: tokensKey() });
      form.reset();
      notifications.show({ message: 'Password changed. Your other sessions and your tokens have ended.' });
    } catch (err) {
      const placed = placeFieldErrors(err, { currentPassword: /current/i, newPassword: /password/i });
      for (const [f, m] of Object.entries(placed.byField)) form.setError(f as keyof PasswordForm, { message: m as string });
      setFailure(placed.message);
    }
  });
  return (
    <Card withBorder component="section" aria-labelledby="password-heading">
      <form onSubmit={submit} noValidate>
        <Stack>
          <Title order={2} size="h3" id="password-heading">
            Change your password
          </Title>
          <Problem message={failure} onClose={() => setFailure(null)} />
          <PasswordInput
            label="Current password"
            required
            autoComplete="current-password"
            error={errors.currentPassword?.message}
            {...form.register('currentPassword', { required: 'Enter your current password' })}
          />
          <PasswordInput
            label="New password"
            description="At least 12 characters"
            required
            autoComplete="new-password"
            error={errors.newPassword?.message}
            {...form.register('newPassword', { validate: (v) => passwordProblem(v) ?? true })}
          />
          <PasswordInput
            label="New password again"
            required
            autoComplete="new-password"
            error={errors.confirm?.message}
            {...form.register('confirm', { validate: (v, all) => (v === all.newPassword ? true : 'The two new passwords differ') })}
          />
          <Group justify="flex-end">
            <Button type="submit" loading={isSubmitting}>
              Change password
            </Button>
          </Group>
        </Stack>
      </form>
    </Card>
  );
}

export function AccountPage() {
  const s = useSession();
  return (
    <Stack maw={860}>
      <Title order={1} size="h2">
        Your account
      </Title>
      <Text>
        Signed in as <b>{s.user.username}</b>
        {s.user.name && s.user.name !== s.user.username ? ` (${s.user.name})` : ''}, {s.user.role} of {s.tenant.name}.
      </Text>
      <Tokens />
      <ChangePassword />
    </Stack>
  );
}
