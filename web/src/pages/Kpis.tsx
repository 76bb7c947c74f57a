/**
 * The KPI dashboard (GET /v1/kpis, docs/product.md §6): time saved and tasks by outcome over time,
 * for one process or the tenant, by day, week or month, over a date range in the tenant's time
 * zone; the same numbers as a table (the charts' accessible alternative) and the events as CSV.
 * Loaded on first use: the charts library is most of its weight.
 */
import { Anchor, Card, Group, Loader, ScrollArea, Select, SegmentedControl, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import { AreaChart, BarChart } from '@mantine/charts';
import { DatePickerInput } from '@mantine/dates';
import { useQuery } from '@tanstack/react-query';
import { getRouteApi } from '@tanstack/react-router';
import '@mantine/charts/styles.css';
import { useLiveQuery } from '../api/live';
import { kpisQuery, processesQuery } from '../api/queries';
import { useSession } from '../api/session';
import { exportHref, lastDays, OUTCOMES, periodLabel, pivot, totals, type KpiSearch, type Period } from '../lib/kpi';
import { formatDuration, zoneLabel } from '../lib/time';
import { ErrorAlert } from '../components/ErrorAlert';
import { Empty } from '../components/Empty';

const COLORS: Record<string, string> = { Solved: 'teal.8', Manual: 'blue.8', Error: 'red.8', Retry: 'orange.8', Run: 'grape.8' };
const CHART_OUTCOMES = OUTCOMES.filter((o) => o !== 'Run');

function Stat({ label, value, testId }: { label: string; value: string; testId: string }) {
  return (
    <Card withBorder>
      <Text size="sm" c="dimmed">
        {label}
      </Text>
      <Text fz="xl" fw={700} data-testid={testId}>
        {value}
      </Text>
    </Card>
  );
}

const route = getRouteApi('/_app/kpis');

export function KpisPage() {
  const search = route.useSearch();
  const navigate = route.useNavigate();
  const tz = useSession().tenant.timeZone;
  const fallback = lastDays(30, tz);
  const from = search.from ?? fallback.from;
  const to = search.to ?? fallback.to;
  const by: Period = search.by ?? 'day';
  const processes = useLiveQuery(processesQuery());
  const kpis = useQuery(kpisQuery({ from, to, by, processId: search.process }));
  const set = (patch: Partial<KpiSearch>) => void navigate({ to: '/kpis', search: { ...search, from, to, ...patch }, replace: true });

  const points = kpis.data ? pivot(kpis.data.items, from, to, by).map((p) => ({ ...p, label: periodLabel(p.period, by) })) : [];
  const sum = totals(points);
  const processName = search.process ? processes.data?.find((p) => p.id === search.process)?.name : undefined;
  const scope = search.process ? (processName ?? `process ${search.process}`) : 'all processes';

  return (
    <Stack>
      <Title order={1} size="h2">
        KPIs
      </Title>
      <Card withBorder>
        <Group align="flex-end" gap="md" wrap="wrap">
          <Select
            label="Process"
            data={[
              { value: '', label: 'All processes' },
              ...(processes.data ?? []).map((p) => ({ value: String(p.id), label: p.name || p.key })),
            ]}
            value={search.process ? String(search.process) : ''}
            onChange={(v) => set({ process: v ? Number(v) : undefined })}
            allowDeselect={false}
            w={{ base: '100%', sm: 240 }}
          />
          <DatePickerInput
            type="range"
            label="Dates"
            description={`Days in ${zoneLabel(tz)}`}
            valueFormat="D MMM YYYY"
            value={[from, to]}
            onChange={([a, b]) => {
              if (typeof a === 'string' && typeof b === 'string') set({ from: a.slice(0, 10), to: b.slice(0, 10) });
            }}
            allowSingleDateInRange
            w={{ base: '100%', sm: 280 }}
          />
          <Stack gap={4}>
            <Text size="sm" fw={500} id="kpi-by">
              Group by
            </Text>
            <SegmentedControl
              color="blue"
              transitionDuration={0}
              aria-labelledby="kpi-by"
              value={by}
              onChange={(v) => set({ by: v as Period })}
              data={[
                { value: 'day', label: 'Day' },
                { value: 'week', label: 'Week' },
                { value: 'month', label: 'Month' },
              ]}
            />
          </Stack>
          <Anchor href={exportHref(from, to, search.process)} download="kpi-events.csv" mb={6}>
            Download the events as CSV
          </Anchor>
        </Group>
      </Card>
      {kpis.isPending ? (
        <Group>
          <Loader size="sm" aria-label="Loading the KPIs" />
        </Group>
      ) : kpis.isError ? (
        <ErrorAlert error={kpis.error} title="Could not load the KPIs" retry={() => void kpis.refetch()} />
      ) : (
        <>
          <SimpleGrid cols={{ base: 1, xs: 3 }}>
            <Stat label="Time saved" value={formatDuration(sum.secondsSaved)} testId="kpi-time-saved" />
            <Stat label="Tasks solved" value={sum.Solved.toLocaleString()} testId="kpi-solved" />
            <Stat label="Tasks handed back" value={sum.tasks.toLocaleString()} testId="kpi-tasks" />
          </SimpleGrid>
          {sum.tasks === 0 && sum.Run === 0 ? (
            <Empty title="No KPI events in this range">
              Mates log one when they hand a task back; try a longer range or another process.
            </Empty>
          ) : (
            <>
              <SimpleGrid cols={{ base: 1, lg: 2 }}>
                <Card withBorder component="figure" m={0} aria-labelledby="chart-outcomes">
                  <Title order={2} size="h4" id="chart-outcomes" mb="sm">
                    Tasks by outcome, {scope}
                  </Title>
                  <BarChart
                    h={260}
                    data={points}
                    dataKey="label"
                    type="stacked"
                    series={CHART_OUTCOMES.map((o) => ({ name: o, color: COLORS[o] }))}
                    withLegend
                    tickLine="y"
                    barChartProps={{ accessibilityLayer: false }}
                    yAxisProps={{ allowDecimals: false }}
                    aria-hidden
                  />
                </Card>
                <Card withBorder component="figure" m={0} aria-labelledby="chart-time">
                  <Title order={2} size="h4" id="chart-time" mb="sm">
                    Time saved (hours), {scope}
                  </Title>
                  <AreaChart
                    h={260}
                    data={points}
                    dataKey="label"
                    series={[{ name: 'hoursSaved', label: 'Hours saved', color: 'teal.8' }]}
                    curveType="linear"
                    tickLine="y"
                    areaChartProps={{ accessibilityLayer: false }}
                    withDots={points.length <= 31 && by !== 'day'}
                    aria-hidden
                  />
                </Card>
              </SimpleGrid>
              <Card withBorder>
                <Title order={2} size="h4" mb="sm">
                  The numbers
                </Title>
                <ScrollArea type="auto" viewportProps={{ tabIndex: 0, role: 'region', 'aria-label': 'The numbers, scrollable' }}>
                  <Table striped miw={600} data-testid="kpi-table">
                    <Table.Caption>
                      Tasks by outcome and time saved per {by}, {scope}, {from} to {to}
                    </Table.Caption>
                    <Table.Thead>
                      <Table.Tr>
                        <Table.Th scope="col">{by === 'day' ? 'Day' : by === 'week' ? 'Week' : 'Month'}</Table.Th>
                        {OUTCOMES.map((o) => (
                          <Table.Th key={o} scope="col" ta="right">
                            {o === 'Run' ? 'Runs' : o}
                          </Table.Th>
                        ))}
                        <Table.Th scope="col" ta="right">
                          Time saved
                        </Table.Th>
                      </Table.Tr>
                    </Table.Thead>
                    <Table.Tbody>
                      {points.map((p) => (
                        <Table.Tr key={p.period}>
                          <Table.Th scope="row" fw={400}>
                            {p.label}
                          </Table.Th>
                          {OUTCOMES.map((o) => (
                            <Table.Td key={o} ta="right">
                              {p[o].toLocaleString()}
                            </Table.Td>
                          ))}
                          <Table.Td ta="right">{formatDuration(p.secondsSaved)}</Table.Td>
                        </Table.Tr>
                      ))}
                    </Table.Tbody>
                    <Table.Tfoot>
                      <Table.Tr>
                        <Table.Th scope="row">Total</Table.Th>
                        {OUTCOMES.map((o) => (
                          <Table.Th key={o} ta="right">
                            {sum[o].toLocaleString()}
                          </Table.Th>
                        ))}
                        <Table.Th ta="right">{formatDuration(sum.secondsSaved)}</Table.Th>
                      </Table.Tr>
                    </Table.Tfoot>
                  </Table>
                </ScrollArea>
              </Card>
            </>
          )}
        </>
      )}
    </Stack>
  );
}
