/** A task's history, oldest first: what happened, who did it and when, the queues, and a reason on the row that gave it. */
import { Text, Timeline } from '@mantine/core';
import type { HistoryRow } from '../../lib/api-types';
import { queueLabel } from '../../lib/queues';
import { givesReason } from '../../lib/task-reason';
import { formatDateTime } from '../../lib/time';

/** The server's history actions (task_history.action) in words, by their lower-case form. */
const ACTION_WORDS: Record<string, string> = {
  created: 'Created',
  'created and taken': 'Created and taken by a Mate',
  taken: 'Taken by a Mate',
  solved: 'Solved',
  manual: 'Sent to Manual',
  error: 'Error',
  retry: 'Retry',
  moved: 'Moved',
  updated: 'Fields changed',
  approved: 'Approved',
  rejected: 'Rejected',
  'error cleared': 'Error cleared',
  unlocked: 'Unlocked',
  reopened: 'Reopened',
  deleted: 'Deleted',
  commented: 'Comment',
  'urgent changed': 'Urgent changed',
  'lock expired': 'Lock expired',
  'lock extended': 'Lock extended',
};

export function actionWords(action: string): string {
  return ACTION_WORDS[action.toLowerCase()] ?? action.replace(/[_.]/g, ' ').replace(/^./, (c) => c.toUpperCase());
}

/** Where the row left the task: "Ready → Manual (with Error)", or "In Ready" when the queue stayed (a take, a comment). */
export function placeWords(h: Pick<HistoryRow, 'fromQueue' | 'toQueue' | 'error'>): string | null {
  if (!h.fromQueue && !h.toQueue) return null;
  const to = `${h.toQueue ? queueLabel(h.toQueue) : '—'}${h.error ? ' (with Error)' : ''}`;
  if (h.fromQueue === h.toQueue) return `In ${to}`;
  return `${h.fromQueue ? queueLabel(h.fromQueue) : '—'} → ${to}`;
}

export function History({ rows, tz }: { rows: HistoryRow[]; tz: string }) {
  if (!rows.length) return <Text c="dimmed">No history yet.</Text>;
  const gives = givesReason(rows);
  return (
    <Timeline bulletSize={14} lineWidth={2} active={rows.length} data-testid="task-history">
      {rows.map((h, i) => {
        const place = placeWords(h);
        return (
          <Timeline.Item key={h.id ?? i} title={actionWords(h.action)}>
            <Text size="sm">
              {h.actor?.name ?? 'System'} · {formatDateTime(h.at, tz)}
            </Text>
            {place && (
              <Text size="sm" c="dimmed">
                {place}
                {h.retryCount ? ` · retry ${h.retryCount}` : ''}
              </Text>
            )}
            {gives[i] && <Text size="sm">Reason: {h.reason}</Text>}
            {h.comment && (
              <Text size="sm" fs="italic" style={{ overflowWrap: 'anywhere' }}>
                “{h.comment}”
              </Text>
            )}
          </Timeline.Item>
        );
      })}
    </Timeline>
  );
}
