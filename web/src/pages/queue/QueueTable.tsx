/**
 * The queue view's table: the task's name (its key field values, else its id) as a link, the
 * process's other fields as columns (a Data column when it has none), sortable headers, a checkbox
 * per row for those who work tasks (shift-click selects a range), virtualised rows of a fixed
 * height, and a call for the next page as the last rendered row nears the end. A click anywhere on
 * a row opens its task. On a phone each row is one cell: the name, the markers, the reason, and
 * the id with the age below; the task page has the rest.
 */
import { useEffect, useMemo, useRef, type MouseEvent } from 'react';
import { Checkbox, Group, Paper, Table, Text, UnstyledButton, VisuallyHidden } from '@mantine/core';
import { useMediaQuery } from '@mantine/hooks';
import { useNavigate } from '@tanstack/react-router';
import { createColumnHelper, flexRender, getCoreRowModel, useReactTable, type ColumnDef } from '@tanstack/react-table';
import { useVirtualizer } from '@tanstack/react-virtual';
import type { Field, Task } from '../../lib/api-types';
import { nextSort, sortDirection } from '../../lib/queue-search';
import { clickRow, toggleAll, type Selection } from '../../lib/selection';
import { formatDateTime, formatRelative } from '../../lib/time';
import { keyName } from '../../lib/task-name';
import { fieldLabel, formatValue } from '../../lib/values';
import { AnchorLink } from '../../components/links';
import { TaskFlags } from './TaskFlags';

/** A row: a task, or one that left the list while the rows were frozen (lib/freeze.ts). */
export type QueueRow = Task & { gone?: boolean };

const ROW_HEIGHT = 41;
/** a phone's row: three lines */
const PHONE_ROW_HEIGHT = 88;
/** Mantine's xs breakpoint: below it the rows are stacked */
export const PHONE_QUERY = '(max-width: 36em)';

/** A click on the row, not on its link, checkbox or another control: opens the task. */
function opensTask(e: MouseEvent<HTMLElement>): boolean {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return false;
  const target = e.target as HTMLElement;
  if (target.closest('a, button, input, label, [data-no-open]')) return false;
  // selecting text to copy it is not a click on the row
  return !window.getSelection()?.toString();
}

function NameLink({ row, name }: { row: QueueRow; name: string }) {
  return (
    <AnchorLink
      to="/tasks/$taskId"
      params={{ taskId: String(row.id) }}
      td={row.gone ? 'line-through' : undefined}
      fw={500}
      style={{ overflowWrap: 'anywhere' }}
    >
      {name}
    </AnchorLink>
  );
}
/** rows before the end at which the next page is asked for */
const LOAD_AHEAD = 10;

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

