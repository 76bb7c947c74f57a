/**
 * The tables of the Administration screens (users, Mates, webhooks, deliveries, the audit log,
 * tokens): one header row, a row per item, a horizontal scroll below `minWidth`, in a bordered
 * frame unless it already sits in one, and the `empty` state instead when there are no items. On a
 * phone each item is a card instead: the first column as its title, the others as "header: value"
 * lines, and the column of buttons (a hidden header) at its foot, so nothing needs a sideways scroll.
 */
import type { ComponentProps, ReactNode } from 'react';
import { Box, Card, Group, Stack, Table, Text, VisuallyHidden } from '@mantine/core';
import { useMediaQuery } from '@mantine/hooks';

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
  stacked,
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
  /** cards instead of a table; by default below Mantine's xs breakpoint (a phone) */
  stacked?: boolean;
}) {
  const phone = useMediaQuery('(max-width: 36em)', false, { getInitialValueInEffect: false });
  if (rows.length === 0 && empty !== undefined) return <>{empty}</>;
  const shown = columns.filter((c): c is Column<T> => c !== false);
  if (stacked ?? phone)
    return (
      <Stack gap="xs">
        <Stack gap="xs" component="ul" data-testid={testId} style={{ listStyle: 'none', margin: 0, padding: 0 }}>
          {rows.map((row) => (
            <Card key={rowKey(row)} component="li" withBorder padding="sm" data-testid={rowTestId?.(row)}>
              <Stack gap={6}>
                {shown.map((c, i) => {
                  const cell = c.td?.(row) as ComponentProps<typeof Box> | undefined;
                  if (c.hidden)
                    return (
                      <Box key={i} {...cell}>
                        {c.cell(row)}
                      </Box>
                    );
                  if (i === 0)
                    return (
                      <Box key={i} {...cell} style={{ overflowWrap: 'anywhere' }}>
                        {c.cell(row)}
                      </Box>
                    );
                  return (
                    <Group key={i} gap="xs" wrap="nowrap" align="center">
                      <Text size="sm" c="dimmed" w="35%" style={{ flex: 'none' }}>
                        {c.header}
                      </Text>
                      <Box {...cell} style={{ minWidth: 0, flex: 1, overflowWrap: 'anywhere' }}>
                        {c.cell(row)}
                      </Box>
                    </Group>
                  );
                })}
              </Stack>
            </Card>
          ))}
        </Stack>
        {footer}
      </Stack>
    );
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
