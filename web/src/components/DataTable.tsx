/**
 * The tables of the Administration screens (users, Mates, webhooks, deliveries, the audit log,
 * tokens): one header row, a row per item, a horizontal scroll below `minWidth`, in a bordered
 * frame unless it already sits in one, and the `empty` state instead when there are no items.
 */
import type { ComponentProps, ReactNode } from 'react';
import { Card, Table, VisuallyHidden } from '@mantine/core';

/** What a cell may carry besides its content: a title, a maximum width, a test id. */
export type CellProps = ComponentProps<typeof Table.Td> & { [data: `data-${string}`]: string | undefined };

export interface Column<T> {
  /** the header; a hidden one is read by screen readers only (a column of buttons) */
  header: ReactNode;
  hidden?: boolean;
  cell: (row: T) => ReactNode;
  td?: (row: T) => CellProps;
}

export function DataTable<T>({
  rows,
  columns,
  rowKey,
  rowTestId,
  minWidth,
  testId,
  framed = true,
  empty,
  footer,
}: {
  rows: readonly T[];
  /** `false` leaves a column out (one the role may not use) */
  columns: readonly (Column<T> | false)[];
  rowKey: (row: T) => string | number;
  rowTestId?: (row: T) => string;
  minWidth: number;
  testId?: string;
  /** false: no frame of its own (the table sits in a card already) */
  framed?: boolean;
  /** shown instead of the table when there are no rows */
  empty?: ReactNode;
  /** below the table, inside the frame */
  footer?: ReactNode;
}) {
  if (rows.length === 0 && empty !== undefined) return <>{empty}</>;
  const shown = columns.filter((c): c is Column<T> => c !== false);
  const table = (
    <Table.ScrollContainer minWidth={minWidth}>
      <Table verticalSpacing="sm" data-testid={testId}>
        <Table.Thead>
          <Table.Tr>
            {shown.map((c, i) => (
              <Table.Th key={i}>{c.hidden ? <VisuallyHidden>{c.header}</VisuallyHidden> : c.header}</Table.Th>
            ))}
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {rows.map((row) => (
            <Table.Tr key={rowKey(row)} data-testid={rowTestId?.(row)}>
              {shown.map((c, i) => (
                <Table.Td key={i} {...c.td?.(row)}>
                  {c.cell(row)}
                </Table.Td>
              ))}
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
  if (!framed)
    return (
      <>
        {table}
        {footer}
      </>
    );
  return (
    <Card withBorder p={0}>
      {table}
      {footer}
    </Card>
  );
}
