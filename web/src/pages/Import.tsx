/**
 * Create tasks from a CSV or XLSX file (POST /v1/processes/:id/tasks/import, docs/people-api.md §5):
 * choosing a file runs a dry run, which lists the file's columns (mapped to the same-named fields by
 * default; each can be remapped or ignored) and every row's problems; the import itself is refused
 * whole while any row has a problem, shows the upload's progress, and ends with "N tasks created"
 * and a link to the queue. A file larger than one chunk of a bulk job is created by a job (202):
 * the page follows the job's progress (JobProgress) to its end, with the rows it could not create
 * (a key taken after the check). Loaded on first use.
 */
import { useEffect, useRef, useState } from 'react';
import {
  Alert,
  Breadcrumbs,
  Button,
  Card,
  FileButton,
  Group,
  Progress,
  ScrollArea,
  Select,
  Skeleton,
  Stack,
  Table,
  Text,
  Title,
} from '@mantine/core';
import { useMediaQuery } from '@mantine/hooks';
import { useQueryClient } from '@tanstack/react-query';
import { getRouteApi } from '@tanstack/react-router';
import { useLiveQuery } from '../api/live';
import { processesKey, processQuery, tasksKey } from '../api/queries';
import { useSession } from '../api/session';
import { ApiError, errorMessage, upload } from '../lib/http';
import { queueLabel } from '../lib/queues';
import { can } from '../lib/roles';
import { defaultMapping, duplicateTargets, fileFormat, importQuery, RESERVED_TARGETS, type Mapping } from '../lib/import-mapping';
import { AnchorLink, ButtonLink } from '../components/links';
import { ErrorAlert } from '../components/ErrorAlert';
import { JobProgress, useJob } from '../components/JobProgress';
import { fieldLabel } from '../lib/values';

interface RowError {
  row: number;
  field?: string;
  value?: unknown;
  code: string;
  message: string;
}
interface Preview {
  dryRun: true;
  rows: number;
  valid: number;
  invalid: number;
  errors: RowError[];
  columns: { column: string; field: string | null }[];
  ignoredColumns: string[];
  queues: Record<string, number>;
}
interface Result {
  dryRun: false;
  created: number;
  taskIds: number[];
  queues: Record<string, number>;
}
/** a file larger than one chunk: the job creating its rows (202) */
interface Started {
  dryRun: false;
  jobId: string;
  total: number;
  queues: Record<string, number>;
}

/** the choice of no target (a Select's value cannot be null) */
const IGNORE = '(ignore)';
const CONTENT_TYPE = { csv: 'text/csv', xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet' } as const;
const RESERVED_LABEL: Record<string, string> = {
  comment: 'Comment (first comment of the task)',
  activationDate: 'Activation date',
  deadline: 'Deadline',
  urgent: 'Urgent',
};

function fileSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} kB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

function show(v: unknown): string {
  if (v === undefined || v === null) return '';
  return typeof v === 'string' ? v : JSON.stringify(v);
}
const withoutRowPrefix = (m: string) => m.replace(/^Row \d+: /, '');
const landing = (queues: Record<string, number>) =>
  Object.entries(queues)
    .map(([q, n]) => `${n.toLocaleString()} in ${queueLabel(q)}`)
    .join(', ');

const route = getRouteApi('/_app/processes/$processId/import');

