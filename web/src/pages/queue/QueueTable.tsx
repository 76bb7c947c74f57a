/**
 * The queue view's table: the process's fields as columns (a Data column when it has none), sortable
 * headers, a checkbox per row for those who work tasks (shift-click selects a range), virtualised
 * rows of a fixed height, and a call for the next page as the last rendered row nears the end.
 */
import { useEffect, useMemo, useRef } from 'react';
import { Checkbox, Paper, Table, Text, UnstyledButton, VisuallyHidden } from '@mantine/core';
import { createColumnHelper, flexRender, getCoreRowModel, useReactTable, type ColumnDef } from '@tanstack/react-table';
import { useVirtualizer } from '@tanstack/react-virtual';
import type { Field, Task } from '../../lib/api-types';
import { nextSort, sortDirection } from '../../lib/queue-search';
import { clickRow, toggleAll, type Selection } from '../../lib/selection';
import { formatDateTime, formatRelative } from '../../lib/time';
import { fieldLabel, formatValue } from '../../lib/values';
import { AnchorLink } from '../../components/links';
import { TaskFlags } from './TaskFlags';

/** A row: a task, or one that left the list while the rows were frozen (lib/freeze.ts). */
export type QueueRow = Task & { gone?: boolean };

const ROW_HEIGHT = 41;
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
              aria-label={`Select task ${row.original.id}`}
              checked={selection.ids.has(row.original.id)}
              onChange={() => {}}
              onClick={(e) => onSelect(clickRow(selection, order, row.original.id, e.shiftKey))}
            />
          ),
        }) as ColumnDef<QueueRow, unknown>,
      );
    cols.push(
      h.accessor('id', {
        header: sortHeader('Task', 'id'),
        cell: ({ row }) => (
          <AnchorLink to="/tasks/$taskId" params={{ taskId: String(row.original.id) }} td={row.original.gone ? 'line-through' : undefined}>
            {row.original.id}
          </AnchorLink>
        ),
      }) as ColumnDef<QueueRow, unknown>,
    );
    for (const f of fields)
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
    return cols;
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [fields, selection, order.join(','), sort, selectable, timeZone]);

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
        <Table stickyHeader highlightOnHover verticalSpacing={8} miw={720} data-testid="task-table">
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
        {loadingMore && (
          <Text size="sm" c="dimmed" p="sm">
            Loading more…
          </Text>
        )}
      </div>
    </Paper>
  );
}
