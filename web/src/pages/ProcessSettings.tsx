/** A process's settings as the server reports them, its fields, and a developer tab with ready-to-paste requests. */
import { Breadcrumbs, Card, Code, Skeleton, Stack, Table, Tabs, Text, Title } from '@mantine/core';
import { useProcess } from '../api/queries';
import { settingsRoute } from '../router';
import { fieldLabel } from '../lib/values';
import { AnchorLink } from '../components/links';
import { ErrorAlert } from '../components/ErrorAlert';

function show(value: unknown): string {
  if (value === null || value === undefined) return 'None';
  if (typeof value === 'boolean') return value ? 'On' : 'Off';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

function words(key: string): string {
  return key.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/^./, (c) => c.toUpperCase());
}

export function ProcessSettingsPage() {
  const { processId } = settingsRoute.useParams();
  const process = useProcess(Number(processId));
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
      <Tabs defaultValue="settings">
        <Tabs.List>
          <Tabs.Tab value="settings">Settings</Tabs.Tab>
          <Tabs.Tab value="fields">Fields</Tabs.Tab>
          <Tabs.Tab value="developer">Developer</Tabs.Tab>
        </Tabs.List>
        <Tabs.Panel value="settings" pt="md">
          <Card withBorder>
            <Table>
              <Table.Tbody>
                {Object.entries(p.settings ?? {}).map(([k, v]) => (
                  <Table.Tr key={k}>
                    <Table.Th w="40%">{words(k)}</Table.Th>
                    <Table.Td>{show(v)}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Card>
        </Tabs.Panel>
        <Tabs.Panel value="fields" pt="md">
          <Card withBorder>
            {p.fields.length === 0 ? (
              <Text c="dimmed">No fields: tasks accept any data.</Text>
            ) : (
              <Table>
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Name</Table.Th>
                    <Table.Th>Label</Table.Th>
                    <Table.Th>Type</Table.Th>
                    <Table.Th>Required</Table.Th>
                    <Table.Th>Key</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {p.fields.map((f) => (
                    <Table.Tr key={f.name}>
                      <Table.Td ff="monospace">{f.name}</Table.Td>
                      <Table.Td>{fieldLabel(f)}</Table.Td>
                      <Table.Td>{f.type}</Table.Td>
                      <Table.Td>{f.required ? 'Yes' : 'No'}</Table.Td>
                      <Table.Td>{f.isKey ? (f.unique ? 'Unique key' : 'Key') : ''}</Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            )}
          </Card>
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
