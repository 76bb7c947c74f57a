/** A task's markers in the queue table: Error, Urgent, who holds it, Overdue, and "Left this list" for a frozen row gone from it. */
import { Badge, Group } from '@mantine/core';
import type { Task } from '../../lib/api-types';

export function TaskFlags({ task, gone, now = new Date() }: { task: Task; gone?: boolean; now?: Date }) {
  return (
    <Group gap={4} wrap="nowrap">
      {task.error && (
        <Badge color="red" size="sm">
          Error
        </Badge>
      )}
      {task.urgent && (
        <Badge color="grape" size="sm">
          Urgent
        </Badge>
      )}
      {task.lockedBy && (
        <Badge color="blue" size="sm" variant="light" title={`Locked by ${task.lockedBy.name}`}>
          {task.lockedBy.type === 'mate' ? 'Mate working' : `Open by ${task.lockedBy.name}`}
        </Badge>
      )}
      {task.deadline && new Date(task.deadline) < now && task.queue !== 'Solved' && (
        <Badge color="red" size="sm" variant="outline">
          Overdue
        </Badge>
      )}
      {gone && (
        <Badge color="gray" size="sm" variant="outline">
          Left this list
        </Badge>
      )}
    </Group>
  );
}
