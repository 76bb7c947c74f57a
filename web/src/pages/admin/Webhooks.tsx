/** Webhook endpoints: list, create, edit, delete, rotate the signing secret, allow private targets (admins; developers read). */
import { useState } from 'react';
import { Badge, Button, Group, Modal, Stack, Switch, TagsInput, Text, TextInput, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { Controller, useForm } from 'react-hook-form';
import { webhooksKey, webhooksQuery, webhookSettingsQuery } from '../../api/queries';
import { useSession } from '../../api/session';
import { api, errorMessage } from '../../lib/http';
import type { CreatedWebhook, Webhook, WebhookSettings } from '../../lib/api-types';
import { EVENT_TYPE_SUGGESTIONS, eventTypeProblem, placeFieldErrors, webhookUrlProblem } from '../../lib/admin';
import { can } from '../../lib/roles';
import { formatDate } from '../../lib/time';
import { Allowed } from '../../components/admin/NotAllowed';
import { Confirm, Problem } from '../../components/admin/Confirm';
import { ShownOnce } from '../../components/admin/ShownOnce';
import { AnchorLink, ButtonLink } from '../../components/links';
import { DataTable } from '../../components/DataTable';
import { Empty } from '../../components/Empty';
import { ErrorAlert } from '../../components/ErrorAlert';

interface EndpointForm {
  url: string;
  description: string;
  eventTypes: string[];
  enabled: boolean;
}

function EndpointEditor({ existing, onDone }: { existing: Webhook | null; onDone: (created: CreatedWebhook | null) => void }) {
  const qc = useQueryClient();
  const [failure, setFailure] = useState<string | null>(null);
  const form = useForm<EndpointForm>({
    defaultValues: {
      url: existing?.url ?? '',
      description: existing?.description ?? '',
      eventTypes: existing?.eventTypes ?? [],
      enabled: existing?.enabled ?? true,
    },
  });
  const { errors, isSubmitting } = form.formState;
  const submit = form.handleSubmit(async (v) => {
    setFailure(null);
    const body = { url: v.url.trim(), description: v.description.trim(), eventTypes: v.eventTypes, enabled: v.enabled };
    try {
      const r = existing
        ? await api<Webhook>(`/v1/webhooks/${existing.id}`, { method: 'PATCH', body })
        : await api<CreatedWebhook>('/v1/webhooks', { method: 'POST', body });
      void qc.invalidateQueries({ queryKey: webhooksKey() });
      onDone(existing ? null : (r as CreatedWebhook));
    } catch (err) {
      const placed = placeFieldErrors(err, { url: /url/i, eventTypes: /eventTypes/i, description: /description/i });
      for (const [f, m] of Object.entries(placed.byField)) form.setError(f as keyof EndpointForm, { message: m as string });
      setFailure(placed.message);
    }
  });
  return (
    <form onSubmit={submit} noValidate aria-label={existing ? 'Edit endpoint' : 'New endpoint'}>
      <Stack>
        <Problem message={failure} onClose={() => setFailure(null)} />
        <TextInput
          label="URL"
          description="Events are POSTed here, signed with the endpoint's secret"
          placeholder="https://example.com/hooks/queuemate"
          required
          error={errors.url?.message}
          {...form.register('url', { validate: (v) => webhookUrlProblem(v) ?? true })}
        />
        <Controller
          control={form.control}
          name="eventTypes"
          rules={{ validate: (v) => eventTypeProblem(v) ?? true }}
          render={({ field }) => (
            <TagsInput
              label="Event types"
              description="Types (task.solved) or families (task.*); none: every event"
              data={EVENT_TYPE_SUGGESTIONS}
              value={field.value}
              onChange={field.onChange}
              clearable
              error={errors.eventTypes?.message}
            />
          )}
        />
        <TextInput label="Description" error={errors.description?.message} {...form.register('description')} />
        <Controller
          control={form.control}
          name="enabled"
          render={({ field }) => (
            <Switch
              label="Enabled"
              description={
                existing?.disabledReason ? `Disabled by Queuemate: ${existing.disabledReason}. Enabling it clears its failures.` : undefined
              }
              checked={field.value}
              onChange={(e) => field.onChange(e.currentTarget.checked)}
            />
          )}
        />
        <Group justify="flex-end">
          <Button type="submit" loading={isSubmitting}>
            {existing ? 'Save endpoint' : 'Add endpoint'}
          </Button>
        </Group>
      </Stack>
    </form>
  );
}

function PrivateTargets({ manage }: { manage: boolean }) {
  const settings = useQuery(webhookSettingsQuery());
  const qc = useQueryClient();
  const [problem, setProblem] = useState<string | null>(null);
  if (!settings.data) return null;
  const allow = settings.data.allowPrivateTargets;
  const change = async (v: boolean) => {
    setProblem(null);
    try {
      qc.setQueryData(
        webhookSettingsQuery().queryKey,
        await api<WebhookSettings>('/v1/webhook-settings', { method: 'PUT', body: { allowPrivateTargets: v } }),
      );
    } catch (err) {
      setProblem(errorMessage(err));
    }
  };
  return (
    <Stack gap={4}>
      {manage ? (
        <Switch
          label="Allow targets on private addresses"
          description="Loopback, link-local and private networks (127.0.0.1, 10.x, 192.168.x). Off by default, so a webhook cannot reach inside your network."
          checked={allow}
          onChange={(e) => void change(e.currentTarget.checked)}
        />
      ) : (
        <Text size="sm">Targets on private addresses are {allow ? 'allowed' : 'not allowed'}.</Text>
      )}
      <Problem message={problem} onClose={() => setProblem(null)} />
    </Stack>
  );
}

function WebhooksScreen() {
  const session = useSession();
  const manage = can(session.user.role, 'webhooks.manage');
  const hooks = useQuery(webhooksQuery());
  const qc = useQueryClient();
  const [editing, setEditing] = useState<Webhook | 'new' | null>(null);
  const [removing, setRemoving] = useState<Webhook | null>(null);
  const [rotating, setRotating] = useState<Webhook | null>(null);
  const [secret, setSecret] = useState<{ url: string; secret: string } | null>(null);

  if (hooks.isPending) return <Text>Loading webhooks…</Text>;
  if (hooks.isError) return <ErrorAlert error={hooks.error} title="Could not load the webhooks" retry={() => hooks.refetch()} />;

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2} size="h3">
          Webhooks
        </Title>
        {manage && <Button onClick={() => setEditing('new')}>New endpoint</Button>}
      </Group>
      <Text size="sm" c="dimmed">
        Queuemate POSTs each event to the endpoints that ask for its type, signed (Standard Webhooks), retrying for 24 hours.
      </Text>
      <PrivateTargets manage={manage} />
      <DataTable
        rows={hooks.data}
        rowKey={(h) => h.id}
        rowTestId={(h) => `webhook-${h.id}`}
        testId="webhooks-table"
        minWidth={760}
        empty={<Empty title="No endpoints yet">{manage ? 'Add one with New endpoint.' : 'An admin can add one.'}</Empty>}
        columns={[
          {
            header: 'Endpoint',
            td: () => ({ maw: 320 }),
            cell: (h) => (
              <>
                <AnchorLink to="/admin/webhooks/$webhookId" params={{ webhookId: String(h.id) }} style={{ wordBreak: 'break-all' }}>
                  {h.url}
                </AnchorLink>
                {h.description && (
                  <Text size="sm" c="dimmed">
                    {h.description}
                  </Text>
                )}
                <Text size="xs" c="dimmed">
                  Added {formatDate(h.createdAt, session.tenant.timeZone)}
                </Text>
              </>
            ),
          },
          {
            header: 'Events',
            cell: (h) => <Text size="sm">{h.eventTypes.length ? h.eventTypes.join(', ') : 'Every event'}</Text>,
          },
          {
            header: 'Status',
            cell: (h) => (
              <>
                {h.enabled ? <Badge color="teal">Enabled</Badge> : <Badge color="gray">Disabled</Badge>}
                {h.disabledReason && (
                  <Text size="xs" c="red">
                    {h.disabledReason}
                  </Text>
                )}
              </>
            ),
          },
          {
            header: 'Actions',
            hidden: true,
            cell: (h) => (
              <Group gap="xs" justify="flex-end" wrap="nowrap">
                <ButtonLink
                  size="compact-sm"
                  variant="default"
                  to="/admin/webhooks/$webhookId"
                  params={{ webhookId: String(h.id) }}
                  aria-label={`Deliveries to ${h.url}`}
                >
                  Deliveries
                </ButtonLink>
                {manage && (
                  <>
                    <Button size="compact-sm" variant="default" aria-label={`Edit ${h.url}`} onClick={() => setEditing(h)}>
                      Edit
                    </Button>
                    <Button size="compact-sm" variant="default" aria-label={`New secret for ${h.url}`} onClick={() => setRotating(h)}>
                      New secret
                    </Button>
                    <Button size="compact-sm" variant="default" color="red" aria-label={`Remove ${h.url}`} onClick={() => setRemoving(h)}>
                      Remove
                    </Button>
                  </>
                )}
              </Group>
            ),
          },
        ]}
      />

      <Modal
        opened={editing !== null}
        onClose={() => setEditing(null)}
        title={editing === 'new' ? 'New endpoint' : 'Edit endpoint'}
        centered
        size="lg"
      >
        {editing !== null && (
          <EndpointEditor
            existing={editing === 'new' ? null : editing}
            onDone={(created) => {
              setEditing(null);
              if (created) setSecret({ url: created.url, secret: created.secret });
              else notifications.show({ message: 'Endpoint saved.' });
            }}
          />
        )}
      </Modal>

      <Confirm
        opened={removing !== null}
        title="Remove this endpoint?"
        confirmLabel="Remove endpoint"
        color="red"
        onClose={() => setRemoving(null)}
        onConfirm={async () => {
          await api(`/v1/webhooks/${removing!.id}`, { method: 'DELETE' });
          setRemoving(null);
          void qc.invalidateQueries({ queryKey: webhooksKey() });
          notifications.show({ message: 'Endpoint removed.' });
        }}
      >
        <Text style={{ wordBreak: 'break-all' }}>{removing?.url} gets no more events, and its delivery log is deleted.</Text>
      </Confirm>

      <Confirm
        opened={rotating !== null}
        title="Make a new signing secret?"
        confirmLabel="Make a new secret"
        color="red"
        onClose={() => setRotating(null)}
        onConfirm={async () => {
          const h = rotating!;
          const r = await api<{ secret: string }>(`/v1/webhooks/${h.id}/secret`, { method: 'POST' });
          setRotating(null);
          setSecret({ url: h.url, secret: r.secret });
        }}
      >
        <Text>The new secret signs from the next delivery attempt on: update the receiver at once.</Text>
      </Confirm>

      <Modal opened={secret !== null} onClose={() => setSecret(null)} title="Signing secret" centered size="lg">
        {secret && (
          <Stack>
            <Text style={{ wordBreak: 'break-all' }}>
              The receiver at {secret.url} checks each delivery&apos;s signature with this secret.
            </Text>
            <ShownOnce label="Secret" value={secret.secret} />
            <Group justify="flex-end">
              <Button onClick={() => setSecret(null)}>Done</Button>
            </Group>
          </Stack>
        )}
      </Modal>
    </Stack>
  );
}

export function WebhooksPage() {
  return (
    <Allowed permission="webhooks.read" what="Webhooks">
      <WebhooksScreen />
    </Allowed>
  );
}
