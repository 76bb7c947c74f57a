/**
 * A rule's value by its type (docs/product.md §7): text, number, yes/no, a list of strings, a
 * table of rows, rich text. Cells copied from a spreadsheet (tab-separated lines) pasted into the
 * paste box of a list or table fill it. Rich text is edited and shown as text, never as HTML.
 */
import { useState } from 'react';
import {
  ActionIcon,
  Button,
  Group,
  NumberInput,
  ScrollArea,
  Stack,
  Switch,
  Table,
  Text,
  Textarea,
  TextInput,
  VisuallyHidden,
} from '@mantine/core';
import type { RuleType } from '../lib/api-types';
import { cellsToList, cellsToTable, parseCells, tableColumns } from '../lib/paste';

type Row = Record<string, string | number | boolean | null>;

/** The empty value of a type (what a new rule starts with). */
export function emptyRuleValue(type: RuleType): unknown {
  return type === 'list' || type === 'table' ? [] : type === 'boolean' ? false : type === 'number' ? null : '';
}

function PasteBox({ label, help, onCells }: { label: string; help: string; onCells: (cells: string[][]) => void }) {
  return (
    <Textarea
      label={label}
      description={help}
      placeholder="Paste here (Ctrl+V or ⌘V)"
      autosize
      minRows={1}
      maxRows={3}
      value=""
      onChange={() => {}}
      onPaste={(e) => {
        e.preventDefault();
        const cells = parseCells(e.clipboardData.getData('text/plain'));
        if (cells.length) onCells(cells);
      }}
    />
  );
}

function ListInput({
  name,
  value,
  onChange,
  disabled,
}: {
  name: string;
  value: string[];
  onChange: (v: string[]) => void;
  disabled?: boolean;
}) {
  return (
    <Stack gap="xs">
      {value.length === 0 && <Text size="sm">The list is empty.</Text>}
      {value.map((item, i) => (
        <Group key={i} gap="xs" wrap="nowrap">
          <TextInput
            aria-label={`${name}, item ${i + 1}`}
            value={item}
            disabled={disabled}
            onChange={(e) => onChange(value.map((x, j) => (j === i ? e.currentTarget.value : x)))}
            style={{ flex: 1 }}
          />
          {!disabled && (
            <ActionIcon
              variant="subtle"
              color="red"
              size="lg"
              aria-label={`Remove item ${i + 1}`}
              onClick={() => onChange(value.filter((_, j) => j !== i))}
            >
              <span aria-hidden>×</span>
            </ActionIcon>
          )}
        </Group>
      ))}
      {!disabled && (
        <>
          <Button variant="default" size="xs" w="fit-content" onClick={() => onChange([...value, ''])}>
            Add item
          </Button>
          <PasteBox
            label={`Paste a list into ${name}`}
            help="Cells copied from a spreadsheet replace the list: one item per cell."
            onCells={(cells) => onChange(cellsToList(cells))}
          />
        </>
      )}
    </Stack>
  );
}

