/** The audit log: who did what when, before → after; filters kept in the URL (admins). */
import { Group, List, Select, Stack, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { getRouteApi } from '@tanstack/react-router';
import { auditQuery } from '../../api/queries';
import { useSession } from '../../api/session';
import type { AuditEntry } from '../../lib/api-types';
import { AUDIT_ACTIONS, AUDIT_TARGETS, auditChanges } from '../../lib/admin';
import { formatDateTime, formatRelative } from '../../lib/time';
import { Allowed } from '../../components/admin/NotAllowed';
import { DataTable } from '../../components/DataTable';
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

const route = getRouteApi('/_app/admin/audit');

function AuditScreen() {
  const tz = useSession().tenant.timeZone;
  const search = route.useSearch();
  const navigate = route.useNavigate();
  const entries = useQuery(auditQuery(search));
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
      ) : (
        <DataTable
          rows={entries.data}
          rowKey={(e) => e.id}
          rowTestId={() => 'audit-row'}
          testId="audit-table"
          minWidth={760}
          empty={
            <Empty title={search.action || search.target ? 'Nothing matches these filters' : 'Nothing recorded yet'}>
              Administrative actions (users, Mates, settings, secrets, processes, rules) are recorded here.
            </Empty>
          }
          footer={
            entries.data.length >= 200 && (
              <Text size="sm" c="dimmed" p="sm">
                The newest 200 entries are shown; narrow the filters to see older ones.
              </Text>
            )
          }
          columns={[
            {
              header: 'When',
              cell: (e) => (
                <>
                  <Text size="sm">{formatDateTime(e.at, tz)}</Text>
                  <Text size="xs" c="dimmed">
                    {formatRelative(e.at)}
                  </Text>
                </>
              ),
            },
            { header: 'Who', cell: (e) => <Actor a={e.actor} /> },
            {
              header: 'Action',
              cell: (e) => (
                <Text size="sm" ff="monospace">
                  {e.action}
                </Text>
              ),
            },
            {
              header: 'On',
              cell: (e) => (
                <Text size="sm">
                  {e.targetType}
                  {e.targetId !== null ? ` ${e.targetId}` : ''}
                </Text>
              ),
            },
            { header: 'Before → after', cell: (e) => <Changes details={e.details} /> },
          ]}
        />
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
