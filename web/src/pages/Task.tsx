/** One task: its fields (typed, editable where the role allows), reason, lock, actions, comments, history and KPI events. */
import { useEffect, useState } from 'react';
import {
  Alert,
  Badge,
  Breadcrumbs,
  Button,
  Card,
  Grid,
  Group,
  Modal,
  Select,
  SimpleGrid,
  Skeleton,
  Stack,
  Table,
  Text,
  Textarea,
  Timeline,
  Title,
} from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { getRouteApi, useNavigate } from '@tanstack/react-router';
import { useForm } from 'react-hook-form';
import { useLiveQuery } from '../api/live';
import { processesKey, processQuery, taskKey, taskQuery, tasksKey } from '../api/queries';
import { useSession } from '../api/session';
import { api, ApiError, errorMessage } from '../lib/http';
import type { FieldValue, HistoryRow, QueueName, Task, TaskDetail } from '../lib/api-types';
import { can } from '../lib/roles';
import { formatDateTime, formatDuration, formatRelative } from '../lib/time';
import { fieldLabel, formatValue, inputToStored, valueToInput } from '../lib/values';
import { FieldInput } from '../components/FieldInput';
import { AnchorLink } from '../components/links';
import { ErrorAlert } from '../components/ErrorAlert';
import { QUEUE_LABEL, QUEUES, queueLabel } from '../lib/queues';

const route = getRouteApi('/_app/tasks/$taskId');

type Action = { path: string; method?: 'POST' | 'PATCH' | 'DELETE'; body?: unknown; done: string };

function useTaskAction(task: Task | undefined) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (a: Action) => api<Task | undefined>(`/v1/tasks/${task!.id}${a.path}`, { method: a.method ?? 'POST', body: a.body }),
    onSuccess: (_r, a) => {
      notifications.show({ message: a.done });
      void qc.invalidateQueries({ queryKey: taskKey(task!.id) });
      void qc.invalidateQueries({ queryKey: tasksKey(task!.processId) });
      void qc.invalidateQueries({ queryKey: processesKey() });
    },
    onError: (err) => notifications.show({ color: 'red', title: 'Not done', message: errorMessage(err) }),
  });
}

const ACTION_WORDS: Record<string, string> = {
  created: 'Created',
  create: 'Created',
  taken: 'Taken by a Mate',
  take: 'Taken by a Mate',
  solved: 'Solved',
  manual: 'Sent to Manual',
  error: 'Error',
  retry: 'Retry',
  moved: 'Moved',
  move: 'Moved',
  updated: 'Fields changed',
  update: 'Fields changed',
  approved: 'Approved',
  rejected: 'Rejected',
  clear_error: 'Error resolved',
  clearError: 'Error resolved',
  unlocked: 'Unlocked',
  reopened: 'Reopened',
  deleted: 'Deleted',
  commented: 'Comment',
  lock_expired: 'Lock expired',
};

function words(action: string): string {
  return ACTION_WORDS[action] ?? action.replace(/[_.]/g, ' ').replace(/^./, (c) => c.toUpperCase());
}

function who(h: HistoryRow): string {
  return h.actor?.name ?? 'System';
}

function History({ rows, tz }: { rows: HistoryRow[]; tz: string }) {
  if (!rows.length) return <Text c="dimmed">No history yet.</Text>;
  return (
    <Timeline bulletSize={14} lineWidth={2} active={rows.length}>
      {rows.map((h, i) => (
        <Timeline.Item key={h.id ?? i} title={words(h.action)}>
          <Text size="sm">
            {who(h)} · <span title={formatDateTime(h.at, tz)}>{formatDateTime(h.at, tz)}</span>
          </Text>
          {(h.fromQueue || h.toQueue) && (
            <Text size="sm" c="dimmed">
              {h.fromQueue ? queueLabel(h.fromQueue) : '—'} → {h.toQueue ? queueLabel(h.toQueue) : '—'}
              {h.error ? ' (with Error)' : ''}
              {h.retryCount ? ` · retry ${h.retryCount}` : ''}
            </Text>
          )}
          {h.reason && <Text size="sm">Reason: {h.reason}</Text>}
          {h.comment && (
            <Text size="sm" fs="italic">
              “{h.comment}”
            </Text>
          )}
        </Timeline.Item>
      ))}
    </Timeline>
  );
}