export function ImportPage() {
  const { processId } = route.useParams();
  const id = Number(processId);
  const process = useLiveQuery(processQuery(id));
  const role = useSession().user.role;
  const qc = useQueryClient();
  const [file, setFile] = useState<File | null>(null);
  const [mapping, setMapping] = useState<Mapping | null>(null);
  const [mappingChanged, setMappingChanged] = useState(false);
  const [preview, setPreview] = useState<Preview | null>(null);
  const [result, setResult] = useState<Result | null>(null);
  const [started, setStarted] = useState<Started | null>(null);
  const { job, finished } = useJob(started?.jobId ?? null);
  const [busy, setBusy] = useState<null | 'checking' | 'importing'>(null);
  const [sent, setSent] = useState(0);
  const [failure, setFailure] = useState<{ message: string; rows: RowError[] } | null>(null);
  const abort = useRef<AbortController | null>(null);
  const resetPicker = useRef<() => void>(null);

  // the job's tasks are in the queue once it has ended
  useEffect(() => {
    if (finished) {
      void qc.invalidateQueries({ queryKey: processesKey() });
      void qc.invalidateQueries({ queryKey: tasksKey(id) });
    }
  }, [finished, qc, id]);

  if (process.isPending) return <Skeleton h={300} />;
  if (process.isError) return <ErrorAlert error={process.error} title="Could not load the process" />;
  const p = process.data;
  const fieldNames = p.fields.map((f) => f.name);
  /** what a person calls the target a problem names: the field's label, else the reserved key's words */
  const targetLabel = (name: string) => {
    const f = p.fields.find((x) => x.name.toLowerCase() === name.toLowerCase());
    return f ? fieldLabel(f) : (RESERVED_LABEL[name] ?? name);
  };
  const format = file ? fileFormat(file.name, file.type) : null;

  const send = async (f: File, dryRun: boolean, m: Mapping | null) => {
    const fmt = fileFormat(f.name, f.type);
    if (!fmt) throw new ApiError(415, 'unsupported_media_type', 'Choose a .csv or .xlsx file.');
    abort.current = new AbortController();
    setSent(0);
    return upload<Preview | Result | Started>(`/v1/processes/${id}/tasks/import?${importQuery({ format: fmt, dryRun, mapping: m })}`, f, {
      contentType: CONTENT_TYPE[fmt],
      onProgress: (done, total) => setSent(total > 0 ? Math.round((done / total) * 100) : 0),
      signal: abort.current.signal,
    });
  };

  const fail = (err: unknown) => {
    const rows =
      err instanceof ApiError
        ? err.fieldErrors
            .filter((e) => typeof e.index === 'number')
            .map((e) => ({ row: e.index!, field: e.field, code: e.code, message: e.message }))
        : [];
    setFailure({ message: errorMessage(err), rows });
  };

  const check = async (f: File, m: Mapping | null) => {
    setBusy('checking');
    setFailure(null);
    setResult(null);
    setStarted(null);
    try {
      const pv = (await send(f, true, m)) as Preview;
      setPreview(pv);
      setMapping(
        m ??
          defaultMapping(
            pv.columns.map((c) => c.column),
            fieldNames,
          ),
      );
      setMappingChanged(false);
    } catch (err) {
      setPreview(null);
      fail(err);
    } finally {
      setBusy(null);
    }
  };

  const commit = async () => {
    if (!file) return;
    setBusy('importing');
    setFailure(null);
    try {
      const r = (await send(file, false, mapping)) as Result | Started;
      setPreview(null);
      if ('jobId' in r) {
        setStarted(r);
        return;
      }
      setResult(r);
      void qc.invalidateQueries({ queryKey: processesKey() });
      void qc.invalidateQueries({ queryKey: tasksKey(id) });
    } catch (err) {
      fail(err);
    } finally {
      setBusy(null);
    }
  };

  const choose = (f: File | null) => {
    abort.current?.abort();
    if (!f) resetPicker.current?.();
    setFile(f);
    setPreview(null);
    setMapping(null);
    setResult(null);
    setStarted(null);
    setFailure(null);
    if (f) void check(f, null);
  };

  const targets = [
    {
      group: 'Fields',
      items: p.fields.map((f) => ({ value: f.name, label: fieldLabel(f) === f.name ? f.name : `${fieldLabel(f)} (${f.name})` })),
    },
    { group: 'Task', items: RESERVED_TARGETS.map((k) => ({ value: k, label: RESERVED_LABEL[k] })) },
    { group: 'None', items: [{ value: IGNORE, label: 'Ignore this column' }] },
  ];
  const dupes = mapping ? duplicateTargets(mapping) : [];
  const canImport = !!preview && preview.invalid === 0 && preview.valid > 0 && !mappingChanged && dupes.length === 0 && !busy;

  return (
    <Stack>
      <Breadcrumbs>
        <AnchorLink to="/">Overview</AnchorLink>
        <AnchorLink to="/processes/$processId/queue" params={{ processId }} search={{ queue: 'Ready' }}>
          {p.name || p.key}
        </AnchorLink>
        <Text>Import</Text>
      </Breadcrumbs>
      <Group justify="space-between">
        <Title order={1} size="h2">
          Import tasks into {p.name || p.key}
        </Title>
        <ButtonLink variant="default" to="/processes/$processId/new" params={{ processId }}>
          Create one task instead
        </ButtonLink>
      </Group>
      {!can(role, 'tasks.work') ? (
        <Alert color="gray" title="Your role cannot create tasks">
          Agents and administrators import tasks.
        </Alert>
      ) : (
        <>
          <Card withBorder component="section" aria-label="Choose a file">
            <Stack gap="sm">
              <Title order={2} size="h4">
                1. Choose a file
              </Title>
              <Text size="sm" c="dimmed">
                A CSV or XLSX file whose first row names the columns. Each row becomes a task; nothing is created until you confirm, and
                then all rows are created or none.
              </Text>
              <Group gap="sm" wrap="wrap">
                <FileButton
                  accept=".csv,.xlsx,text/csv,application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
                  resetRef={resetPicker}
                  onChange={choose}
                >
                  {(props) => (
                    <Button {...props} variant={file ? 'default' : 'filled'}>
                      {file ? 'Choose another file' : 'Choose a CSV or XLSX file'}
                    </Button>
                  )}
                </FileButton>
                {file && (
                  <Group gap={6} wrap="nowrap" style={{ minWidth: 0 }} data-testid="import-file">
                    <Text size="sm" fw={500} truncate="end" style={{ minWidth: 0 }}>
                      {file.name}
                    </Text>
                    <Text size="sm" c="dimmed" style={{ whiteSpace: 'nowrap' }}>
                      {fileSize(file.size)}
                    </Text>
                    <Button size="compact-sm" variant="subtle" onClick={() => choose(null)} aria-label="Clear the file">
                      Clear
                    </Button>
                  </Group>
                )}
              </Group>
              {file && !format && (
                <Text size="sm" c="red" role="alert">
                  Choose a .csv or .xlsx file
                </Text>
              )}
              {busy === 'checking' && <Progress value={sent < 100 ? sent : 100} animated={sent >= 100} aria-label="Checking the file" />}
            </Stack>
          </Card>

          {failure && (
            <Alert color="red" role="alert" title="The file was not imported">
              <Text size="sm">{failure.message}</Text>
            </Alert>
          )}

          {preview && mapping && (
            <Card withBorder component="section" aria-label="Columns">
              <Stack gap="sm">
                <Title order={2} size="h4">
                  2. Columns
                </Title>
                <Text size="sm" c="dimmed">
                  Each column of the file fills a field; a column named like a field fills it unless you choose otherwise.
                </Text>
                <Table>
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>Column in the file</Table.Th>
                      <Table.Th>Fills</Table.Th>
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {Object.keys(mapping).map((col) => (
                      <Table.Tr key={col}>
                        <Table.Td>{col}</Table.Td>
                        <Table.Td>
                          <Select
                            aria-label={`Column ${col} fills`}
                            data={targets}
                            value={mapping[col] ?? IGNORE}
                            allowDeselect={false}
                            onChange={(v) => {
                              setMapping({ ...mapping, [col]: v && v !== IGNORE ? v : null });
                              setMappingChanged(true);
                            }}
                            error={mapping[col] && dupes.includes(mapping[col]!) ? 'Two columns fill this field' : undefined}
                          />
                        </Table.Td>
                      </Table.Tr>
                    ))}
                  </Table.Tbody>
                </Table>
                {mappingChanged && (
                  <Button
                    variant="default"
                    w="fit-content"
                    disabled={dupes.length > 0 || !!busy}
                    onClick={() => file && void check(file, mapping)}
                  >
                    Check again with these columns
                  </Button>
                )}
              </Stack>
            </Card>
          )}

          {preview && (
            <Card withBorder component="section" aria-label="Preview">
              <Stack gap="sm">
                <Title order={2} size="h4">
                  3. Preview
                </Title>
                <Text data-testid="import-summary">
                  {preview.rows.toLocaleString()} {preview.rows === 1 ? 'row' : 'rows'}: {preview.valid.toLocaleString()} ready to create
                  {preview.invalid > 0 ? `, ${preview.invalid.toLocaleString()} with problems` : ''}.
                  {preview.valid > 0 && preview.invalid === 0 ? ` They would land: ${landing(preview.queues)}.` : ''}
                </Text>
                {preview.invalid > 0 && (
                  <Alert color="orange" title="Fix these rows first">
                    Nothing is created while any row has a problem. Correct the file and choose it again.
                  </Alert>
                )}
                {preview.errors.length > 0 && <RowErrors rows={preview.errors} label={targetLabel} />}
                {preview.rows === 0 && <Text>The file has no data rows.</Text>}
                <Group>
                  <Button onClick={() => void commit()} disabled={!canImport}>
                    Create {preview.valid.toLocaleString()} {preview.valid === 1 ? 'task' : 'tasks'}
                  </Button>
                </Group>
              </Stack>
            </Card>
          )}

          {busy === 'importing' && (
            <Card withBorder>
              <Stack gap={4}>
                <Text size="sm" id="import-progress">
                  {sent < 100 ? `Uploading the file: ${sent}%` : 'Creating the tasks…'}
                </Text>
                <Progress value={sent < 100 ? sent : 100} animated={sent >= 100} aria-labelledby="import-progress" size="lg" />
              </Stack>
            </Card>
          )}

          {failure && failure.rows.length > 0 && <RowErrors rows={failure.rows} label={targetLabel} />}

          {started && (
            <Card withBorder aria-labelledby="import-job">
              <Stack gap={4}>
                <Title order={2} size="h4" id="import-job">
                  {finished && job.data
                    ? `${job.data.done.toLocaleString()} ${job.data.done === 1 ? 'task' : 'tasks'} created`
                    : `Creating ${started.total.toLocaleString()} tasks`}
                </Title>
                <Text size="sm">
                  {finished ? 'The import has ended.' : 'The server creates them in steps; you may leave this page, the import carries on.'}{' '}
                  They land: {landing(started.queues)}.
                </Text>
                <JobProgress job={job} finished={finished} testId="import-job-progress" failedTitle="Some rows were not created" />
                {finished && (
                  <AnchorLink to="/processes/$processId/queue" params={{ processId }} search={{ queue: 'Ready' }}>
                    Open the queue
                  </AnchorLink>
                )}
              </Stack>
            </Card>
          )}

          {result && (
            <Card withBorder role="status" aria-labelledby="import-result">
              <Stack gap={4}>
                <Title order={2} size="h4" id="import-result">
                  {result.created.toLocaleString()} {result.created === 1 ? 'task' : 'tasks'} created
                </Title>
                <Text size="sm">{landing(result.queues)}.</Text>
                <AnchorLink to="/processes/$processId/queue" params={{ processId }} search={{ queue: 'Ready' }}>
                  Open the queue
                </AnchorLink>
              </Stack>
            </Card>
          )}
        </>
      )}
    </Stack>
  );
}

