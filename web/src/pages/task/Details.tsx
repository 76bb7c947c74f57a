/** The task's dates and retries, and its KPI events. */
import { Card, Stack, Table, Text, Title } from '@mantine/core';
import type { TaskDetail } from '../../lib/api-types';
import { formatDateTime, formatDuration } from '../../lib/time';

export function Details({ task: t, tz }: { task: TaskDetail; tz: string }) {
  return (
    <Stack>
      <Card withBorder>
        <Title order={2} size="h4" mb="sm">
          Details
        </Title>
        <Table variant="vertical" layout="fixed" withRowBorders={false}>
          <Table.Tbody>
            <Table.Tr>
              <Table.Th w={120}>Created</Table.Th>
              <Table.Td>{formatDateTime(t.createdAt, tz)}</Table.Td>
            </Table.Tr>
            <Table.Tr>
              <Table.Th>Changed</Table.Th>
              <Table.Td>{formatDateTime(t.updatedAt, tz)}</Table.Td>
            </Table.Tr>
            <Table.Tr>
              <Table.Th>Active from</Table.Th>
              <Table.Td>{formatDateTime(t.activationDate, tz)}</Table.Td>
            </Table.Tr>
            <Table.Tr>
              <Table.Th>Deadline</Table.Th>
              <Table.Td>{t.deadline ? formatDateTime(t.deadline, tz) : 'None'}</Table.Td>
            </Table.Tr>
            <Table.Tr>
              <Table.Th>Retries</Table.Th>
              <Table.Td>{t.retryCount}</Table.Td>
            </Table.Tr>
          </Table.Tbody>
        </Table>
      </Card>
      <Card withBorder>
        <Title order={2} size="h4" mb="sm">
          KPI events
        </Title>
        {t.kpiEvents.length === 0 ? (
          <Text c="dimmed">None yet.</Text>
        ) : (
          <Table>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>When</Table.Th>
                <Table.Th>Outcome</Table.Th>
                <Table.Th>Entries</Table.Th>
                <Table.Th>Saved</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {t.kpiEvents.map((k, i) => (
                <Table.Tr key={i}>
                  <Table.Td>{formatDateTime(k.at, tz)}</Table.Td>
                  <Table.Td>{k.outcome ?? ''}</Table.Td>
                  <Table.Td>{k.entries}</Table.Td>
                  <Table.Td>{formatDuration(k.secondsSaved)}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
      </Card>
    </Stack>
  );
}
