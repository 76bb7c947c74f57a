/** One endpoint's delivery log: status, duration, the answer's excerpt; redeliver one or every failed one. */
import { useState } from 'react';
import { Badge, Breadcrumbs, Button, Card, Code, Group, SegmentedControl, Stack, Table, Text, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useQueryClient } from '@tanstack/react-query';
import { api, errorMessage } from '../../api/http';
import { useSession } from '../../api/session';
import { useDeliveries, useWebhook, type Delivery } from '../../api/admin';
import { adminWebhookRoute } from '../../router';
import { attemptWords, deliveryWords } from '../../lib/admin';
import { can } from '../../lib/roles';
import { formatDateTime, formatRelative } from '../../lib/time';
import { Allowed } from '../../components/admin/NotAllowed';
import { Problem } from '../../components/admin/Confirm';
import { AnchorLink } from '../../components/links';
import { Empty } from '../../components/Empty';
import { ErrorAlert } from '../../components/ErrorAlert';

const STATUS_COLOR: Record<Delivery['status'], string> = { delivered: 'teal', failed: 'red', pending: 'blue' };
const STATUS_LABEL: Record<Delivery['status'], string> = { delivered: 'Delivered', failed: 'Failed', pending: 'Pending' };

function WebhookScreen() {
  const { webhookId } = adminWebhookRoute.useParams();
  const id = Number(webhookId);
  const session = useSession();
  const tz = session.tenant.timeZone;
  const manage = can(session.user.role, 'webhooks.manage');
  const [status, setStatus] = useState<'all' | Delivery['status']>('all');
  const hook = useWebhook(id);
  const deliveries = useDeliveries(id, status === 'all' ? undefined : status);
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
      void qc.invalidateQueries({ queryKey: ['admin', 'webhooks', id, 'deliveries'] });
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
      ) : deliveries.data.length === 0 ? (
        <Empty title={status === 'all' ? 'No deliveries yet' : `No ${STATUS_LABEL[status].toLowerCase()} deliveries`}>
          Events the endpoint asks for show here as they are sent.
        </Empty>
      ) : (
        <Card withBorder p={0}>
          <Table.ScrollContainer minWidth={760}>
            <Table verticalSpacing="sm" data-testid="deliveries-table">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Event</Table.Th>
                  <Table.Th>Status</Table.Th>
                  <Table.Th>Last attempt</Table.Th>
                  <Table.Th>Answer</Table.Th>
                  {manage && (
                    <Table.Th>
                      <Text span size="sm" fw={700}>
                        Again
                      </Text>
                    </Table.Th>
                  )}
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {deliveries.data.map((d) => (
                  <Table.Tr key={d.id} data-testid="delivery-row">
                    <Table.Td>
                      <Text size="sm" ff="monospace">
                        {d.eventType}
                      </Text>
                      <Text size="xs" c="dimmed">
                        Event {d.eventId}
                      </Text>
                    </Table.Td>
                    <Table.Td>
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
                    </Table.Td>
                    <Table.Td>
                      <Text size="sm">{d.lastAttemptAt ? formatRelative(d.lastAttemptAt) : '—'}</Text>
                      <Text size="xs" c="dimmed">
                        {formatDateTime(d.lastAttemptAt ?? d.createdAt, tz)}
                      </Text>
                    </Table.Td>
                    <Table.Td maw={280}>
                      {d.responseExcerpt ? (
                        <Code block style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-all', maxHeight: 96, overflow: 'auto' }}>
                          {d.responseExcerpt}
                        </Code>
                      ) : (
                        <Text size="sm">—</Text>
                      )}
                    </Table.Td>
                    {manage && (
                      <Table.Td>
                        <Button
                          size="compact-sm"
                          variant="default"
                          aria-label={`Redeliver event ${d.eventId}`}
                          onClick={() => void redeliver(`/v1/webhooks/${id}/deliveries/${d.id}/redeliver`, `Event ${d.eventId}`)}
                        >
                          Redeliver
                        </Button>
                      </Table.Td>
                    )}
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        </Card>
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
