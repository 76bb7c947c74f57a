/**
 * The task's reason: "Reason" (red with the Error flag) while the task is where the hand-back put
 * it, "Previous reason" in grey once it has been moved on (lib/task-reason.ts), with who gave it and when.
 */
import { Alert, Text } from '@mantine/core';
import type { TaskDetail } from '../../lib/api-types';
import { reasonState } from '../../lib/task-reason';
import { formatDateTime } from '../../lib/time';

export function ReasonBox({ task, tz }: { task: TaskDetail; tz: string }) {
  const r = reasonState(task);
  if (!r) return null;
  const given = r.given ? `Given by ${r.given.actor.name}, ${formatDateTime(r.given.at, tz)}` : null;
  return (
    <Alert
      color={r.current ? (task.error ? 'red' : 'blue') : 'gray'}
      title={r.current ? 'Reason' : 'Previous reason'}
      data-testid="task-reason"
      data-current={String(r.current)}
    >
      <Text size="sm" style={{ whiteSpace: 'pre-wrap', overflowWrap: 'anywhere' }}>
        {r.text}
      </Text>
      {(given || !r.current) && (
        <Text size="xs" c="dimmed" mt={4}>
          {given}
          {given && !r.current ? '; ' : ''}
          {r.current ? '' : `${given ? 't' : 'T'}he task has been moved on since.`}
        </Text>
      )}
    </Alert>
  );
}
