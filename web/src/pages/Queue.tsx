/**
 * The queue view: the process's tasks as a virtualised table with the process's fields as columns;
 * queue, error flag, search, field filters and sort in the URL; multi-select with shift-range and
 * bulk actions; while rows are selected the rows stay put and new ones are counted, not shown.
 */
import { useEffect, useMemo, useRef, useState } from 'react';
import {
  Badge,
  Breadcrumbs,
  Button,
  Checkbox,
  CloseButton,
  Group,
  Menu,
  Paper,
  Popover,
  Select,
  Stack,
  Table,
  Tabs,
  Text,
  TextInput,
  Title,
  UnstyledButton,
  VisuallyHidden,
} from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useNavigate } from '@tanstack/react-router';
import { useInfiniteQuery } from '@tanstack/react-query';
import { createColumnHelper, flexRender, getCoreRowModel, useReactTable, type ColumnDef } from '@tanstack/react-table';
import { useVirtualizer } from '@tanstack/react-virtual';
import { api } from '../api/http';
import { useLive } from '../api/live';
import { useProcess } from '../api/queries';
import { useSession } from '../api/session';
import { QUEUES, type Field, type ProcessDetail, type QueueName, type Task, type TaskPage } from '../api/types';
import { queueRoute } from '../router';
import { flattenQueueSearch, isFiltered, nextSort, sortDirection, taskListQuery, type QueueSearch } from '../lib/queue-search';
import { clickRow, emptySelection, keepPresent, toggleAll, type Selection } from '../lib/selection';
import { freezeRows } from '../lib/freeze';
import { fieldLabel, formatValue } from '../lib/values';
import { formatDateTime, formatRelative } from '../lib/time';
import { can } from '../lib/roles';
import { QUEUE_LABEL } from '../lib/queues';
import { BulkDialog, type BulkRequest } from '../components/BulkDialog';
import { Empty } from '../components/Empty';
import { AnchorLink, ButtonLink } from '../components/links';
import { ErrorAlert } from '../components/ErrorAlert';

const PAGE = 100;
const ROW_HEIGHT = 41;

function queueCount(p: ProcessDetail, q: QueueName): number {
  const c = p.counts;
  return { Ready: c.ready, NeedsData: c.needsData, NeedsApproval: c.needsApproval, Manual: c.manual + c.error, Solved: c.solved }[q];
}

type Row = Task & { gone?: boolean };

function SortHeader({
  label,
  column,
  sort,
  onSort,
}: {
  label: string;
  column: string;
  sort?: string;
  onSort: (s: string | undefined) => void;
}) {
  const dir = sortDirection(sort, column);
  return (
    <UnstyledButton
      onClick={() => onSort(nextSort(sort, column))}
      fw={600}
      fz="sm"
      aria-label={`${label}: sort${dir === 'asc' ? 'ed ascending' : dir === 'desc' ? 'ed descending' : ''}`}
    >
      {label} {dir === 'asc' ? '▲' : dir === 'desc' ? '▼' : ''}
    </UnstyledButton>
  );
}

function FieldFilter({ fields, onAdd }: { fields: Field[]; onAdd: (name: string, value: string) => void }) {
  const [opened, setOpened] = useState(false);
  const [name, setName] = useState<string | null>(null);
  const [value, setValue] = useState('');
  if (!fields.length) return null;
  return (
    <Popover opened={opened} onChange={setOpened} position="bottom-start" trapFocus withinPortal>
      <Popover.Target>
        <Button variant="default" onClick={() => setOpened((o) => !o)}>
          Add filter
        </Button>
      </Popover.Target>
      <Popover.Dropdown>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            if (name && value.trim()) {
              onAdd(name, value.trim());
              setOpened(false);
              setValue('');
            }
          }}
        >
          <Stack gap="xs" w={240}>
            <Select
              label="Field"
              data={fields.map((f) => ({ value: f.name, label: fieldLabel(f) }))}
              value={name}
              onChange={setName}
              comboboxProps={{ withinPortal: false }}
            />
            <TextInput label="Value" value={value} onChange={(e) => setValue(e.currentTarget.value)} />
            <Button type="submit" disabled={!name || !value.trim()}>
              Apply
            </Button>
          </Stack>
        </form>
      </Popover.Dropdown>
    </Popover>
  );
}

