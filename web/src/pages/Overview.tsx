/** One card per process: counts that open the queue, markers, the state in words, the Stop/Start switch and who is working. */
import { Badge, Card, Group, SimpleGrid, Skeleton, Stack, Switch, Text, Title, Tooltip, VisuallyHidden } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useLiveQuery } from '../api/live';
import { useGate } from '../api/mutations';
import { processesQuery } from '../api/queries';
import { useSession } from '../api/session';
import { errorMessage } from '../lib/http';
import type { ProcessSummary, QueueName } from '../lib/api-types';
import { describeProcessState, type Tone } from '../lib/process-state';
import { QUEUE_LABEL } from '../lib/queues';
import { formatDateTime, formatRelative } from '../lib/time';
import { can } from '../lib/roles';
import { Empty } from '../components/Empty';
import { AnchorLink, UnstyledLink } from '../components/links';
import { ErrorAlert } from '../components/ErrorAlert';
import classes from './Overview.module.css';

const TONE_COLOR: Record<Tone, string> = { running: 'teal', stopped: 'red', warning: 'orange', idle: 'gray' };

interface CountLink {
  label: string;
  value: number;
  queue: QueueName;
  error?: boolean;
  color?: string;
}

function countLinks(p: ProcessSummary): CountLink[] {
  const c = p.counts;
  return [
    { label: QUEUE_LABEL.Ready, value: c.ready, queue: 'Ready' },
    { label: QUEUE_LABEL.NeedsData, value: c.needsData, queue: 'NeedsData' },
    { label: QUEUE_LABEL.NeedsApproval, value: c.needsApproval, queue: 'NeedsApproval' },
    { label: QUEUE_LABEL.Manual, value: c.manual, queue: 'Manual', error: false },
    { label: 'Errors', value: c.error, queue: 'Manual', error: true, color: c.error > 0 ? 'red' : undefined },
    { label: QUEUE_LABEL.Solved, value: c.solved, queue: 'Solved' },
  ];
}

/** Large counts in a smaller type, so that a six- or seven-digit count stays inside its tile. */
const numberSize = (n: number) => (n >= 10_000_000 ? 'md' : n >= 100_000 ? 'lg' : 'xl');

/** What a tile's count is, for screen readers after its visible label: " — tasks in Invoices", " — 1 task with an error in Invoices". */
export function countMeaning(c: Pick<CountLink, 'value' | 'error'>, processName: string): string {
  return ` — ${c.value === 1 ? 'task' : 'tasks'}${c.error ? ' with an error' : ''} in ${processName}`;
}

function Markers({ p }: { p: ProcessSummary }) {
  const c = p.counts;
  const markers: [number, string, string][] = [
    [c.urgent, 'urgent', 'grape'],
    [c.overdue, 'overdue', 'red'],
    [c.locked, 'being worked on', 'blue'],
    [c.notActiveYet, 'not active yet', 'gray'],
  ];
  const shown = markers.filter(([n]) => n > 0);
  if (!shown.length) return null;
  return (
    <Group gap={6}>
      {shown.map(([n, label, color]) => (
        <Badge key={label} color={color} variant="light">
          {n} {label}
        </Badge>
      ))}
    </Group>
  );
}

