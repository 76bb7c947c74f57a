/**
 * What narrows a queue view: the free-text search (written to the URL after a pause in typing), the
 * error flag in Manual, a filter on a field's value, and the active field filters to remove.
 */
import { useEffect, useState } from 'react';
import { Badge, Button, CloseButton, Group, Popover, Select, Stack, TextInput } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import type { Field, QueueName } from '../../lib/api-types';
import type { QueueSearch } from '../../lib/queue-search';
import { fieldLabel } from '../../lib/values';

/** ms of no typing before the search goes to the URL (and the API) */
const TYPING_PAUSE = 300;

export function QueueToolbar({
  search,
  queue,
  fields,
  onSearch,
}: {
  search: QueueSearch;
  queue: QueueName;
  fields: Field[];
  onSearch: (next: QueueSearch, replace?: boolean) => void;
}) {
  return (
    <>
      <Group gap="xs" align="flex-end">
        <SearchBox value={search.q} onChange={(q) => onSearch({ ...search, q }, true)} />
        {queue === 'Manual' && (
          <Select
            label="Errors"
            data={[
              { value: 'all', label: 'With and without errors' },
              { value: 'true', label: 'Errors only' },
              { value: 'false', label: 'Without errors' },
            ]}
            value={search.error === undefined ? 'all' : String(search.error)}
            onChange={(v) => onSearch({ ...search, error: v === 'true' ? true : v === 'false' ? false : undefined })}
            allowDeselect={false}
            w={220}
          />
        )}
        <FieldFilter fields={fields} onAdd={(n, v) => onSearch({ ...search, f: { ...search.f, [n]: v } })} />
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
                      onSearch({ ...search, f: Object.keys(rest).length ? rest : undefined });
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
    </>
  );
}

/** The search box: what is typed shows at once, and reaches `onChange` after a pause (or from the URL, when it changes there). */
function SearchBox({ value, onChange }: { value: string | undefined; onChange: (q: string | undefined) => void }) {
  const [text, setText] = useState(value ?? '');
  const [debounced] = useDebouncedValue(text, TYPING_PAUSE);
  useEffect(() => {
    if ((debounced || undefined) !== value) onChange(debounced || undefined);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [debounced]);
  useEffect(() => setText(value ?? ''), [value]);
  return (
    <TextInput
      label="Search"
      placeholder="Search this queue"
      value={text}
      onChange={(e) => setText(e.currentTarget.value)}
      rightSection={text ? <CloseButton aria-label="Clear search" onClick={() => setText('')} /> : null}
      w={{ base: '100%', sm: 280 }}
    />
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
