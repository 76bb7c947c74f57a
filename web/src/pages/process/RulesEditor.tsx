/**
 * The rules editor (docs/product.md §7): agents set values (rules.values), developers and
 * administrators also add, rename, retype, describe and delete rules (processes.manage).
 */
import { useEffect, useState } from 'react';
import { Alert, Badge, Button, Card, Group, Modal, Select, Skeleton, Stack, Text, Textarea, TextInput, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useQuery } from '@tanstack/react-query';
import { useRuleWrite } from '../../api/mutations';
import { rulesQuery } from '../../api/queries';
import { useSession } from '../../api/session';
import { errorMessage } from '../../lib/http';
import type { Rule, RuleType } from '../../lib/api-types';
import { formatWhen } from '../../lib/time';
import { ErrorAlert } from '../../components/ErrorAlert';
import { emptyRuleValue, RuleValueInput } from '../../components/RuleValueInput';

const RULE_TYPES: { value: RuleType; label: string }[] = [
  { value: 'text', label: 'Text' },
  { value: 'number', label: 'Number' },
  { value: 'boolean', label: 'Yes / no' },
  { value: 'list', label: 'List' },
  { value: 'table', label: 'Table' },
  { value: 'richText', label: 'Rich text' },
];
const typeLabel = (t: RuleType) => RULE_TYPES.find((x) => x.value === t)?.label ?? t;

