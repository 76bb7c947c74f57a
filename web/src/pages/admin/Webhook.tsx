/** One endpoint's delivery log: status, duration, the answer's excerpt; redeliver one or every failed one. */
import { useState } from 'react';
import { Badge, Breadcrumbs, Button, Code, Group, SegmentedControl, Stack, Text, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { getRouteApi } from '@tanstack/react-router';
import { deliveriesKey, deliveriesQuery, webhookQuery } from '../../api/queries';
import { useSession } from '../../api/session';
import { api, errorMessage } from '../../lib/http';
import type { DeliveryStatus } from '../../lib/api-types';
import { attemptWords, deliveryWords } from '../../lib/admin';
import { can } from '../../lib/roles';
import { formatDateTime, formatRelative } from '../../lib/time';
import { Allowed } from '../../components/admin/NotAllowed';
import { Problem } from '../../components/admin/Confirm';
import { AnchorLink } from '../../components/links';
import { DataTable } from '../../components/DataTable';
import { Empty } from '../../components/Empty';
import { ErrorAlert } from '../../components/ErrorAlert';

const STATUS_COLOR: Record<DeliveryStatus, string> = { delivered: 'teal', failed: 'red', pending: 'blue' };
const STATUS_LABEL: Record<DeliveryStatus, string> = { delivered: 'Delivered', failed: 'Failed', pending: 'Pending' };

const route = getRouteApi('/_app/admin/webhooks/$webhookId');

function WebhookScreen() {
  const { webhookId } = route.useParams();
  const id = Number(webhookId);
  const session = useSession();
  const tz = session.tenant.timeZone;
  const manage = can(session.user.role, 'webhooks.manage');
  const [status, setStatus] = useState<'all' | DeliveryStatus>('all');
  const hook = useQuery(webhookQuery(id));
  const deliveries = useQuery(deliveriesQuery(id, status === 'all' ? undefined : status));
  const qc = useQueryClient();
  const [problem, setProblem] = useState<string | null>(null);

  const redeliver = async (path: string, what: string) => {
    setProblem(null);
    try {
      const r = await api<{ queued: number }>(path, { method: 'POST' });
      notifications.show({ message: r.queued ? `${what}: ${r.queued} queued.` : `${what}: nothing to deliver again.` });
    } catch (err) {
      setProblem(errorMessage(err));
    } finally {
      void qc.invalidateQueries({ queryKey: deliveriesKey(id) });
    }
  };

  if (hook.isPending) return <Text>Loading the endpoint…</Text>;
  if (hook.isError) return <ErrorAlert error={hook.error} title="Could not load the endpoint" />;
  const h = hook.data;
  return (
    <Stack>
      <Breadcrumbs>
        <AnchorLink to="/admin/webhooks">Webhooks</AnchorLink>
        <Text>Deliveries</Text>
      </Breadcrumbs>
      <Title order={2} size="h3" style={{ wordBreak: 'break-all' }}>
        Deliveries to {h.url}
      </Title>
      <Text size="sm">
        {h.enabled ? 'Enabled' : `Disabled${h.disabledReason ? `: ${h.disabledReason}` : ''}`} ·{' '}
        {h.eventTypes.length ? h.eventTypes.join(', ') : 'every event'}
      </Text>
      <Group justify="space-between">
        <SegmentedControl
          aria-label="Show deliveries"
          value={status}
          onChange={(v) => setStatus(v as typeof status)}
          data={[
            { value: 'all', label: 'All' },
            { value: 'delivered', label: 'Delivered' },
            { value: 'failed', label: 'Failed' },
            { value: 'pending', label: 'Pending' },
          ]}
        />
        {manage && (
          <Button variant="light" onClick={() => void redeliver(`/v1/webhooks/${id}/redeliver-failed`, 'Every failed delivery')}>
            Redeliver all failed
          </Button>
        )}
      </Group>
      <Problem message={problem} onClose={() => setProblem(null)} />
      {deliveries.isPending ? (
        <Text>Loading deliveries…</Text>
      ) : deliveries.isError ? (
        <ErrorAlert error={deliveries.error} title="Could not load the deliveries" retry={() => deliveries.refetch()} />
      ) : (
        <DataTable
          rows={deliveries.data}
          rowKey={(d) => d.id}
          rowTestId={() => 'delivery-row'}
          testId="deliveries-table"
          minWidth={760}
          empty={
            <Empty title={status === 'all' ? 'No deliveries yet' : `No ${STATUS_LABEL[status].toLowerCase()} deliveries`}>
              Events the endpoint asks for show here as they are sent.
            </Empty>
          }
          columns={[
            {
              header: 'Event',
              cell: (d) => (
                <>
                  <Text size="sm" ff="monospace">
                    {d.eventType}
                  </Text>
                  <Text size="xs" c="dimmed">
                    Event {d.eventId}
                  </Text>
                </>
              ),
            },
            {
              header: 'Status',
              cell: (d) => (
                <>
                  <Badge color={STATUS_COLOR[d.status]}>{STATUS_LABEL[d.status]}</Badge>
                  <Text size="xs">{deliveryWords(d)}</Text>
                  {d.attemptLog.length > 1 && (
                    <details data-testid="attempt-log">
                      <summary>
                        <Text span size="xs">
                          All {d.attemptLog.length} attempts
                        </Text>
                      </summary>
                      <Stack component="ol" gap={2} my={4} pl="md">
                        {d.attemptLog.map((a, i) => (
                          <li key={i}>
                            <Text size="xs">
                              {formatDateTime(a.at, tz)}: {attemptWords(a)}
                            </Text>
                          </li>
                        ))}
                      </Stack>
                    </details>
                  )}
                </>
              ),
            },
            {
              header: 'Last attempt',
              cell: (d) => (
                <>
                  <Text size="sm">{d.lastAttemptAt ? formatRelative(d.lastAttemptAt) : '—'}</Text>
                  <Text size="xs" c="dimmed">
                    {formatDateTime(d.lastAttemptAt ?? d.createdAt, tz)}
                  </Text>
                </>
              ),
            },
            {
              header: 'Answer',
              td: () => ({ maw: 280 }),
              cell: (d) =>
                d.responseExcerpt ? (
                  <Code block style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-all', maxHeight: 96, overflow: 'auto' }}>
                    {d.responseExcerpt}
                  </Code>
                ) : (
                  <Text size="sm">—</Text>
                ),
            },
            manage && {
              header: (
                <Text span size="sm" fw={700}>
                  Again
                </Text>
              ),
              cell: (d) => (
                <Button
                  size="compact-sm"
                  variant="default"
                  aria-label={`Redeliver event ${d.eventId}`}
                  onClick={() => void redeliver(`/v1/webhooks/${id}/deliveries/${d.id}/redeliver`, `Event ${d.eventId}`)}
                >
                  Redeliver
                </Button>
              ),
            },
          ]}
        />
      )}
    </Stack>
  );
}

export function WebhookPage() {
  return (
    <Allowed permission="webhooks.read" what="Webhooks">
      <WebhookScreen />
    </Allowed>
  );
}