function TableInput({ name, value, onChange, disabled }: { name: string; value: Row[]; onChange: (v: Row[]) => void; disabled?: boolean }) {
  const [extra, setExtra] = useState<string[]>([]);
  const [newColumn, setNewColumn] = useState('');
  const columns = [...tableColumns(value), ...extra.filter((c) => !tableColumns(value).includes(c))];
  const setCell = (r: number, c: string, v: string) => onChange(value.map((row, i) => (i === r ? { ...row, [c]: v } : row)));
  return (
    <Stack gap="xs">
      {columns.length === 0 ? (
        <Text size="sm">The table is empty.</Text>
      ) : (
        <ScrollArea type="auto" viewportProps={{ tabIndex: 0, role: 'region', 'aria-label': `Table ${name}` }}>
          <Table withTableBorder withColumnBorders miw={columns.length * 140}>
            <Table.Thead>
              <Table.Tr>
                <Table.Th w={50}>Row</Table.Th>
                {columns.map((c) => (
                  <Table.Th key={c}>{c}</Table.Th>
                ))}
                {!disabled && (
                  <Table.Th w={50}>
                    <VisuallyHidden>Remove</VisuallyHidden>
                  </Table.Th>
                )}
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {value.map((row, r) => (
                <Table.Tr key={r}>
                  <Table.Td>{r + 1}</Table.Td>
                  {columns.map((c) => (
                    <Table.Td key={c}>
                      {disabled ? (
                        <Text size="sm">{row[c] === null || row[c] === undefined ? '' : String(row[c])}</Text>
                      ) : (
                        <TextInput
                          size="xs"
                          aria-label={`${c}, row ${r + 1}`}
                          value={row[c] === null || row[c] === undefined ? '' : String(row[c])}
                          onChange={(e) => setCell(r, c, e.currentTarget.value)}
                        />
                      )}
                    </Table.Td>
                  ))}
                  {!disabled && (
                    <Table.Td>
                      <ActionIcon
                        variant="subtle"
                        color="red"
                        aria-label={`Remove row ${r + 1}`}
                        onClick={() => onChange(value.filter((_, i) => i !== r))}
                      >
                        <span aria-hidden>×</span>
                      </ActionIcon>
                    </Table.Td>
                  )}
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </ScrollArea>
      )}
      {!disabled && (
        <>
          <Group gap="xs" align="flex-end">
            <Button
              variant="default"
              size="xs"
              disabled={columns.length === 0}
              onClick={() => onChange([...value, Object.fromEntries(columns.map((c) => [c, '']))])}
            >
              Add row
            </Button>
            <TextInput size="xs" label="New column" value={newColumn} onChange={(e) => setNewColumn(e.currentTarget.value)} />
            <Button
              variant="default"
              size="xs"
              disabled={!newColumn.trim() || columns.includes(newColumn.trim())}
              onClick={() => {
                const c = newColumn.trim();
                setExtra((x) => [...x, c]);
                onChange(value.map((row) => ({ ...row, [c]: '' })));
                setNewColumn('');
              }}
            >
              Add column
            </Button>
          </Group>
          <PasteBox
            label={`Paste a table into ${name}`}
            help="Cells copied from a spreadsheet replace the table: the first row names the columns."
            onCells={(cells) => {
              const t = cellsToTable(cells);
              setExtra(t.columns);
              onChange(t.rows);
            }}
          />
        </>
      )}
    </Stack>
  );
}

export function RuleValueInput({
  name,
  type,
  value,
  onChange,
  disabled,
}: {
  name: string;
  type: RuleType;
  value: unknown;
  onChange: (v: unknown) => void;
  disabled?: boolean;
}) {
  const label = `Value of ${name}`;
  switch (type) {
    case 'number':
      return (
        <NumberInput
          label={label}
          value={typeof value === 'number' ? value : ''}
          onChange={(v) => onChange(v === '' ? null : Number(v))}
          disabled={disabled}
          placeholder="Not set"
        />
      );
    case 'boolean':
      return <Switch label={label} checked={value === true} onChange={(e) => onChange(e.currentTarget.checked)} disabled={disabled} />;
    case 'list':
      return (
        <Stack gap={4}>
          <Text size="sm" fw={500}>
            {label}
          </Text>
          <ListInput name={name} value={Array.isArray(value) ? (value as string[]) : []} onChange={onChange} disabled={disabled} />
        </Stack>
      );
    case 'table':
      return (
        <Stack gap={4}>
          <Text size="sm" fw={500}>
            {label}
          </Text>
          <TableInput name={name} value={Array.isArray(value) ? (value as Row[]) : []} onChange={onChange} disabled={disabled} />
        </Stack>
      );
    case 'richText':
      return disabled ? (
        <Stack gap={4}>
          <Text size="sm" fw={500}>
            {label}
          </Text>
          <Text style={{ whiteSpace: 'pre-wrap' }}>{typeof value === 'string' && value ? value : 'Not set'}</Text>
        </Stack>
      ) : (
        <Textarea
          label={label}
          description="Formatted text; shown as written (markup is not run)"
          autosize
          minRows={3}
          value={typeof value === 'string' ? value : ''}
          onChange={(e) => onChange(e.currentTarget.value)}
        />
      );
    default:
      return (
        <TextInput
          label={label}
          value={typeof value === 'string' ? value : ''}
          onChange={(e) => onChange(e.currentTarget.value)}
          disabled={disabled}
        />
      );
  }
}
