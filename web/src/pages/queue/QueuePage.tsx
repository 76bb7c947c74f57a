/**
 * The queue view (/processes/:processId/queue): a tab per queue with its count; in the open one the
 * toolbar (search, error flag, field filters: all in the URL, useQueueSearch.ts), the number of
 * tasks, the selection bar and the table. While rows are selected they stay put and the rows that
 * arrived since are counted, not shown; bulk actions touch the selected rows or every matching task.
 */
import { useEffect, useMemo, useState } from 'react';
import { Breadcrumbs, Button, Group, Stack, Tabs, Text, Title } from '@mantine/core';
import { useInfiniteQuery } from '@tanstack/react-query';
import { useLive, useLiveQuery } from '../../api/live';
import { processQuery, taskPagesQuery } from '../../api/queries';
import { useSession } from '../../api/session';
import type { Field, QueueName, Task } from '../../lib/api-types';
import { freezeRows } from '../../lib/freeze';
import { bulkFilter, flattenQueueSearch, isFiltered, type QueueSearch } from '../../lib/queue-search';
import { QUEUE_LABEL, QUEUES, queueCount } from '../../lib/queues';
import { can } from '../../lib/roles';
import { emptySelection, keepPresent, type Selection } from '../../lib/selection';
import { BulkDialog, type BulkRequest } from '../../components/BulkDialog';
import { Empty } from '../../components/Empty';
import { ErrorAlert } from '../../components/ErrorAlert';
import { AnchorLink, ButtonLink } from '../../components/links';
import { QueueTable, type QueueRow } from './QueueTable';
import { QueueToolbar } from './QueueToolbar';
import { SelectionBar, type BulkChoice } from './SelectionBar';
import { useQueueSearch } from './useQueueSearch';

export function QueuePage() {
  const { processId, id, search, queue, effective, setSearch } = useQueueSearch();
  const process = useLiveQuery(processQuery(id));
  const role = useSession().user.role;

  if (process.isError) return <ErrorAlert error={process.error} title="Could not load the process" retry={() => void process.refetch()} />;
  const p = process.data;
  const name = p ? p.name || p.key : '…';

  return (
    <Stack gap="sm">
      <Breadcrumbs>
        <AnchorLink to="/">Overview</AnchorLink>
        <Text>{name}</Text>
      </Breadcrumbs>
      <Group justify="space-between">
        <Title order={1} size="h2">
          {name}
        </Title>
        <Group gap="xs">
          {can(role, 'tasks.work') && (
            <ButtonLink to="/processes/$processId/new" params={{ processId }}>
              New task
            </ButtonLink>
          )}
          <ButtonLink variant="default" to="/processes/$processId/settings" params={{ processId }}>
            Settings
          </ButtonLink>
        </Group>
      </Group>

      <Tabs value={queue} onChange={(v) => v && void setSearch({ ...search, queue: v as QueueName, error: undefined })}>
        <Tabs.List>
          {QUEUES.map((q) => (
            <Tabs.Tab key={q} value={q}>
              {QUEUE_LABEL[q]}
              {p ? ` (${queueCount(p.counts, q).toLocaleString()})` : ''}
            </Tabs.Tab>
          ))}
        </Tabs.List>
        {QUEUES.map((q) => (
          <Tabs.Panel key={q} value={q} pt="sm">
            {q === queue ? (
              <QueueView
                processId={id}
                processName={name}
                fields={p?.fields ?? []}
                search={search}
                effective={effective}
                queue={queue}
                setSearch={setSearch}
              />
            ) : null}
          </Tabs.Panel>
        ))}
      </Tabs>
    </Stack>
  );
}

