/** The task's comments, oldest first, and a box to add one (those who work tasks). */
import { useState } from 'react';
import { Button, Stack, Text, Textarea } from '@mantine/core';
import { useSession } from '../../api/session';
import type { TaskDetail } from '../../lib/api-types';
import { formatDateTime } from '../../lib/time';
import { useTaskAction } from './useTaskAction';

export function Comments({ task, name, canComment }: { task: TaskDetail; name: string; canComment: boolean }) {
  const tz = useSession().tenant.timeZone;
  const [text, setText] = useState('');
  const action = useTaskAction(task);
  return (
    <Stack gap="sm">
      {task.comments.length === 0 && <Text c="dimmed">No comments yet.</Text>}
      {task.comments.map((c) => (
        <div key={c.id}>
          <Text size="xs" c="dimmed">
            {c.author?.name ?? 'System'} · {formatDateTime(c.at, tz)}
          </Text>
          <Text style={{ whiteSpace: 'pre-wrap' }}>{c.text}</Text>
        </div>
      ))}
      {canComment && (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            if (text.trim())
              action.mutate(
                { path: '/comments', body: { text: text.trim() }, done: `${name}: comment added.` },
                { onSuccess: () => setText('') },
              );
          }}
        >
          <Stack gap="xs">
            <Textarea label="Add a comment" value={text} onChange={(e) => setText(e.currentTarget.value)} autosize minRows={2} />
            <Button type="submit" variant="default" disabled={!text.trim()} loading={action.isPending} w="fit-content">
              Add comment
            </Button>
          </Stack>
        </form>
      )}
    </Stack>
  );
}
