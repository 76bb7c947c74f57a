/** What a person may do to the task: solve, resolve the error, approve or reject, reopen, urgent, move, delete; each notification names the task. */
import { useEffect, useState } from 'react';
import { Button, Group, Modal, Select, Stack, Text, Textarea } from '@mantine/core';
import { useNavigate } from '@tanstack/react-router';
import { useSession } from '../../api/session';
import type { QueueName, TaskDetail } from '../../lib/api-types';
import { can } from '../../lib/roles';
import { QUEUE_LABEL, QUEUES } from '../../lib/queues';
import { useTaskAction, type Action } from './useTaskAction';

export function Actions({ task, name }: { task: TaskDetail; name: string }) {
  const session = useSession();
  const role = session.user.role;
  const action = useTaskAction(task);
  const navigate = useNavigate();
  const [target, setTarget] = useState<string | null>(null);
  const [comment, setComment] = useState('');
  const [confirmDelete, setConfirmDelete] = useState(false);
  useEffect(() => setTarget(null), [task.queue]);
  const run = (a: Action) =>
    action.mutate(
      { ...a, body: a.body ?? (comment.trim() ? { comment: comment.trim() } : undefined) },
      { onSuccess: () => setComment('') },
    );
  const busy = action.isPending;
  const withComment = (body: Record<string, unknown>) => (comment.trim() ? { ...body, comment: comment.trim() } : body);

  return (
    <Stack gap="sm">
      <Textarea
        label="Comment for the action (optional)"
        value={comment}
        onChange={(e) => setComment(e.currentTarget.value)}
        autosize
        minRows={1}
        maxRows={4}
      />
      <Group gap="xs">
        {task.queue !== 'Solved' && (
          <Button
            onClick={() => run({ path: '/move', body: withComment({ queue: 'Solved' }), done: `${name} solved.` })}
            loading={busy}
            color="teal"
          >
            Solve
          </Button>
        )}
        {task.error && (
          <Button variant="light" onClick={() => run({ path: '/clear-error', done: `${name}: Error resolved.` })} loading={busy}>
            Resolve error
          </Button>
        )}
        {task.queue === 'NeedsApproval' && (
          <>
            <Button variant="light" onClick={() => run({ path: '/approve', done: `${name} approved: it is Ready.` })} loading={busy}>
              Approve
            </Button>
            <Button
              variant="light"
              color="orange"
              onClick={() => run({ path: '/reject', done: `${name} rejected: it is in Manual.` })}
              loading={busy}
            >
              Reject
            </Button>
          </>
        )}
        {task.queue === 'Solved' && (
          <>
            <Button
              variant="light"
              onClick={() => run({ path: '/reopen', body: withComment({ queue: 'Ready' }), done: `${name} reopened into Ready.` })}
              loading={busy}
            >
              Reopen in Ready
            </Button>
            <Button
              variant="light"
              onClick={() => run({ path: '/reopen', body: withComment({ queue: 'Manual' }), done: `${name} reopened into Manual.` })}
              loading={busy}
            >
              Reopen in Manual
            </Button>
          </>
        )}
        <Button
          variant="default"
          onClick={() =>
            run({
              path: '',
              method: 'PATCH',
              body: withComment({ urgent: !task.urgent }),
              done: task.urgent ? `${name} is no longer urgent.` : `${name} is marked urgent.`,
            })
          }
          loading={busy}
        >
          {task.urgent ? 'Not urgent' : 'Mark urgent'}
        </Button>
      </Group>
      {task.queue !== 'Solved' && (
        <Group gap="xs" align="flex-end">
          <Select
            label="Move to"
            placeholder="Choose a queue"
            data={QUEUES.filter((q) => q !== task.queue || task.error).map((q) => ({ value: q, label: QUEUE_LABEL[q] }))}
            value={target}
            onChange={setTarget}
            w={200}
          />
          <Button
            variant="default"
            disabled={!target}
            loading={busy}
            onClick={() =>
              target &&
              run({ path: '/move', body: withComment({ queue: target }), done: `${name} moved to ${QUEUE_LABEL[target as QueueName]}.` })
            }
          >
            Move
          </Button>
        </Group>
      )}
      {can(role, 'tasks.delete') && (
        <>
          <Button color="red" variant="subtle" onClick={() => setConfirmDelete(true)} w="fit-content">
            Delete task
          </Button>
          <Modal opened={confirmDelete} onClose={() => setConfirmDelete(false)} title={`Delete ${name}?`} centered>
            <Text mb="md">The task leaves its queue. The deletion is logged.</Text>
            <Group justify="flex-end">
              <Button variant="default" onClick={() => setConfirmDelete(false)}>
                Cancel
              </Button>
              <Button
                color="red"
                loading={busy}
                onClick={() =>
                  action.mutate(
                    { path: '', method: 'DELETE', done: `${name} deleted.` },
                    {
                      onSuccess: () =>
                        void navigate({
                          to: '/processes/$processId/queue',
                          params: { processId: String(task.processId) },
                          search: { queue: task.queue },
                        }),
                    },
                  )
                }
              >
                Delete
              </Button>
            </Group>
          </Modal>
        </>
      )}
    </Stack>
  );
}
