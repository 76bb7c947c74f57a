/**
 * The fields editor (PUT /v1/processes/:id/fields, the whole list in order): add, edit, reorder
 * with Move up / Move down buttons (keyboard first; focus follows the moved field) and remove. A
 * refusal names each field and the number of tasks that would violate the change; it is shown in
 * words by that field.
 */
import { useEffect, useRef, useState } from 'react';
import {
  ActionIcon,
  Alert,
  Button,
  Card,
  Checkbox,
  Fieldset,
  Group,
  Select,
  SimpleGrid,
  Stack,
  TagsInput,
  Text,
  TextInput,
} from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useSaveFields } from '../../api/mutations';
import { ApiError, errorMessage } from '../../lib/http';
import type { Field, FieldDef, FieldType } from '../../lib/api-types';

const TYPES: { value: FieldType; label: string }[] = [
  { value: 'text', label: 'Text' },
  { value: 'number', label: 'Number' },
  { value: 'integer', label: 'Whole number' },
  { value: 'boolean', label: 'Yes / no' },
  { value: 'date', label: 'Date' },
  { value: 'datetime', label: 'Date and time' },
  { value: 'dropdown', label: 'Dropdown' },
  { value: 'email', label: 'Email' },
];

interface Row extends FieldDef {
  key: number;
}

let nextKey = 1;
const toRows = (fields: Field[]): Row[] =>
  fields.map((f) => ({
    key: nextKey++,
    name: f.name,
    label: f.label,
    type: f.type,
    required: f.required,
    isKey: f.isKey,
    unique: f.unique,
    options: f.options,
    ...(f.default !== null && f.default !== undefined ? { default: f.default } : {}),
  }));

function toBody(rows: Row[]): FieldDef[] {
  return rows.map(({ key: _k, ...f }) => ({
    name: f.name.trim(),
    label: f.label?.trim() ?? '',
    type: f.type,
    required: !!f.required,
    isKey: !!f.isKey,
    unique: !!f.isKey && !!f.unique,
    ...(f.type === 'dropdown' ? { options: f.options ?? [] } : {}),
    ...(f.default !== undefined ? { default: f.default } : {}),
  }));
}

