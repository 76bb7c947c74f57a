/**
 * A process's page of settings: the process (rename, Stop/Start, archive), every setting, the fields
 * editor, the rules editor and a developer tab with ready-to-paste requests. Editable where the
 * role allows (client/src/permissions.ts); the open tab is in the URL (?tab=fields).
 */
import { Breadcrumbs, Card, Code, Skeleton, Stack, Tabs, Text, Title } from '@mantine/core';
import { getRouteApi } from '@tanstack/react-router';
import { useLiveQuery } from '../api/live';
import { processQuery } from '../api/queries';
import { useSession } from '../api/session';
import { can } from '../lib/roles';
import { SETTINGS_TABS, type SettingsTab } from '../lib/settings';
import { AnchorLink } from '../components/links';
import { ErrorAlert } from '../components/ErrorAlert';
import { ProcessAdmin } from './process/ProcessAdmin';
import { SettingsForm } from './process/SettingsForm';
import { FieldsEditor } from './process/FieldsEditor';
import { RulesEditor } from './process/RulesEditor';

const route = getRouteApi('/_app/processes/$processId/settings');

export function ProcessSettingsPage() {
  const { processId } = route.useParams();
  const { tab = 'settings' } = route.useSearch();
  const navigate = route.useNavigate();
  const role = useSession().user.role;
  const process = useLiveQuery(processQuery(Number(processId)));
  if (process.isPending) return <Skeleton h={300} />;
  if (process.isError) return <ErrorAlert error={process.error} title="Could not load the process" />;
  const p = process.data;
  const origin = window.location.origin;
  return (
    <Stack>
      <Breadcrumbs>
        <AnchorLink to="/">Overview</AnchorLink>
        <AnchorLink to="/processes/$processId/queue" params={{ processId }} search={{ queue: 'Ready' }}>
          {p.name || p.key}
        </AnchorLink>
        <Text>Settings</Text>
      </Breadcrumbs>
      <Title order={1} size="h2">
        Settings of {p.name || p.key}
      </Title>
      {p.description && <Text style={{ whiteSpace: 'pre-wrap' }}>{p.description}</Text>}
      <Tabs
        value={tab}
        keepMounted={false}
        onChange={(v) =>
          v &&
          void navigate({ to: '/processes/$processId/settings', params: { processId }, search: { tab: v as SettingsTab }, replace: true })
        }
      >
        <Tabs.List>
          {SETTINGS_TABS.map((t) => (
            <Tabs.Tab key={t} value={t}>
              {t[0].toUpperCase() + t.slice(1)}
            </Tabs.Tab>
          ))}
        </Tabs.List>
        <Tabs.Panel value="settings" pt="md">
          <Stack>
            <ProcessAdmin process={p} canManage={can(role, 'processes.manage')} canGate={can(role, 'processes.gate')} />
            <SettingsForm key={p.id} process={p} editable={can(role, 'processes.manage')} />
          </Stack>
        </Tabs.Panel>
        <Tabs.Panel value="fields" pt="md">
          <FieldsEditor processId={p.id} fields={p.fields} editable={can(role, 'processes.manage')} />
        </Tabs.Panel>
        <Tabs.Panel value="rules" pt="md">
          <RulesEditor processId={p.id} canValue={can(role, 'rules.values')} canDefine={can(role, 'processes.manage')} />
        </Tabs.Panel>
        <Tabs.Panel value="developer" pt="md">
          <Card withBorder>
            <Stack>
              <Text>
                ProcessKey: <Code>{p.key}</Code>
              </Text>
              <Text size="sm">Get a token for a Mate, then take the next task:</Text>
              <Code block>{`curl -s -X POST ${origin}/connect/token \\
  -d grant_type=password -d client_id=<ClientId> -d client_secret=<ClientSecret> \\
  -d username=<MateUsername> -d password=<MatePassword>

curl -s -X POST ${origin}/api/TakeNext/${p.key} -H "Authorization: Bearer <token>"`}</Code>
            </Stack>
          </Card>
        </Tabs.Panel>
      </Tabs>
    </Stack>
  );
}