function ProcessCard({ p }: { p: ProcessSummary }) {
  const session = useSession();
  const tz = session.tenant.timeZone;
  const gate = useGate();
  const state = describeProcessState(p, tz);
  const headingId = `process-${p.id}-name`;

  const toggle = (open: boolean) =>
    gate.mutate(
      { id: p.id, open },
      {
        onSuccess: () =>
          notifications.show({ message: open ? `${p.name} started: Mates may run.` : `${p.name} stopped: Mates are told not to run.` }),
        onError: (err) =>
          notifications.show({ color: 'red', title: `Could not ${open ? 'start' : 'stop'} ${p.name}`, message: errorMessage(err) }),
      },
    );

  return (
    <Card withBorder radius="md" padding="lg" component="article" aria-labelledby={headingId} data-testid={`process-${p.key}`}>
      <Group justify="space-between" align="flex-start" wrap="nowrap">
        <div>
          <Title order={2} size="h4" id={headingId}>
            <AnchorLink
              to="/processes/$processId/queue"
              params={{ processId: String(p.id) }}
              search={{ queue: 'Ready' }}
              c="var(--mantine-color-text)"
            >
              {p.name || p.key}
            </AnchorLink>
          </Title>
          <Text size="xs" c="dimmed" ff="monospace">
            {p.key}
          </Text>
        </div>
        <Badge color={TONE_COLOR[state.tone]} variant="filled" data-testid="state">
          {state.label}
        </Badge>
      </Group>

      <Stack gap={2} mt="xs">
        {state.sentences.map((s) => (
          <Text key={s} size="sm" c={state.tone === 'running' ? 'dimmed' : undefined}>
            {s}
          </Text>
        ))}
      </Stack>

      {p.tasksEnabled && (
        <div className={classes.counts}>
          {countLinks(p).map((c) => (
            <UnstyledLink
              key={c.label}
              to="/processes/$processId/queue"
              params={{ processId: String(p.id) }}
              search={c.error === undefined ? { queue: c.queue } : { queue: c.queue, error: c.error }}
              className={classes.count}
              data-testid={`count-${c.label}`}
            >
              <Text fw={700} size={numberSize(c.value)} c={c.color} lh={1.1} className={classes.number}>
                {c.value.toLocaleString()}
              </Text>
              <Text size="xs" c="dimmed">
                {c.label}
                <VisuallyHidden>{countMeaning(c, p.name || p.key)}</VisuallyHidden>
              </Text>
            </UnstyledLink>
          ))}
        </div>
      )}

      <Group mt="sm" gap="xs">
        <Markers p={p} />
      </Group>

      <Group justify="space-between" mt="md" gap="xs" align="flex-end">
        <Stack gap={0}>
          <Text size="xs" c="dimmed" data-testid="open-run">
            {p.openRun ? (
              <Tooltip label={`Started ${formatDateTime(p.openRun.startedAt, tz)}`}>
                <span>
                  Run {p.openRun.id} open since {formatDateTime(p.openRun.startedAt, tz)}; last activity{' '}
                  {formatRelative(p.openRun.lastActivityAt)}
                </span>
              </Tooltip>
            ) : (
              'No open run'
            )}
          </Text>
          <Text size="xs" c="dimmed" data-testid="last-contact">
            Last Mate contact:{' '}
            {p.lastMateContactAt ? (
              <span title={formatDateTime(p.lastMateContactAt, tz)}>{formatRelative(p.lastMateContactAt)}</span>
            ) : (
              'never'
            )}
          </Text>
        </Stack>
        {can(session.user.role, 'processes.gate') ? (
          <Switch
            checked={p.state.gateOpen}
            onChange={(e) => toggle(e.currentTarget.checked)}
            disabled={gate.isPending}
            label={p.state.gateOpen ? 'Started' : 'Stopped'}
            aria-label={`Let Mates run ${p.name || p.key}`}
            color="teal"
          />
        ) : null}
      </Group>
    </Card>
  );
}

export function OverviewPage() {
  const processes = useLiveQuery(processesQuery());
  return (
    <Stack gap="md">
      <Title order={1} size="h2">
        Overview
      </Title>
      {processes.isPending ? (
        <SimpleGrid cols={{ base: 1, md: 2, xl: 3 }}>
          {[0, 1, 2].map((i) => (
            <Skeleton key={i} h={220} radius="md" />
          ))}
        </SimpleGrid>
      ) : processes.isError ? (
        <ErrorAlert error={processes.error} title="Could not load the processes" retry={() => void processes.refetch()} />
      ) : processes.data.length === 0 ? (
        <Empty title="No processes yet">A developer or admin creates processes; Mates then create and work their tasks.</Empty>
      ) : (
        <div className={classes.cards}>
          {processes.data
            .filter((p) => !p.archived)
            .map((p) => (
              <ProcessCard key={p.id} p={p} />
            ))}
        </div>
      )}
    </Stack>
  );
}