export function FieldsEditor({ processId, fields, editable }: { processId: number; fields: Field[]; editable: boolean }) {
  const save = useSaveFields(processId);
  const [rows, setRows] = useState<Row[]>(() => toRows(fields));
  const [dirty, setDirty] = useState(false);
  const [focusAfterMove, setFocusAfterMove] = useState<string | null>(null);
  const listRef = useRef<HTMLDivElement>(null);
  // the server's version while nothing is being edited (another person's change, a live event)
  const serverJson = JSON.stringify(fields);
  useEffect(() => {
    if (!dirty) setRows(toRows(fields));
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [serverJson]);
  useEffect(() => {
    if (focusAfterMove) listRef.current?.querySelector<HTMLButtonElement>(`[data-focus="${focusAfterMove}"]`)?.focus();
    setFocusAfterMove(null);
  }, [focusAfterMove]);

  const change = (key: number, patch: Partial<FieldDef>) => {
    setDirty(true);
    setRows((rs) => rs.map((r) => (r.key === key ? { ...r, ...patch } : r)));
  };
  const move = (i: number, by: -1 | 1) => {
    const j = i + by;
    if (j < 0 || j >= rows.length) return;
    const next = [...rows];
    [next[i], next[j]] = [next[j], next[i]];
    setRows(next);
    setDirty(true);
    // at the top or bottom the button pressed is disabled: focus the other one
    const dir = (by === -1 && j === 0) || (by === 1 && j === rows.length - 1) ? (by === -1 ? 'down' : 'up') : by === -1 ? 'up' : 'down';
    setFocusAfterMove(`${dir}-${next[j].key}`);
  };

  const problems = save.error instanceof ApiError ? save.error.fieldErrors : [];
  const problemsOf = (r: Row, i: number) =>
    problems.filter((p) => (p.field ?? '').toLowerCase() === r.name.trim().toLowerCase() || (p.index === i && !p.field));
  const otherProblems = problems.filter((p) => !rows.some((r, i) => problemsOf(r, i).includes(p)));

  const submit = async () => {
    try {
      await save.mutateAsync(toBody(rows));
      setDirty(false);
      notifications.show({ color: 'teal', message: 'Fields saved.' });
    } catch {
      // shown below and by each field
    }
  };

  return (
    <Stack>
      <Text size="sm" c="dimmed">
        The fields of a task, in the order people see them. A task missing a required value waits in Needs data; a unique key field may not
        repeat among tasks not yet Solved.
      </Text>
      {rows.length === 0 && <Text>No fields: tasks accept any data and store it as given.</Text>}
      <Stack ref={listRef} gap="sm">
        {rows.map((r, i) => {
          const mine = problemsOf(r, i);
          const title = `Field ${i + 1}${r.name ? `: ${r.name}` : ''}`;
          return (
            <Card key={r.key} withBorder p="sm" data-testid={`field-${i}`}>
              <Fieldset legend={title} disabled={!editable} variant="unstyled">
                <Stack gap="xs">
                  <SimpleGrid cols={{ base: 1, sm: 3 }}>
                    <TextInput
                      label="Name"
                      description="Letters, digits and _; what Mates send"
                      value={r.name}
                      required
                      maxLength={64}
                      onChange={(e) => change(r.key, { name: e.currentTarget.value })}
                    />
                    <TextInput
                      label="Label"
                      description="What people see"
                      value={r.label ?? ''}
                      maxLength={200}
                      onChange={(e) => change(r.key, { label: e.currentTarget.value })}
                    />
                    <Select
                      label="Type"
                      description="Values are converted to it"
                      data={TYPES}
                      value={r.type}
                      allowDeselect={false}
                      onChange={(v) => v && change(r.key, { type: v as FieldType })}
                    />
                  </SimpleGrid>
                  {r.type === 'dropdown' && (
                    <TagsInput
                      label="Options"
                      description="Type an option and press Enter"
                      value={r.options ?? []}
                      onChange={(v) => change(r.key, { options: v })}
                      splitChars={[',', '\t']}
                      clearable
                      clearButtonProps={{ 'aria-label': 'Clear the options' }}
                    />
                  )}
                  <Group gap="lg">
                    <Checkbox
                      label="Required"
                      checked={!!r.required}
                      onChange={(e) => change(r.key, { required: e.currentTarget.checked })}
                    />
                    <Checkbox
                      label="Key (identifies the business object)"
                      checked={!!r.isKey}
                      onChange={(e) =>
                        change(r.key, { isKey: e.currentTarget.checked, ...(e.currentTarget.checked ? {} : { unique: false }) })
                      }
                    />
                    <Checkbox
                      label="Unique"
                      disabled={!r.isKey || !editable}
                      checked={!!r.isKey && !!r.unique}
                      onChange={(e) => change(r.key, { unique: e.currentTarget.checked })}
                    />
                  </Group>
                  {mine.length > 0 && (
                    <Alert color="red" p="xs" role="alert" title={`${r.name || 'This field'} cannot be changed like this`}>
                      {mine.map((p, k) => (
                        <Text key={k} size="sm">
                          {p.message}
                        </Text>
                      ))}
                    </Alert>
                  )}
                  {editable && (
                    <Group gap="xs" justify="flex-end">
                      <ActionIcon
                        variant="default"
                        size="lg"
                        aria-label={`Move ${r.name || `field ${i + 1}`} up`}
                        data-focus={`up-${r.key}`}
                        disabled={i === 0}
                        onClick={() => move(i, -1)}
                      >
                        <span aria-hidden>↑</span>
                      </ActionIcon>
                      <ActionIcon
                        variant="default"
                        size="lg"
                        aria-label={`Move ${r.name || `field ${i + 1}`} down`}
                        data-focus={`down-${r.key}`}
                        disabled={i === rows.length - 1}
                        onClick={() => move(i, 1)}
                      >
                        <span aria-hidden>↓</span>
                      </ActionIcon>
                      <Button
                        variant="subtle"
                        color="red"
                        onClick={() => {
                          setDirty(true);
                          setRows((rs) => rs.filter((x) => x.key !== r.key));
                        }}
                      >
                        Remove {r.name || `field ${i + 1}`}
                      </Button>
                    </Group>
                  )}
                </Stack>
              </Fieldset>
            </Card>
          );
        })}
      </Stack>
      {save.isError && (
        <Alert color="red" role="alert" title="The fields were not saved">
          <Text size="sm">{errorMessage(save.error)}</Text>
          {otherProblems.map((p, k) => (
            <Text key={k} size="sm">
              {p.message}
            </Text>
          ))}
        </Alert>
      )}
      {editable && (
        <Group>
          <Button
            variant="default"
            onClick={() => {
              setDirty(true);
              const key = nextKey++;
              setRows((rs) => [
                ...rs,
                { key, name: '', label: '', type: 'text', required: false, isKey: false, unique: false, options: [] },
              ]);
            }}
          >
            Add field
          </Button>
          <Button onClick={() => void submit()} loading={save.isPending} disabled={!dirty}>
            Save fields
          </Button>
          <Button
            variant="subtle"
            disabled={!dirty}
            onClick={() => {
              save.reset();
              setDirty(false);
              setRows(toRows(fields));
            }}
          >
            Undo changes
          </Button>
        </Group>
      )}
    </Stack>
  );
}