export function QueueTable({
  rows,
  fields,
  timeZone,
  selectable,
  selection,
  onSelect,
  sort,
  onSort,
  caption,
  label,
  canLoadMore,
  loadingMore,
  onLoadMore,
}: {
  rows: QueueRow[];
  fields: Field[];
  timeZone: string;
  /** a checkbox column (roles that work tasks) */
  selectable: boolean;
  selection: Selection;
  onSelect: (next: Selection) => void;
  sort: string | undefined;
  onSort: (sort: string | undefined) => void;
  /** for screen readers: the table's caption and the scrolling region's name */
  caption: string;
  label: string;
  /** a next page exists and may be asked for now */
  canLoadMore: boolean;
  loadingMore: boolean;
  onLoadMore: () => void;
}) {
  const order = rows.map((r) => r.id);
  const phone = useMediaQuery(PHONE_QUERY, false, { getInitialValueInEffect: false });
  const rowHeight = phone ? PHONE_ROW_HEIGHT : ROW_HEIGHT;
  const keys = fields.filter((f) => f.isKey);
  const navigate = useNavigate();
  const columns = useMemo<ColumnDef<QueueRow, unknown>[]>(() => {
    const h = createColumnHelper<QueueRow>();
    const allSelected = order.length > 0 && order.every((x) => selection.ids.has(x));
    const sortHeader = (label: string, column: string) => () => <SortHeader label={label} column={column} sort={sort} onSort={onSort} />;
    const cols: ColumnDef<QueueRow, unknown>[] = [];
    if (selectable)
      cols.push(
        h.display({
          id: 'select',
          header: () => (
            <Checkbox
              aria-label="Select all shown tasks"
              checked={allSelected}
              indeterminate={!allSelected && selection.ids.size > 0}
              onChange={() => onSelect(toggleAll(selection, order))}
            />
          ),
          cell: ({ row }) => (
            <Checkbox
              data-no-open
              aria-label={`Select task ${row.original.id}`}
              checked={selection.ids.has(row.original.id)}
              onChange={() => {}}
              onClick={(e) => onSelect(clickRow(selection, order, row.original.id, e.shiftKey))}
            />
          ),
        }) as ColumnDef<QueueRow, unknown>,
      );
    const nameOf = (r: QueueRow) => keyName(r, fields, timeZone) ?? String(r.id);
    if (phone) {
      cols.push(
        h.display({
          id: 'task',
          header: () => (
            <Text fw={600} fz="sm">
              {keys.length ? keys.map(fieldLabel).join(' · ') : 'Task'}
            </Text>
          ),
          cell: ({ row }) => <PhoneRow row={row.original} name={nameOf(row.original)} showId={keys.length > 0} timeZone={timeZone} />,
        }) as ColumnDef<QueueRow, unknown>,
      );
      return cols;
    }
    cols.push(
      h.accessor('id', {
        header: keys.length ? sortHeader(keys.map(fieldLabel).join(' · '), `f.${keys[0].name}`) : sortHeader('Task', 'id'),
        cell: ({ row }) => <NameLink row={row.original} name={nameOf(row.original)} />,
      }) as ColumnDef<QueueRow, unknown>,
    );
    for (const f of fields.filter((x) => !x.isKey))
      cols.push(
        h.display({
          id: `f.${f.name}`,
          header: sortHeader(fieldLabel(f), `f.${f.name}`),
          cell: ({ row }) => (
            <Text size="sm" lineClamp={1}>
              {formatValue(row.original.data[f.name], f, timeZone)}
            </Text>
          ),
        }) as ColumnDef<QueueRow, unknown>,
      );
    if (!fields.length)
      cols.push(
        h.display({
          id: 'data',
          header: 'Data',
          cell: ({ row }) => (
            <Text size="sm" lineClamp={1}>
              {Object.entries(row.original.data)
                .map(([k, v]) => `${k}: ${formatValue(v, undefined, timeZone)}`)
                .join(' · ')}
            </Text>
          ),
        }) as ColumnDef<QueueRow, unknown>,
      );
    cols.push(
      h.display({
        id: 'flags',
        header: 'Status',
        cell: ({ row }) => <TaskFlags task={row.original} gone={row.original.gone} />,
      }) as ColumnDef<QueueRow, unknown>,
      h.display({
        id: 'reason',
        header: 'Reason',
        cell: ({ row }) => (
          <Text size="sm" lineClamp={1} c="dimmed">
            {row.original.reason ?? ''}
          </Text>
        ),
      }) as ColumnDef<QueueRow, unknown>,
      h.accessor('createdAt', {
        header: sortHeader('Created', 'createdAt'),
        cell: ({ row }) => (
          <Text size="sm" title={formatDateTime(row.original.createdAt, timeZone)} style={{ whiteSpace: 'nowrap' }}>
            {formatRelative(row.original.createdAt)}
          </Text>
        ),
      }) as ColumnDef<QueueRow, unknown>,
    );
    if (keys.length)
      cols.push(
        h.display({
          id: 'taskId',
          header: sortHeader('Task id', 'id'),
          cell: ({ row }) => (
            <Text size="xs" c="dimmed" ff="monospace" style={{ whiteSpace: 'nowrap' }}>
              {row.original.id}
            </Text>
          ),
        }) as ColumnDef<QueueRow, unknown>,
      );
    return cols;
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [fields, selection, order.join(','), sort, selectable, timeZone, phone]);

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
    estimateSize: () => rowHeight,
    overscan: 12,
  });
  useEffect(() => virtualizer.measure(), [rowHeight]); // eslint-disable-line react-hooks/exhaustive-deps
  const items = virtualizer.getVirtualItems();
  const lastIndex = items.length ? items[items.length - 1].index : -1;
  useEffect(() => {
    if (canLoadMore && lastIndex >= rows.length - LOAD_AHEAD) onLoadMore();
  }, [lastIndex, rows.length, canLoadMore]); // eslint-disable-line react-hooks/exhaustive-deps
  const padTop = items.length ? items[0].start : 0;
  const padBottom = items.length ? virtualizer.getTotalSize() - items[items.length - 1].end : 0;

  return (
    <Paper withBorder radius="md">
      <div
        ref={scrollRef}
        style={{ height: 'min(70vh, calc(100vh - 300px))', minHeight: 320, overflow: 'auto' }}
        tabIndex={0}
        aria-label={label}
        role="region"
      >
        <Table
          stickyHeader
          highlightOnHover
          verticalSpacing={8}
          miw={phone ? undefined : 720}
          layout={phone ? 'fixed' : undefined}
          data-testid="task-table"
        >
          <VisuallyHidden component="caption">{caption}</VisuallyHidden>
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
                  style={{ cursor: 'pointer' }}
                  onClick={(e) => {
                    if (opensTask(e)) void navigate({ to: '/tasks/$taskId', params: { taskId: String(row.original.id) } });
                  }}
                >
                  {row.getVisibleCells().map((cell) => (
                    <Table.Td key={cell.id} h={rowHeight} data-no-open={cell.column.id === 'select' ? '' : undefined}>
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
        {loadingMore && (
          <Text size="sm" c="dimmed" p="sm">
            Loading more…
          </Text>
        )}
      </div>
    </Paper>
  );
}

/** A row on a phone: the name and the markers, the reason, the id (when the name is the key) and the age. */
function PhoneRow({ row, name, showId, timeZone }: { row: QueueRow; name: string; showId: boolean; timeZone: string }) {
  return (
    <div style={{ minWidth: 0 }}>
      <Group gap={6} wrap="nowrap" justify="space-between">
        <Text size="sm" truncate="end" style={{ minWidth: 0 }}>
          <NameLink row={row} name={name} />
        </Text>
        <TaskFlags task={row} gone={row.gone} />
      </Group>
      <Text size="sm" c="dimmed" truncate="end">
        {row.reason ?? '\u00a0'}
      </Text>
      <Text size="xs" c="dimmed" truncate="end" title={formatDateTime(row.createdAt, timeZone)}>
        {showId ? (
          <>
            <span style={{ fontFamily: 'var(--mantine-font-family-monospace)' }}>{row.id}</span> ·{' '}
          </>
        ) : null}
        created {formatRelative(row.createdAt)}
      </Text>
    </div>
  );
}
