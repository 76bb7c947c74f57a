/** The audit log: who did what when, before → after; filters kept in the URL (admins). */
import { Card, Group, List, Select, Stack, Table, Text, Title } from '@mantine/core';
import { useNavigate } from '@tanstack/react-router';
import { useSession } from '../../api/session';
import { useAudit, type AuditEntry } from '../../api/admin';
import { adminAuditRoute } from '../../router';
import { AUDIT_ACTIONS, AUDIT_TARGETS, auditChanges } from '../../lib/admin';
import { formatDateTime, formatRelative } from '../../lib/time';
import { Allowed } from '../../components/admin/NotAllowed';
import { Empty } from '../../components/Empty';
import { ErrorAlert } from '../../components/ErrorAlert';

function Actor({ a }: { a: AuditEntry['actor'] }) {
  const kind = a.type === 'user' ? 'person' : a.type === 'mate' ? 'Mate' : a.type;
  return (
    <>
      <Text size="sm" fw={600}>
        {a.name ?? (a.id !== null ? `${kind} ${a.id}` : kind)}
      </Text>
      <Text size="xs" c="dimmed">
        {kind}
      </Text>
    </>
  );
}

function Changes({ details }: { details: AuditEntry['details'] }) {
  const changes = auditChanges(details);
  if (changes.length === 0) return <Text size="sm">—</Text>;
  return (
    <List size="sm" listStyleType="none" spacing={2}>
      {changes.map((c) => (
        <List.Item key={c.key}>
          <Text span size="sm" c="dimmed">
            {c.key}:{' '}
          </Text>
          {c.before !== null ? (
            <Text span size="sm">
              {c.before} → {c.after}
            </Text>
          ) : (
            <Text span size="sm">
              {c.after}
            </Text>
          )}
        </List.Item>
      ))}
    </List>
  );
}

function AuditScreen() {
  const tz = useSession().tenant.timeZone;
  const search = adminAuditRoute.useSearch();
  const navigate = useNavigate({ from: '/admin/audit' });
  const entries = useAudit(search);
  const set = (key: 'action' | 'target', value: string | null) =>
    void navigate({ search: (s: typeof search) => ({ ...s, [key]: value ?? undefined }), replace: true });

  return (
    <Stack>
      <Title order={2} size="h3">
        Audit log
      </Title>
      <Group align="flex-end">
        <Select
          label="Action"
          placeholder="Any action"
          data={AUDIT_ACTIONS}
          value={search.action ?? null}
          onChange={(v) => set('action', v)}
          searchable
          clearable
          w={240}
        />
        <Select
          label="About"
          placeholder="Anything"
          data={AUDIT_TARGETS.map((t) => ({ value: t, label: t[0].toUpperCase() + t.slice(1) }))}
          value={search.target ?? null}
          onChange={(v) => set('target', v)}
          clearable
          w={200}
        />
      </Group>
      {entries.isPending ? (
        <Text>Loading the audit log…</Text>
      ) : entries.isError ? (
        <ErrorAlert error={entries.error} title="Could not load the audit log" retry={() => entries.refetch()} />
      ) : entries.data.length === 0 ? (
        <Empty title={search.action || search.target ? 'Nothing matches these filters' : 'Nothing recorded yet'}>
          Administrative actions (users, Mates, settings, secrets, processes, rules) are recorded here.
        </Empty>
      ) : (
        <Card withBorder p={0}>
          <Table.ScrollContainer minWidth={760}>
            <Table verticalSpacing="sm" data-testid="audit-table">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>When</Table.Th>
                  <Table.Th>Who</Table.Th>
                  <Table.Th>Action</Table.Th>
                  <Table.Th>On</Table.Th>
                  <Table.Th>Before → after</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {entries.data.map((e) => (
                  <Table.Tr key={e.id} data-testid="audit-row">
                    <Table.Td>
                      <Text size="sm">{formatDateTime(e.at, tz)}</Text>
                      <Text size="xs" c="dimmed">
                        {formatRelative(e.at)}
                      </Text>
                    </Table.Td>
                    <Table.Td>
                      <Actor a={e.actor} />
                    </Table.Td>
                    <Table.Td>
                      <Text size="sm" ff="monospace">
                        {e.action}
                      </Text>
                    </Table.Td>
                    <Table.Td>
                      <Text size="sm">
                        {e.targetType}
                        {e.targetId !== null ? ` ${e.targetId}` : ''}
                      </Text>
                    </Table.Td>
                    <Table.Td>
                      <Changes details={e.details} />
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
          {entries.data.length >= 200 && (
            <Text size="sm" c="dimmed" p="sm">
              The newest 200 entries are shown; narrow the filters to see older ones.
            </Text>
          )}
        </Card>
      )}
    </Stack>
  );
}

export function AuditPage() {
  return (
    <Allowed permission="users.manage" what="The audit log">
      <AuditScreen />
    </Allowed>
  );
}