function Fields({ task, editable }: { task: TaskDetail; editable: boolean }) {
  const session = useSession();
  const tz = session.tenant.timeZone;
  const process = useLiveQuery(processQuery(task.processId));
  const qc = useQueryClient();
  const fields = process.data?.fields ?? [];
  const toForm = () => Object.fromEntries(fields.map((f) => [f.name, valueToInput(task.data[f.name], f, tz)]));
  const form = useForm<Record<string, unknown>>({ values: toForm() as Record<string, unknown> });
  const [failure, setFailure] = useState<string | null>(null);

  if (process.isPending) return <Skeleton h={160} />;
  if (!fields.length)
    return (
      <SimpleGrid cols={{ base: 1, sm: 2 }}>
        {Object.entries(task.data).map(([k, v]) => (
          <div key={k}>
            <Text size="xs" c="dimmed">
              {k}
            </Text>
            <Text>{formatValue(v, undefined, tz)}</Text>
          </div>
        ))}
      </SimpleGrid>
    );

  const save = form.handleSubmit(async (values) => {
    setFailure(null);
    const data: Record<string, FieldValue> = {};
    for (const f of fields) if (form.getFieldState(f.name).isDirty) data[f.name] = inputToStored(values[f.name], f, tz);
    if (!Object.keys(data).length) return;
    try {
      await api(`/v1/tasks/${task.id}`, { method: 'PATCH', body: { data } });
      notifications.show({ message: 'Saved.' });
      await qc.invalidateQueries({ queryKey: taskKey(task.id) });
      void qc.invalidateQueries({ queryKey: tasksKey(task.processId) });
    } catch (err) {
      if (err instanceof ApiError && err.fieldErrors.length) {
        for (const e of err.fieldErrors) {
          const f = fields.find((x) => x.name.toLowerCase() === e.field?.toLowerCase());
          if (f) form.setError(f.name, { message: e.message });
        }
      }
      setFailure(errorMessage(err));
    }
  });

  return (
    <form onSubmit={save} noValidate>
      <Stack>
        {failure && (
          <Alert color="red" role="alert">
            {failure}
          </Alert>
        )}
        <SimpleGrid cols={{ base: 1, sm: 2 }}>
          {fields.map((f) =>
            editable ? (
              <FieldInput key={f.name} field={f} control={form.control} />
            ) : (
              <div key={f.name}>
                <Text size="xs" c="dimmed">
                  {fieldLabel(f)}
                </Text>
                <Text data-testid={`value-${f.name}`}>{formatValue(task.data[f.name], f, tz) || '—'}</Text>
              </div>
            ),
          )}
        </SimpleGrid>
        {editable && (
          <Group>
            <Button type="submit" loading={form.formState.isSubmitting} disabled={!form.formState.isDirty}>
              Save fields
            </Button>
            {form.formState.isDirty && (
              <Button variant="subtle" onClick={() => form.reset()}>
                Undo changes
              </Button>
            )}
          </Group>
        )}
      </Stack>
    </form>
  );
}

