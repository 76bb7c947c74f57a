/**
 * One task: named by its key field values (lib/task-name.ts) with its id beside them to copy; its
 * reason, lock, actions, fields, comments, history, details and KPI events. On a phone the actions
 * come right after the header (TaskPage.module.css).
 */
import { useEffect } from 'react';
import { Alert, Badge, Breadcrumbs, Button, Card, CopyButton, Group, Skeleton, Stack, Text, Title } from '@mantine/core';
import { getRouteApi } from '@tanstack/react-router';
import { useLiveQuery } from '../../api/live';
import { processQuery, taskQuery } from '../../api/queries';
import { useSession } from '../../api/session';
import { can } from '../../lib/roles';
import { queueLabel } from '../../lib/queues';
import { taskName } from '../../lib/task-name';
import { formatDateTime, formatRelative } from '../../lib/time';
import { AnchorLink } from '../../components/links';
import { ErrorAlert } from '../../components/ErrorAlert';
import { Actions } from './Actions';
import { Comments } from './Comments';
import { Details } from './Details';
import { History } from './History';
import { ReasonBox } from './ReasonBox';
import { TaskFields } from './TaskFields';
import { useTaskAction } from './useTaskAction';
import classes from './TaskPage.module.css';

const route = getRouteApi('/_app/tasks/$taskId');

/** The browser tab's title while the page is open. */
function useDocumentTitle(title: string | null) {
  useEffect(() => {
    if (!title) return;
    const before = document.title;
    document.title = title;
    return () => {
      document.title = before;
    };
  }, [title]);
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
  const name = task.data && process.data ? taskName(task.data, process.data.fields, tz) : null;
  useDocumentTitle(name && `${name} · ${process.data!.name || process.data!.key} · Queuemate`);

  if (task.isPending || (task.isSuccess && process.isPending)) return <Skeleton h={400} />;
  if (task.isError) return <ErrorAlert error={task.error} title={`Could not load task ${taskId}`} retry={() => void task.refetch()} />;
  const t = task.data;
  const processName = process.data ? process.data.name || process.data.key : 'Process';
  const shown = name ?? `Task ${t.id}`;

  return (
    <Stack gap="md">
      <nav aria-label="Breadcrumbs">
        <Breadcrumbs style={{ flexWrap: 'wrap', rowGap: 4 }}>
          <AnchorLink to="/">Overview</AnchorLink>
          <AnchorLink to="/processes/$processId/queue" params={{ processId: String(t.processId) }} search={{ queue: t.queue }}>
            {processName}
          </AnchorLink>
          <Text style={{ overflowWrap: 'anywhere' }}>{shown}</Text>
        </Breadcrumbs>
      </nav>
      <Stack gap={4}>
        <Group gap="sm" wrap="wrap">
          <Title order={1} size="h2" style={{ overflowWrap: 'anywhere' }}>
            {shown}
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
        <Group gap={6} data-testid="task-id">
          <Text size="sm" c="dimmed">
            Task id
          </Text>
          <Text size="sm" ff="monospace">
            {t.id}
          </Text>
          <CopyButton value={String(t.id)}>
            {({ copied, copy }) => (
              <Button size="compact-xs" variant="subtle" onClick={copy} aria-label={copied ? 'Copied the task id' : 'Copy the task id'}>
                {copied ? 'Copied' : 'Copy'}
              </Button>
            )}
          </CopyButton>
        </Group>
      </Stack>
      <ReasonBox task={t} tz={tz} />
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
                onClick={() => unlock.mutate({ path: '/unlock', done: `${shown}: unlocked.` })}
                loading={unlock.isPending}
              >
                Unlock
              </Button>
            )}
          </Group>
        </Alert>
      )}
      <div className={classes.layout} data-actions={String(canWork)}>
        {canWork && (
          <Card withBorder className={classes.actions}>
            <Title order={2} size="h4" mb="sm">
              Actions
            </Title>
            <Actions task={t} name={shown} />
          </Card>
        )}
        <Stack className={classes.main}>
          <Card withBorder>
            <Title order={2} size="h4" mb="sm">
              Fields
            </Title>
            <TaskFields task={t} name={shown} editable={canWork && t.queue !== 'Solved'} />
          </Card>
          <Card withBorder>
            <Title order={2} size="h4" mb="sm">
              Comments
            </Title>
            <Comments task={t} name={shown} canComment={canWork} />
          </Card>
          <Card withBorder>
            <Title order={2} size="h4" mb="sm">
              History
            </Title>
            <History rows={t.history} tz={tz} />
          </Card>
        </Stack>
        <div className={classes.side}>
          <Details task={t} tz={tz} />
        </div>
      </div>
    </Stack>
  );
}
