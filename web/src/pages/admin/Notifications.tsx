/** Notifications: Failures reported by Mates, stops by errors, disabled webhooks; read/unread (everyone reads; agents and up mark). */
import { useState } from 'react';
import { Badge, Button, Card, Group, SegmentedControl, Select, Stack, Text, Title } from '@mantine/core';
import { useQueryClient } from '@tanstack/react-query';
import { useLiveQuery } from '../../api/live';
import { notificationsKey, notificationsQuery, processesQuery } from '../../api/queries';
import { useSession } from '../../api/session';
import { api, errorMessage } from '../../lib/http';
import type { Notification } from '../../lib/api-types';
import { notificationKind } from '../../lib/admin';
import { can } from '../../lib/roles';
import { formatDateTime, formatRelative } from '../../lib/time';
import { Problem } from '../../components/admin/Confirm';
import { AnchorLink } from '../../components/links';
import { Empty } from '../../components/Empty';
import { ErrorAlert } from '../../components/ErrorAlert';

export function NotificationsPage() {
  const session = useSession();
  const tz = session.tenant.timeZone;
  const mark = can(session.user.role, 'notifications.manage');
  const [show, setShow] = useState<'unread' | 'all'>('all');
  const [processId, setProcessId] = useState<number | undefined>(undefined);
  // without the stream a 30 s poll is enough here (the views poll every 2 s for counts)
  const list = useLiveQuery(notificationsQuery({ unread: show === 'unread', processId }), 30_000);
  const processes = useLiveQuery(processesQuery());
  const qc = useQueryClient();
  const [problem, setProblem] = useState<string | null>(null);
  const processName = (id: number | null) => (id === null ? null : (processes.data?.find((p) => p.id === id)?.name ?? `Process ${id}`));

  const act = async (path: string, body: unknown) => {
    setProblem(null);
    try {
      await api(path, { method: 'POST', body });
    } catch (err) {
      setProblem(errorMessage(err));
    } finally {
      void qc.invalidateQueries({ queryKey: notificationsKey() });
    }
  };

  const item = (n: Notification) => {
    const kind = notificationKind(n.kind);
    const name = processName(n.processId);
    const unread = n.readAt === null;
    return (
      <Card
        key={n.id}
        withBorder
        component="li"
        data-testid={`notification-${n.id}`}
        data-unread={unread}
        style={unread ? { borderLeft: '4px solid var(--mantine-color-blue-filled)' } : undefined}
      >
        <Group justify="space-between" align="flex-start" wrap="wrap" gap="xs">
          <Stack gap={4} style={{ flex: '1 1 240px' }}>
            <Group gap="xs">
              {unread && (
                <Badge color="blue" variant="filled" size="sm">
                  Unread
                </Badge>
              )}
              <Badge color={kind.color} variant="light">
                {kind.label}
              </Badge>
              {name && n.processId !== null && (
                <AnchorLink
                  to="/processes/$processId/queue"
                  params={{ processId: String(n.processId) }}
                  search={{ queue: 'Manual' }}
                  size="sm"
                >
                  {name}
                </AnchorLink>
              )}
            </Group>
            <Text style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-word' }}>{n.message || 'No message was given.'}</Text>
            <Text size="xs" c="dimmed">
              {formatDateTime(n.createdAt, tz)} ({formatRelative(n.createdAt)})
            </Text>
          </Stack>
          {mark && (
            <Button size="compact-sm" variant="default" onClick={() => void act(`/v1/notifications/${n.id}/read`, { read: unread })}>
              {unread ? 'Mark read' : 'Mark unread'}
            </Button>
          )}
        </Group>
      </Card>
    );
  };

  return (
    <Stack maw={900}>
      <Group justify="space-between">
        <Title order={1} size="h2">
          Notifications
        </Title>
        {mark && (list.data?.unread ?? 0) > 0 && (
          <Button variant="light" onClick={() => void act('/v1/notifications/read-all', processId === undefined ? {} : { processId })}>
            {processId === undefined ? 'Mark all read' : `Mark all of ${processName(processId)} read`}
          </Button>
        )}
      </Group>
      <Group align="flex-end">
        <Select
          label="Process"
          placeholder="Every process"
          data={(processes.data ?? []).map((p) => ({ value: String(p.id), label: p.name || p.key }))}
          value={processId === undefined ? null : String(processId)}
          onChange={(v) => setProcessId(v ? Number(v) : undefined)}
          clearable
          searchable
          w={240}
        />
        <SegmentedControl
          aria-label="Show notifications"
          value={show}
          onChange={(v) => setShow(v as 'unread' | 'all')}
          data={[
            { value: 'all', label: 'All' },
            { value: 'unread', label: `Unread${list.data ? ` (${list.data.unread})` : ''}` },
          ]}
        />
      </Group>
      <Problem message={problem} onClose={() => setProblem(null)} />
      {list.isPending ? (
        <Text>Loading notifications…</Text>
      ) : list.isError ? (
        <ErrorAlert error={list.error} title="Could not load the notifications" retry={() => list.refetch()} />
      ) : list.data.items.length === 0 ? (
        <Empty title={show === 'unread' ? 'Nothing unread' : 'No notifications'}>
          Failures reported by Mates, processes stopped by errors and disabled webhooks show here.
        </Empty>
      ) : (
        <Stack component="ul" gap="sm" p={0} m={0} style={{ listStyle: 'none' }} aria-label="Notifications">
          {list.data.items.map(item)}
        </Stack>
      )}
    </Stack>
  );
}