/** The open queue: its toolbar, count, selection and table, and the bulk dialog. */
function QueueView({
  processId,
  processName,
  fields,
  search,
  effective,
  queue,
  setSearch,
}: {
  processId: number;
  processName: string;
  fields: Field[];
  search: QueueSearch;
  effective: QueueSearch;
  queue: QueueName;
  setSearch: (next: QueueSearch, replace?: boolean) => void;
}) {
  const session = useSession();
  const role = session.user.role;
  const canWork = can(role, 'tasks.work');
  const { refetchInterval } = useLive();

  const flat = flattenQueueSearch(effective);
  const list = useInfiniteQuery({ ...taskPagesQuery(processId, effective), refetchInterval });
  const latest = useMemo(() => list.data?.pages.flatMap((pg) => pg.items) ?? [], [list.data]);
  const total = list.data?.pages[0]?.total ?? 0;

  // selection, and the rows frozen while it lasts
  const [selection, setSelection] = useState<Selection>(emptySelection);
  const [frozen, setFrozen] = useState<Task[] | null>(null);
  useEffect(() => {
    setSelection(emptySelection);
    setFrozen(null);
  }, [processId, JSON.stringify(flat)]); // eslint-disable-line react-hooks/exhaustive-deps
  // memoised: a new rows array on every render would make the table recompute (and reset) each time
  const view = useMemo(() => (frozen ? freezeRows(frozen, latest) : { rows: latest as QueueRow[], newCount: 0 }), [frozen, latest]);
  const rows: QueueRow[] = view.rows;
  const order = rows.map((r) => r.id);

  const select = (next: Selection) => {
    if (next.ids.size > 0 && !frozen) setFrozen(latest);
    if (next.ids.size === 0) setFrozen(null);
    setSelection(next);
  };
  const showNew = () => {
    setFrozen(selection.ids.size ? latest : null);
    setSelection(
      keepPresent(
        selection,
        latest.map((r) => r.id),
      ),
    );
  };

  const [bulk, setBulk] = useState<BulkRequest | null>(null);
  const [allMatching, setAllMatching] = useState(false);
  useEffect(() => setAllMatching(false), [selection]);
  const selectedIds = [...selection.ids];
  const targetCount = allMatching ? total : selectedIds.length;
  const openBulk = (choice: BulkChoice) =>
    setBulk({
      ...choice,
      ...(allMatching ? { filter: bulkFilter(effective) } : { ids: selectedIds }),
      label: `${choice.label} (${targetCount.toLocaleString()})`,
    });

  return (
    <>
      <Stack gap="sm">
        <QueueToolbar search={search} queue={queue} fields={fields} onSearch={(next, replace) => void setSearch(next, replace)} />

        <Group justify="space-between" mih={36}>
          <Text size="sm" c="dimmed" role="status" data-testid="queue-total">
            {list.isPending ? 'Loading…' : `${total.toLocaleString()} ${total === 1 ? 'task' : 'tasks'}`}
          </Text>
          {view.newCount > 0 && (
            <Button size="xs" variant="light" onClick={showNew} data-testid="show-new">
              {view.newCount} new — show
            </Button>
          )}
        </Group>

        {canWork && selection.ids.size > 0 && (
          <SelectionBar
            queue={queue}
            selected={selection.ids.size}
            total={total}
            allShownSelected={order.every((x) => selection.ids.has(x))}
            allMatching={allMatching}
            canDelete={can(role, 'tasks.delete')}
            onSelectAllMatching={() => setAllMatching(true)}
            onClear={() => select(emptySelection)}
            onBulk={openBulk}
          />
        )}

        {list.isError ? (
          <ErrorAlert error={list.error} title="Could not load the tasks" retry={() => void list.refetch()} />
        ) : !list.isPending && rows.length === 0 ? (
          <Empty title={isFiltered(search) ? 'No task matches' : `No tasks in ${QUEUE_LABEL[queue]}`}>
            {isFiltered(search) ? 'Change the search or remove a filter.' : 'Tasks appear here as Mates and people create and move them.'}
          </Empty>
        ) : (
          <QueueTable
            rows={rows}
            fields={fields}
            timeZone={session.tenant.timeZone}
            selectable={canWork}
            selection={selection}
            onSelect={select}
            sort={search.sort}
            onSort={(sort) => void setSearch({ ...search, sort })}
            caption={`Tasks of ${processName} in ${QUEUE_LABEL[queue]}`}
            label={`Tasks in ${QUEUE_LABEL[queue]}`}
            canLoadMore={!!list.hasNextPage && !list.isFetchingNextPage && !frozen}
            loadingMore={list.isFetchingNextPage}
            onLoadMore={() => void list.fetchNextPage()}
          />
        )}
      </Stack>
      <BulkDialog processId={processId} request={bulk} onClose={() => setBulk(null)} onDone={() => select(emptySelection)} />
    </>
  );
}