function Actions({ task }: { task: TaskDetail }) {
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
            onClick={() => run({ path: '/move', body: withComment({ queue: 'Solved' }), done: 'Task solved.' })}
            loading={busy}
            color="teal"
          >
            Solve
          </Button>
        )}
        {task.error && (
          <Button variant="light" onClick={() => run({ path: '/clear-error', done: 'Error resolved.' })} loading={busy}>
            Resolve error
          </Button>
        )}
        {task.queue === 'NeedsApproval' && (
          <>
            <Button variant="light" onClick={() => run({ path: '/approve', done: 'Approved: the task is Ready.' })} loading={busy}>
              Approve
            </Button>
            <Button
              variant="light"
              color="orange"
              onClick={() => run({ path: '/reject', done: 'Rejected: the task is in Manual.' })}
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
              onClick={() => run({ path: '/reopen', body: withComment({ queue: 'Ready' }), done: 'Reopened into Ready.' })}
              loading={busy}
            >
              Reopen in Ready
            </Button>
            <Button
              variant="light"
              onClick={() => run({ path: '/reopen', body: withComment({ queue: 'Manual' }), done: 'Reopened into Manual.' })}
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
              done: task.urgent ? 'No longer urgent.' : 'Marked urgent.',
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
              target && run({ path: '/move', body: withComment({ queue: target }), done: `Moved to ${QUEUE_LABEL[target as QueueName]}.` })
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
          <Modal opened={confirmDelete} onClose={() => setConfirmDelete(false)} title={`Delete task ${task.id}?`} centered>
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
                    { path: '', method: 'DELETE', done: `Task ${task.id} deleted.` },
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

function Comments({ task, canComment }: { task: TaskDetail; canComment: boolean }) {
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
              action.mutate({ path: '/comments', body: { text: text.trim() }, done: 'Comment added.' }, { onSuccess: () => setText('') });
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

export function TaskPage() {
  const { taskId } = route.useParams();
  const id = Number(taskId);
  const task = useLiveQuery(taskQuery(id));
  const session = useSession();
  const tz = session.tenant.timeZone;
  const canWork = can(session.user.role, 'tasks.work');
  const process = useLiveQuery(processQuery(task.data?.processId ?? 0));
  const unlock = useTaskAction(task.data);

  if (task.isPending) return <Skeleton h={400} />;
  if (task.isError) return <ErrorAlert error={task.error} title={`Could not load task ${taskId}`} retry={() => void task.refetch()} />;
  const t = task.data;
  const processName = process.data ? process.data.name || process.data.key : 'Process';

  return (
    <Stack gap="md">
      <Breadcrumbs>
        <AnchorLink to="/">Overview</AnchorLink>
        <AnchorLink to="/processes/$processId/queue" params={{ processId: String(t.processId) }} search={{ queue: t.queue }}>
          {processName}
        </AnchorLink>
        <Text>Task {t.id}</Text>
      </Breadcrumbs>
      <Group gap="sm">
        <Title order={1} size="h2">
          Task {t.id}
        </Title>
        <Badge size="lg" variant="light" data-testid="task-queue">
          {queueLabel(t.queue)}
        </Badge>
        {t.error && (
          <Badge size="lg" color="red">
            Error
          </Badge>
        )}
        {t.urgent && (
          <Badge size="lg" color="grape">
            Urgent
          </Badge>
        )}
      </Group>
      {t.reason && (
        <Alert color={t.error ? 'red' : 'blue'} title="Reason">
          {t.reason}
        </Alert>
      )}
      {t.lockedBy && (
        <Alert
          color="yellow"
          title={t.lockedBy.type === 'mate' ? 'A Mate is working on this task' : `${t.lockedBy.name} has this task open`}
        >
          <Group justify="space-between">
            <Text size="sm">
              Locked by {t.lockedBy.name}
              {t.lockedUntil ? ` until ${formatDateTime(t.lockedUntil, tz)} (${formatRelative(t.lockedUntil)})` : ''}.
            </Text>
            {canWork && (
              <Button
                size="xs"
                variant="white"
                onClick={() => unlock.mutate({ path: '/unlock', done: 'Unlocked.' })}
                loading={unlock.isPending}
              >
                Unlock
              </Button>
            )}
          </Group>
        </Alert>
      )}
      <Grid>
        <Grid.Col span={{ base: 12, md: 8 }}>
          <Stack>
            <Card withBorder>
              <Title order={2} size="h4" mb="sm">
                Fields
              </Title>
              <Fields task={t} editable={canWork && t.queue !== 'Solved'} />
            </Card>
            <Card withBorder>
              <Title order={2} size="h4" mb="sm">
                Comments
              </Title>
              <Comments task={t} canComment={canWork} />
            </Card>
            <Card withBorder>
              <Title order={2} size="h4" mb="sm">
                History
              </Title>
              <History rows={t.history} tz={tz} />
            </Card>
          </Stack>
        </Grid.Col>
        <Grid.Col span={{ base: 12, md: 4 }}>
          <Stack>
            {canWork && (
              <Card withBorder>
                <Title order={2} size="h4" mb="sm">
                  Actions
                </Title>
                <Actions task={t} />
              </Card>
            )}
            <Card withBorder>
              <Title order={2} size="h4" mb="sm">
                Details
              </Title>
              <Table variant="vertical" layout="fixed" withRowBorders={false}>
                <Table.Tbody>
                  <Table.Tr>
                    <Table.Th w={130}>Created</Table.Th>
                    <Table.Td>{formatDateTime(t.createdAt, tz)}</Table.Td>
                  </Table.Tr>
                  <Table.Tr>
                    <Table.Th>Changed</Table.Th>
                    <Table.Td>{formatDateTime(t.updatedAt, tz)}</Table.Td>
                  </Table.Tr>
                  <Table.Tr>
                    <Table.Th>Active from</Table.Th>
                    <Table.Td>{formatDateTime(t.activationDate, tz)}</Table.Td>
                  </Table.Tr>
                  <Table.Tr>
                    <Table.Th>Deadline</Table.Th>
                    <Table.Td>{t.deadline ? formatDateTime(t.deadline, tz) : 'None'}</Table.Td>
                  </Table.Tr>
                  <Table.Tr>
                    <Table.Th>Retries</Table.Th>
                    <Table.Td>{t.retryCount}</Table.Td>
                  </Table.Tr>
                </Table.Tbody>
              </Table>
            </Card>
            <Card withBorder>
              <Title order={2} size="h4" mb="sm">
                KPI events
              </Title>
              {t.kpiEvents.length === 0 ? (
                <Text c="dimmed">None yet.</Text>
              ) : (
                <Table>
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>When</Table.Th>
                      <Table.Th>Outcome</Table.Th>
                      <Table.Th>Entries</Table.Th>
                      <Table.Th>Saved</Table.Th>
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {t.kpiEvents.map((k, i) => (
                      <Table.Tr key={i}>
                        <Table.Td>{formatDateTime(k.at, tz)}</Table.Td>
                        <Table.Td>{k.outcome ?? ''}</Table.Td>
                        <Table.Td>{k.entries}</Table.Td>
                        <Table.Td>{formatDuration(k.secondsSaved)}</Table.Td>
                      </Table.Tr>
                    ))}
                  </Table.Tbody>
                </Table>
              )}
            </Card>
          </Stack>
        </Grid.Col>
      </Grid>
    </Stack>
  );
}