/** The problems by row: a table that wraps its text on a phone (no sideways scroll), scrolling down past 420 px. */
function RowErrors({ rows, label }: { rows: RowError[]; label: (field: string) => string }) {
  const phone = useMediaQuery('(max-width: 36em)', false, { getInitialValueInEffect: false });
  const wrap = { overflowWrap: 'anywhere' } as const;
  return (
    <ScrollArea type="auto" mah={420} viewportProps={{ tabIndex: 0, role: 'region', 'aria-label': 'Problems by row' }}>
      <Table striped miw={phone ? undefined : 560} data-testid="import-errors">
        <Table.Caption>Problems by row (row 1 is the header)</Table.Caption>
        <Table.Thead>
          <Table.Tr>
            <Table.Th scope="col">Row</Table.Th>
            <Table.Th scope="col">Field</Table.Th>
            <Table.Th scope="col">Value</Table.Th>
            <Table.Th scope="col">Problem</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {rows.map((e, i) => (
            <Table.Tr key={i}>
              <Table.Td>{e.row}</Table.Td>
              <Table.Td style={wrap}>{e.field ? label(e.field) : ''}</Table.Td>
              <Table.Td style={wrap}>{show(e.value)}</Table.Td>
              <Table.Td style={wrap}>{withoutRowPrefix(e.message)}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </ScrollArea>
  );
}