function RuleCard({ processId, rule, canValue, canDefine }: { processId: number; rule: Rule; canValue: boolean; canDefine: boolean }) {
  const write = useRuleWrite(processId);
  const tz = useSession().tenant.timeZone;
  const [value, setValue] = useState<unknown>(rule.value);
  const [dirty, setDirty] = useState(false);
  const [defining, setDefining] = useState(false);
  const [def, setDef] = useState({ name: rule.name, type: rule.type, description: rule.description });
  const [confirmDelete, setConfirmDelete] = useState(false);
  const [failure, setFailure] = useState<string | null>(null);
  useEffect(() => {
    if (!dirty) setValue(rule.value);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [rule.updatedAt]);

  const act = async (v: Parameters<typeof write.mutateAsync>[0], done: string) => {
    setFailure(null);
    try {
      await write.mutateAsync(v);
      notifications.show({ color: 'teal', message: done });
      return true;
    } catch (err) {
      setFailure(errorMessage(err));
      return false;
    }
  };

  return (
    <Card withBorder component="section" aria-label={`Rule ${rule.name}`} data-testid={`rule-${rule.name}`}>
      <Stack gap="sm">
        <Group justify="space-between" wrap="wrap">
          <Group gap="xs">
            <Title order={3} size="h5" ff="monospace">
              {rule.name}
            </Title>
            <Badge variant="light">{typeLabel(rule.type)}</Badge>
          </Group>
          <Text size="xs" c="dimmed">
            Changed {formatWhen(rule.updatedAt, tz)}
          </Text>
        </Group>
        {rule.description && (
          <Text size="sm" style={{ whiteSpace: 'pre-wrap' }}>
            {rule.description}
          </Text>
        )}
        {failure && (
          <Alert color="red" role="alert" title="The rule was not changed">
            {failure}
          </Alert>
        )}
        {defining ? (
          <form
            onSubmit={(e) => {
              e.preventDefault();
              const body: { name?: string; type?: RuleType; description?: string; value?: unknown } = {};
              if (def.name !== rule.name) body.name = def.name.trim();
              if (def.type !== rule.type) {
                body.type = def.type;
                body.value = null;
              }
              if (def.description !== rule.description) body.description = def.description;
              void act({ kind: 'define', ruleId: rule.id, body }, 'Rule changed.').then((ok) => {
                if (ok) {
                  setDefining(false);
                  setDirty(false);
                }
              });
            }}
          >
            <Stack gap="xs">
              <Group grow align="flex-start">
                <TextInput label="Rule name" value={def.name} onChange={(e) => setDef({ ...def, name: e.currentTarget.value })} required />
                <Select
                  label="Type"
                  data={RULE_TYPES}
                  value={def.type}
                  allowDeselect={false}
                  onChange={(t) => t && setDef({ ...def, type: t as RuleType })}
                  description={def.type !== rule.type ? 'Changing the type clears the value' : undefined}
                />
              </Group>
              <Textarea
                label="Description"
                value={def.description}
                autosize
                onChange={(e) => setDef({ ...def, description: e.currentTarget.value })}
              />
              <Group gap="xs">
                <Button type="submit" loading={write.isPending}>
                  Save rule
                </Button>
                <Button variant="default" onClick={() => setDefining(false)}>
                  Cancel
                </Button>
              </Group>
            </Stack>
          </form>
        ) : (
          <>
            <RuleValueInput
              name={rule.name}
              type={rule.type}
              value={value}
              disabled={!canValue}
              onChange={(v) => {
                setDirty(true);
                setValue(v);
              }}
            />
            {(canValue || canDefine) && (
              <Group gap="xs">
                {canValue && (
                  <Button
                    disabled={!dirty}
                    loading={write.isPending}
                    onClick={() =>
                      void act({ kind: 'value', ruleId: rule.id, value }, `${rule.name} saved.`).then((ok) => ok && setDirty(false))
                    }
                  >
                    Save value
                  </Button>
                )}
                {canValue && dirty && (
                  <Button
                    variant="default"
                    onClick={() => {
                      setValue(rule.value);
                      setDirty(false);
                    }}
                  >
                    Undo
                  </Button>
                )}
                {canDefine && (
                  <Button
                    variant="default"
                    onClick={() => {
                      setDef({ name: rule.name, type: rule.type, description: rule.description });
                      setDefining(true);
                    }}
                  >
                    Edit rule
                  </Button>
                )}
                {canDefine && (
                  <Button variant="subtle" color="red" onClick={() => setConfirmDelete(true)}>
                    Delete rule
                  </Button>
                )}
              </Group>
            )}
          </>
        )}
      </Stack>
      <Modal opened={confirmDelete} onClose={() => setConfirmDelete(false)} title={`Delete the rule ${rule.name}?`}>
        <Stack>
          <Text size="sm">Mates asking for the process&apos;s rules (GetRules) will no longer get {rule.name}.</Text>
          <Group justify="flex-end">
            <Button variant="default" onClick={() => setConfirmDelete(false)}>
              Cancel
            </Button>
            <Button
              color="red"
              onClick={() => void act({ kind: 'delete', ruleId: rule.id }, `${rule.name} deleted.`).then(() => setConfirmDelete(false))}
            >
              Delete rule
            </Button>
          </Group>
        </Stack>
      </Modal>
    </Card>
  );
}

function NewRule({ processId, onDone }: { processId: number; onDone: () => void }) {
  const write = useRuleWrite(processId);
  const [name, setName] = useState('');
  const [type, setType] = useState<RuleType>('text');
  const [description, setDescription] = useState('');
  const [value, setValue] = useState<unknown>('');
  return (
    <Card withBorder component="section" aria-label="New rule">
      <form
        onSubmit={(e) => {
          e.preventDefault();
          write.mutate(
            { kind: 'create', body: { name: name.trim(), type, value, description } },
            {
              onSuccess: () => {
                notifications.show({ color: 'teal', message: `Rule ${name.trim()} added.` });
                onDone();
              },
            },
          );
        }}
      >
        <Stack gap="sm">
          <Title order={3} size="h5">
            New rule
          </Title>
          {write.isError && (
            <Alert color="red" role="alert" title="The rule was not added">
              {errorMessage(write.error)}
            </Alert>
          )}
          <Group grow align="flex-start">
            <TextInput
              label="Rule name"
              description="Letters, digits and _; the key Mates read"
              value={name}
              onChange={(e) => setName(e.currentTarget.value)}
              required
              maxLength={64}
            />
            <Select
              label="Type"
              data={RULE_TYPES}
              value={type}
              allowDeselect={false}
              onChange={(t) => {
                if (!t) return;
                setType(t as RuleType);
                setValue(emptyRuleValue(t as RuleType));
              }}
            />
          </Group>
          <Textarea label="Description" value={description} autosize onChange={(e) => setDescription(e.currentTarget.value)} />
          <RuleValueInput name={name.trim() || 'the new rule'} type={type} value={value} onChange={setValue} />
          <Group gap="xs">
            <Button type="submit" loading={write.isPending} disabled={!name.trim()}>
              Add rule
            </Button>
            <Button variant="default" onClick={onDone}>
              Cancel
            </Button>
          </Group>
        </Stack>
      </form>
    </Card>
  );
}

export function RulesEditor({ processId, canValue, canDefine }: { processId: number; canValue: boolean; canDefine: boolean }) {
  const rules = useQuery(rulesQuery(processId));
  const [adding, setAdding] = useState(false);
  if (rules.isPending) return <Skeleton h={200} />;
  if (rules.isError) return <ErrorAlert error={rules.error} title="Could not load the rules" retry={() => void rules.refetch()} />;
  return (
    <Stack>
      <Text size="sm" c="dimmed">
        Rules are business values the process&apos;s Mates read (GetRules): limits, lists, lookup tables.{' '}
        {canDefine ? 'You can define rules and set their values.' : canValue ? 'You can set their values.' : 'Your role can read them.'}
      </Text>
      {rules.data.length === 0 && !adding && <Text>No rules yet.</Text>}
      {rules.data.map((r) => (
        <RuleCard key={r.id} processId={processId} rule={r} canValue={canValue} canDefine={canDefine} />
      ))}
      {canDefine &&
        (adding ? (
          <NewRule processId={processId} onDone={() => setAdding(false)} />
        ) : (
          <Button variant="default" w="fit-content" onClick={() => setAdding(true)}>
            New rule
          </Button>
        ))}
    </Stack>
  );
}