export function QueuePage() {
  const { processId } = queueRoute.useParams();
  const search = queueRoute.useSearch();
  const navigate = useNavigate({ from: queueRoute.fullPath });
  const id = Number(processId);
  const process = useProcess(id);
  const session = useSession();
  const tz = session.tenant.timeZone;
  const role = session.user.role;
  const canWork = can(role, 'tasks.work');
  const { refetchInterval } = useLive();
  const queue: QueueName = search.queue ?? 'Ready';
  const effective: QueueSearch = { ...search, queue };

  const setSearch = (next: QueueSearch, replace = false) => navigate({ search: next, replace });

  // free-text search: typed into a box, written to the URL after a pause
  const [text, setText] = useState(search.q ?? '');
  const [debounced] = useDebouncedValue(text, 300);
  useEffect(() => {
    if ((debounced || undefined) !== search.q) void setSearch({ ...search, q: debounced || undefined }, true);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [debounced]);
  useEffect(() => setText(search.q ?? ''), [search.q]);

  const flat = flattenQueueSearch(effective);
  const list = useInfiniteQuery({
    queryKey: ['tasks', id, flat],
    queryFn: ({ pageParam, signal }) =>
      api<TaskPage>(`/v1/processes/${id}/tasks?${taskListQuery(effective, { limit: PAGE, cursor: pageParam })}`, { signal }),
    initialPageParam: null as string | null,
    getNextPageParam: (last) => last.nextCursor,
    refetchInterval,
    placeholderData: (prev) => prev,
  });
  const latest = useMemo(() => list.data?.pages.flatMap((p) => p.items) ?? [], [list.data]);
  const total = list.data?.pages[0]?.total ?? 0;

  // selection, and the rows frozen while it lasts
  const [selection, setSelection] = useState<Selection>(emptySelection);
  const [frozen, setFrozen] = useState<Task[] | null>(null);
  useEffect(() => {
    setSelection(emptySelection);
    setFrozen(null);
  }, [id, JSON.stringify(flat)]); // eslint-disable-line react-hooks/exhaustive-deps
  // memoised: a new rows array on every render would make the table recompute (and reset) each time
  const view = useMemo(() => (frozen ? freezeRows(frozen, latest) : { rows: latest as Row[], newCount: 0 }), [frozen, latest]);
  const rows: Row[] = view.rows;
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

  const fields = process.data?.fields ?? [];
  const columns = useMemo<ColumnDef<Row, unknown>[]>(() => {
    const h = createColumnHelper<Row>();
    const allSelected = order.length > 0 && order.every((x) => selection.ids.has(x));
    const cols: ColumnDef<Row, unknown>[] = [];
    if (canWork)
      cols.push(
        h.display({
          id: 'select',
          header: () => (
            <Checkbox
              aria-label="Select all shown tasks"
              checked={allSelected}
              indeterminate={!allSelected && selection.ids.size > 0}
              onChange={() => select(toggleAll(selection, order))}
            />
          ),
          cell: ({ row }) => (
            <Checkbox
              aria-label={`Select task ${row.original.id}`}
              checked={selection.ids.has(row.original.id)}
              onChange={() => {}}
              onClick={(e) => select(clickRow(selection, order, row.original.id, e.shiftKey))}
            />
          ),
        }) as ColumnDef<Row, unknown>,
      );
    cols.push(
      h.accessor('id', {
        header: () => <SortHeader label="Task" column="id" sort={search.sort} onSort={(s) => void setSearch({ ...search, sort: s })} />,
        cell: ({ row }) => (
          <AnchorLink to="/tasks/$taskId" params={{ taskId: String(row.original.id) }} td={row.original.gone ? 'line-through' : undefined}>
            {row.original.id}
          </AnchorLink>
        ),
      }) as ColumnDef<Row, unknown>,
    );
    for (const f of fields)
      cols.push(
        h.display({
          id: `f.${f.name}`,
          header: () => (
            <SortHeader
              label={fieldLabel(f)}
              column={`f.${f.name}`}
              sort={search.sort}
              onSort={(s) => void setSearch({ ...search, sort: s })}
            />
          ),
          cell: ({ row }) => (
            <Text size="sm" lineClamp={1}>
              {formatValue(row.original.data[f.name], f, tz)}
            </Text>
          ),
        }) as ColumnDef<Row, unknown>,
      );
    if (!fields.length)
      cols.push(
        h.display({
          id: 'data',
          header: 'Data',
          cell: ({ row }) => (
            <Text size="sm" lineClamp={1}>
              {Object.entries(row.original.data)
                .map(([k, v]) => `${k}: ${formatValue(v, undefined, tz)}`)
                .join(' · ')}
            </Text>
          ),
        }) as ColumnDef<Row, unknown>,
      );
    cols.push(
      h.display({
        id: 'flags',
        header: 'Status',
        cell: ({ row }) => {
          const t = row.original;
          return (
            <Group gap={4} wrap="nowrap">
              {t.error && (
                <Badge color="red" size="sm">
                  Error
                </Badge>
              )}
              {t.urgent && (
                <Badge color="grape" size="sm">
                  Urgent
                </Badge>
              )}
              {t.lockedBy && (
                <Badge color="blue" size="sm" variant="light" title={`Locked by ${t.lockedBy.name}`}>
                  {t.lockedBy.type === 'mate' ? 'Mate working' : `Open by ${t.lockedBy.name}`}
                </Badge>
              )}
              {t.deadline && new Date(t.deadline) < new Date() && t.queue !== 'Solved' && (
                <Badge color="red" size="sm" variant="outline">
                  Overdue
                </Badge>
              )}
              {row.original.gone && (
                <Badge color="gray" size="sm" variant="outline">
                  Left this list
                </Badge>
              )}
            </Group>
          );
        },
      }) as ColumnDef<Row, unknown>,
      h.display({
        id: 'reason',
        header: 'Reason',
        cell: ({ row }) => (
          <Text size="sm" lineClamp={1} c="dimmed">
            {row.original.reason ?? ''}
          </Text>
        ),
      }) as ColumnDef<Row, unknown>,
      h.accessor('createdAt', {
        header: () => (
          <SortHeader label="Created" column="createdAt" sort={search.sort} onSort={(s) => void setSearch({ ...search, sort: s })} />
        ),
        cell: ({ row }) => (
          <Text size="sm" title={formatDateTime(row.original.createdAt, tz)} style={{ whiteSpace: 'nowrap' }}>
            {formatRelative(row.original.createdAt)}
          </Text>
        ),
      }) as ColumnDef<Row, unknown>,
    );
    return cols;
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [fields, selection, order.join(','), search.sort, canWork, tz]);

  const table = useReactTable({
    data: rows,
    columns,
    getCoreRowModel: getCoreRowModel(),
    getRowId: (r) => String(r.id),
    autoResetPageIndex: false,
  });

  const scrollRef = useRef<HTMLDivElement>(null);
  const virtualizer = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 12,
  });
  const items = virtualizer.getVirtualItems();
  const lastIndex = items.length ? items[items.length - 1].index : -1;
  useEffect(() => {
    if (lastIndex >= rows.length - 10 && list.hasNextPage && !list.isFetchingNextPage && !frozen) void list.fetchNextPage();
  }, [lastIndex, rows.length, list.hasNextPage, list.isFetchingNextPage, frozen]); // eslint-disable-line react-hooks/exhaustive-deps
  const padTop = items.length ? items[0].start : 0;
  const padBottom = items.length ? virtualizer.getTotalSize() - items[items.length - 1].end : 0;

  if (process.isError) return <ErrorAlert error={process.error} title="Could not load the process" retry={() => void process.refetch()} />;
  const p = process.data;
  const name = p ? p.name || p.key : '…';

  const selectedIds = [...selection.ids];
  const target = allMatching
    ? { filter: { ...flat, ...(effective.error !== undefined ? { error: effective.error } : {}) } }
    : { ids: selectedIds };
  const targetCount = allMatching ? total : selectedIds.length;
  const openBulk = (r: Omit<BulkRequest, 'ids' | 'filter'>) =>
    setBulk({ ...r, ...target, label: `${r.label} (${targetCount.toLocaleString()})` });

  const body = (
    <>
      <Group gap="xs" align="flex-end">
        <TextInput
          label="Search"
          placeholder="Search this queue"
          value={text}
          onChange={(e) => setText(e.currentTarget.value)}
          rightSection={text ? <CloseButton aria-label="Clear search" onClick={() => setText('')} /> : null}
          w={{ base: '100%', sm: 280 }}
        />
        {queue === 'Manual' && (
          <Select
            label="Errors"
            data={[
              { value: 'all', label: 'With and without errors' },
              { value: 'true', label: 'Errors only' },
              { value: 'false', label: 'Without errors' },
            ]}
            value={search.error === undefined ? 'all' : String(search.error)}
            onChange={(v) => void setSearch({ ...search, error: v === 'true' ? true : v === 'false' ? false : undefined })}
            allowDeselect={false}
            w={220}
          />
        )}
        <FieldFilter fields={fields} onAdd={(n, v) => void setSearch({ ...search, f: { ...search.f, [n]: v } })} />
      </Group>
      {Object.keys(search.f ?? {}).length > 0 && (
        <Group gap={6} aria-label="Active filters">
          {Object.entries(search.f ?? {}).map(([k, v]) => {
            const f = fields.find((x) => x.name === k);
            return (
              <Badge
                key={k}
                variant="light"
                size="lg"
                rightSection={
                  <CloseButton
                    size="xs"
                    aria-label={`Remove filter ${f ? fieldLabel(f) : k}`}
                    onClick={() => {
                      const rest = { ...search.f };
                      delete rest[k];
                      void setSearch({ ...search, f: Object.keys(rest).length ? rest : undefined });
                    }}
                  />
                }
              >
                {f ? fieldLabel(f) : k}: {v}
              </Badge>
            );
          })}
        </Group>
      )}

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
        <Paper withBorder p="xs" radius="md" data-testid="selection-bar">
          <Group gap="xs" justify="space-between">
            <Group gap="xs">
              <Text size="sm" fw={600}>
                {allMatching ? `All ${total.toLocaleString()} matching tasks selected` : `${selection.ids.size} selected`}
              </Text>
              {!allMatching && total > selection.ids.size && order.every((x) => selection.ids.has(x)) && (
                <Button size="compact-sm" variant="subtle" onClick={() => setAllMatching(true)}>
                  Select all {total.toLocaleString()} matching this filter
                </Button>
              )}
              <Button size="compact-sm" variant="subtle" color="gray" onClick={() => select(emptySelection)}>
                Clear selection
              </Button>
            </Group>
            <Group gap="xs">
              <Menu withinPortal>
                <Menu.Target>
                  <Button size="xs">Move to…</Button>
                </Menu.Target>
                <Menu.Dropdown>
                  {QUEUES.filter((q) => q !== 'NeedsData').map((q) => (
                    <Menu.Item key={q} onClick={() => openBulk({ action: 'move', queue: q, label: `Move to ${QUEUE_LABEL[q]}` })}>
                      {QUEUE_LABEL[q]}
                    </Menu.Item>
                  ))}
                </Menu.Dropdown>
              </Menu>
              {queue === 'Manual' && (
                <Button size="xs" variant="default" onClick={() => openBulk({ action: 'clearError', label: 'Resolve errors' })}>
                  Resolve errors
                </Button>
              )}
              {queue === 'NeedsApproval' && (
                <>
                  <Button size="xs" variant="default" onClick={() => openBulk({ action: 'approve', label: 'Approve' })}>
                    Approve
                  </Button>
                  <Button size="xs" variant="default" onClick={() => openBulk({ action: 'reject', label: 'Reject' })}>
                    Reject
                  </Button>
                </>
              )}
              <Button size="xs" variant="default" onClick={() => openBulk({ action: 'urgent', urgent: true, label: 'Mark urgent' })}>
                Mark urgent
              </Button>
              <Button size="xs" variant="default" onClick={() => openBulk({ action: 'urgent', urgent: false, label: 'Not urgent' })}>
                Not urgent
              </Button>
              {can(role, 'tasks.delete') && (
                <Button size="xs" color="red" variant="light" onClick={() => openBulk({ action: 'delete', label: 'Delete' })}>
                  Delete
                </Button>
              )}
            </Group>
          </Group>
        </Paper>
      )}

      {list.isError ? (
        <ErrorAlert error={list.error} title="Could not load the tasks" retry={() => void list.refetch()} />
      ) : !list.isPending && rows.length === 0 ? (
        <Empty title={isFiltered(search) ? 'No task matches' : `No tasks in ${QUEUE_LABEL[queue]}`}>
          {isFiltered(search) ? 'Change the search or remove a filter.' : 'Tasks appear here as Mates and people create and move them.'}
        </Empty>
      ) : (
        <Paper withBorder radius="md">
          <div
            ref={scrollRef}
            style={{ height: 'min(70vh, calc(100vh - 300px))', minHeight: 320, overflow: 'auto' }}
            tabIndex={0}
            aria-label={`Tasks in ${QUEUE_LABEL[queue]}`}
            role="region"
          >
            <Table stickyHeader highlightOnHover verticalSpacing={8} miw={720} data-testid="task-table">
              <VisuallyHidden component="caption">
                Tasks of {name} in {QUEUE_LABEL[queue]}
              </VisuallyHidden>
              <Table.Thead>
                {table.getHeaderGroups().map((hg) => (
                  <Table.Tr key={hg.id}>
                    {hg.headers.map((header) => (
                      <Table.Th key={header.id} scope="col" w={header.id === 'select' ? 40 : undefined}>
                        {header.isPlaceholder ? null : flexRender(header.column.columnDef.header, header.getContext())}
                      </Table.Th>
                    ))}
                  </Table.Tr>
                ))}
              </Table.Thead>
              <Table.Tbody>
                {padTop > 0 && (
                  <tr aria-hidden>
                    <td style={{ height: padTop, padding: 0, border: 0 }} />
                  </tr>
                )}
                {items.map((vi) => {
                  const row = table.getRowModel().rows[vi.index];
                  if (!row) return null;
                  return (
                    <Table.Tr
                      key={row.id}
                      data-index={vi.index}
                      bg={selection.ids.has(row.original.id) ? 'var(--mantine-primary-color-light)' : undefined}
                      data-testid={`row-${row.original.id}`}
                    >
                      {row.getVisibleCells().map((cell) => (
                        <Table.Td key={cell.id} h={ROW_HEIGHT}>
                          {flexRender(cell.column.columnDef.cell, cell.getContext())}
                        </Table.Td>
                      ))}
                    </Table.Tr>
                  );
                })}
                {padBottom > 0 && (
                  <tr aria-hidden>
                    <td style={{ height: padBottom, padding: 0, border: 0 }} />
                  </tr>
                )}
              </Table.Tbody>
            </Table>
            {list.isFetchingNextPage && (
              <Text size="sm" c="dimmed" p="sm">
                Loading more…
              </Text>
            )}
          </div>
        </Paper>
      )}
    </>
  );

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
              {p ? ` (${queueCount(p, q).toLocaleString()})` : ''}
            </Tabs.Tab>
          ))}
        </Tabs.List>
        {QUEUES.map((q) => (
          <Tabs.Panel key={q} value={q} pt="sm">
            {q === queue ? <Stack gap="sm">{body}</Stack> : null}
          </Tabs.Panel>
        ))}
      </Tabs>
      <BulkDialog processId={id} request={bulk} onClose={() => setBulk(null)} onDone={() => select(emptySelection)} />
    </Stack>
  );
}
