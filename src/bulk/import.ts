/**
 * Importing tasks from a CSV or XLSX file (docs/product.md §5.1): the header row names the
 * columns, each column maps to a field (by name, ignoring case, or by an explicit mapping) or to
 * one of the reserved keys a create accepts (comment, activationDate, deadline, urgent). A preview
 * validates every row as a create would (src/processes/task-data.ts via prepareTasks) and lists
 * each row's problems (row number as in the file: the header is row 1); a commit is refused,
 * creating nothing, when any row has a problem, and creates the rows through the create path
 * (createTasks), as the user: requireApproval `all` applies, `mateCreated` does not. A file of at
 * most one chunk of a bulk job is created in one transaction (commitImport); a larger one by an
 * import job, chunk by chunk (BulkJobs.startImport, src/bulk/jobs.ts), from the rows checked here.
 *
 * Files are read as streams (csv-parse; the first worksheet of an XLSX file through xlsx.ts, which
 * bounds what the file may inflate to) into rows of cell values; a file may hold at most
 * MAX_IMPORT_ROWS rows.
 */
import { Readable } from 'node:stream';
import { parse } from 'csv-parse';
import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import type { Tx } from '../db/tx.js';
import type { Caller } from '../lib/caller.js';
import { Refusal, type ErrorCode, type FieldProblem } from '../lib/errors.js';
import { showValue } from '../lib/values.js';
import type { ProcessDef } from '../processes/store.js';
import { createTasks, prepareTasks, type PreparedTask } from '../tasks/create.js';
import type { Queue } from '../tasks/state-machine.js';
import { findUniqueKeyOwners } from '../tasks/store.js';
import type { ImportRow } from './store.js';
import { xlsxRows } from './xlsx.js';

export type ImportFormat = 'csv' | 'xlsx';
export const MAX_IMPORT_ROWS = 200_000;
/** Tasks per createTasks call of a commit (all in the caller's one transaction). */
const CREATE_CHUNK = 1000;
/** The most row errors a preview or refusal lists (all are counted). */
const MAX_LISTED_ERRORS = 1000;
/** Reserved keys a column may map to (the others make no sense in a file). */
const IMPORT_RESERVED = ['comment', 'activationDate', 'deadline', 'urgent'];

/** A parsed file: the header's column names and the data rows (row i is line i + 2 of the file). */
export interface ImportTable {
  columns: string[];
  rows: unknown[][];
}

/** The format of an upload from its file name or content type; null when neither says. */
export function importFormat(fileName?: string | null, contentType?: string | null): ImportFormat | null {
  const name = (fileName ?? '').toLowerCase();
  const type = (contentType ?? '').toLowerCase();
  if (name.endsWith('.xlsx') || type.includes('spreadsheetml')) return 'xlsx';
  if (name.endsWith('.csv') || name.endsWith('.txt') || type.startsWith('text/csv') || type.startsWith('text/plain')) return 'csv';
  return null;
}

function tooMany(max: number): Refusal {
  return new Refusal('payload_too_large', `The file has more than ${max} rows; split it`);
}

/** Reads a CSV or XLSX file into a table. Refuses an unreadable file (`invalid_body`) or one too long. */
export async function parseImportFile(
  input: Readable | Buffer,
  format: ImportFormat,
  opts: { maxRows?: number } = {},
): Promise<ImportTable> {
  const max = opts.maxRows ?? MAX_IMPORT_ROWS;
  const records = format === 'csv' ? csvRecords(Buffer.isBuffer(input) ? Readable.from([input]) : input) : xlsxRecords(input);
  let columns: string[] | null = null;
  const rows: unknown[][] = [];
  try {
    for await (const record of records) {
      if (columns === null) {
        columns = record.map((c) => (c === null || c === undefined ? '' : String(c).trim()));
        continue;
      }
      if (record.every((c) => c === null || c === undefined || c === '')) continue;
      if (rows.length >= max) throw tooMany(max);
      rows.push(record);
    }
  } catch (err) {
    if (err instanceof Refusal) throw err;
    throw new Refusal('invalid_body', `The ${format.toUpperCase()} file cannot be read: ${(err as Error).message}`);
  }
  if (columns === null || columns.every((c) => c === ''))
    throw new Refusal('invalid_body', 'The file has no header row naming its columns');
  return { columns, rows };
}

/** CSV records; the delimiter (`,` `;` or tab) is the one the header line uses most. */
async function* csvRecords(stream: Readable): AsyncGenerator<unknown[]> {
  const it = stream[Symbol.asyncIterator]();
  const first = await it.next();
  if (first.done) return;
  const head = Buffer.isBuffer(first.value) ? first.value : Buffer.from(String(first.value));
  const line = head
    .subarray(0, 64 * 1024)
    .toString('utf8')
    .split(/\r?\n/)[0];
  const delimiter = [',', ';', '\t'].map((d) => [d, line.split(d).length] as const).sort((a, b) => b[1] - a[1])[0][0];
  const rest = async function* () {
    yield head;
    for (;;) {
      const n = await it.next();
      if (n.done) return;
      yield n.value;
    }
  };
  const parser = Readable.from(rest()).pipe(parse({ bom: true, delimiter, relax_column_count: true, skip_empty_lines: true }));
  for await (const record of parser) yield record as unknown[];
}

/** A cell of exceljs as a plain value: dates as local date(-time) text, rich text as text, formulas as their result. */
export function cellValue(v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (v instanceof Date) {
    // Excel has no time zones: exceljs gives the wall time as UTC; read it in the tenant's zone
    const s = v.toISOString();
    return s.endsWith('T00:00:00.000Z') ? s.slice(0, 10) : s.slice(0, 19);
  }
  if (typeof v === 'object') {
    const o = v as Record<string, unknown>;
    if (Array.isArray(o.richText)) return (o.richText as { text: string }[]).map((r) => r.text).join('');
    if ('result' in o) return cellValue(o.result);
    if ('formula' in o || 'sharedFormula' in o) return null;
    if ('text' in o) return cellValue(o.text);
    if ('error' in o) return String(o.error);
    return null;
  }
  return v;
}

async function* xlsxRecords(input: Readable | Buffer): AsyncGenerator<unknown[]> {
  for await (const values of xlsxRows(input)) yield Array.from(values, cellValue);
}

/** Column → target: a field name, a reserved key, or null (ignored). */
export type ColumnMapping = Record<string, string | null>;

export interface ResolvedMapping {
  /** per column, the field or reserved key it fills; null: ignored */
  targets: (string | null)[];
  ignored: string[];
}

/**
 * Maps the columns: explicitly (`mapping`: column header → field name, reserved key or null),
 * else by header name ignoring case. Without fields, a column named like a field fills a free
 * key. Refuses an explicit mapping naming a missing column or an unknown field, and two columns
 * filling one field.
 */
export function resolveMapping(columns: string[], proc: ProcessDef, mapping?: ColumnMapping | null): ResolvedMapping {
  const problems: FieldProblem[] = [];
  const fieldNames = new Map(proc.fields.map((f) => [f.name.toLowerCase(), f.name]));
  const reserved = new Map(IMPORT_RESERVED.map((k) => [k.toLowerCase(), k]));
  const target = (name: string): string | null => {
    const lower = name.trim().toLowerCase();
    if (lower === '') return null;
    const known = fieldNames.get(lower) ?? reserved.get(lower);
    if (known) return known;
    return proc.fields.length === 0 && /^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(name.trim()) ? name.trim() : null;
  };
  if (mapping) {
    for (const k of Object.keys(mapping)) {
      if (!columns.includes(k)) {
        problems.push({
          field: `mapping.${k}`,
          code: 'unknown_field',
          message: `The mapping names a column "${k}" the file does not have`,
        });
      }
      const v = mapping[k];
      if (v !== null && (typeof v !== 'string' || target(v) === null)) {
        problems.push({
          field: `mapping.${k}`,
          value: v,
          code: 'unknown_field',
          message: `Column "${k}" maps to ${showValue(v)}, not a field of the process`,
        });
      }
    }
  }
  const targets = columns.map((c) => {
    if (mapping && Object.prototype.hasOwnProperty.call(mapping, c)) {
      const v = mapping[c];
      return typeof v === 'string' ? target(v) : null;
    }
    return target(c);
  });
  const seen = new Map<string, string>();
  targets.forEach((tgt, i) => {
    if (tgt === null) return;
    const k = tgt.toLowerCase();
    if (seen.has(k)) {
      const what = labelOf(proc, tgt);
      problems.push({
        field: columns[i],
        code: 'invalid_field',
        message: `Columns "${seen.get(k)}" and "${columns[i]}" both fill ${what}`,
      });
    } else seen.set(k, columns[i]);
  });
  if (problems.length) throw new Refusal(problems[0].code, problems[0].message, problems.slice(0, 100));
  return { targets, ignored: columns.filter((c, i) => targets[i] === null && c !== '') };
}

/** The label people read for the field `name`: its label, else the name (a reserved key, a free key). */
function labelOf(proc: ProcessDef, name: string): string {
  return proc.fields.find((f) => f.name === name)?.label || name;
}

/**
 * A value problem of task data names the field by the key sent (`"numberField": ...`); a person
 * importing a file knows the field by its label, so the message names the label instead.
 */
function byLabel(proc: ProcessDef, field: string | undefined, message: string): string {
  if (field === undefined) return message;
  const label = labelOf(proc, field);
  const quoted = `"${field}"`;
  return label !== field && message.startsWith(quoted) ? `${label}${message.slice(quoted.length)}` : message;
}

export interface ImportRowError {
  /** the row number in the file (the header is row 1) */
  row: number;
  field?: string;
  value?: unknown;
  code: ErrorCode;
  message: string;
}

export interface ImportPreview {
  /** data rows in the file */
  rows: number;
  /** rows that would be created */
  valid: number;
  /** rows with at least one problem */
  invalid: number;
  /** the first MAX_LISTED_ERRORS problems, in row order */
  errors: ImportRowError[];
  columns: { column: string; field: string | null }[];
  ignoredColumns: string[];
  /** where the valid rows would land */
  queues: Partial<Record<Queue, number>>;
}

export interface CheckedImport {
  preview: ImportPreview;
  /** the good rows, in file order */
  rows: ImportRow[];
}

async function check(
  db: Kysely<Database>,
  caller: Caller,
  proc: ProcessDef,
  table: ImportTable,
  mapping?: ColumnMapping | null,
): Promise<CheckedImport> {
  if (!proc.tasksEnabled) throw new Refusal('tasks_disabled', `Process ${proc.processKey} has no tasks`);
  const { targets, ignored } = resolveMapping(table.columns, proc, mapping);
  const errors: ImportRowError[] = [];
  const badRows = new Set<number>();
  const add = (e: ImportRowError) => {
    badRows.add(e.row);
    if (errors.length < MAX_LISTED_ERRORS) errors.push(e);
  };
  const prepared: { row: number; task: PreparedTask }[] = [];
  table.rows.forEach((cells, i) => {
    const row = i + 2;
    const item: Record<string, unknown> = {};
    targets.forEach((tgt, c) => {
      const v = cells[c];
      if (tgt !== null && v !== null && v !== undefined && v !== '') item[tgt] = v;
    });
    try {
      prepared.push({ row, task: prepareTasks(caller, proc, [item], false)[0] });
    } catch (err) {
      if (!(err instanceof Refusal)) throw err;
      const problems = err.problems.length ? err.problems : [{ code: err.code, message: err.message }];
      for (const p of problems)
        add({
          row,
          ...(p.field ? { field: p.field } : {}),
          ...(p.value !== undefined ? { value: p.value } : {}),
          code: p.code,
          message: `Row ${row}: ${byLabel(proc, p.field, p.message)}`,
        });
    }
  });
  // unique keys: within the file, then against open tasks
  const firstRow = new Map<string, number>();
  for (const p of prepared) {
    const k = p.task.uniqueKey;
    if (k === null) continue;
    const earlier = firstRow.get(k);
    if (earlier !== undefined) add({ row: p.row, code: 'duplicate_key', message: `Row ${p.row} has the same key as row ${earlier}: ${k}` });
    else firstRow.set(k, p.row);
  }
  const keys = [...firstRow.keys()];
  for (let i = 0; i < keys.length; i += 5000) {
    const owners = await findUniqueKeyOwners(db, caller.tenantId, proc.id, keys.slice(i, i + 5000));
    for (const [k, owner] of owners) {
      const row = firstRow.get(k)!;
      add({ row, code: 'duplicate_key', message: `Row ${row}: a task with key ${k} already exists (task ${owner})` });
    }
  }
  errors.sort((a, b) => a.row - b.row);
  const good = prepared.filter((p) => !badRows.has(p.row));
  const queues: Partial<Record<Queue, number>> = {};
  for (const p of good) queues[p.task.queue] = (queues[p.task.queue] ?? 0) + 1;
  return {
    preview: {
      rows: table.rows.length,
      valid: good.length,
      invalid: badRows.size,
      errors,
      columns: table.columns.map((column, i) => ({ column, field: targets[i] })),
      ignoredColumns: ignored,
      queues,
    },
    rows: good,
  };
}

/** The dry run: what a commit would create, and every row's problems; writes nothing. */
export async function previewImport(
  db: Kysely<Database>,
  caller: Caller,
  proc: ProcessDef,
  table: ImportTable,
  mapping?: ColumnMapping | null,
): Promise<ImportPreview> {
  return (await check(db, caller, proc, table, mapping)).preview;
}

export interface ImportResult {
  created: number;
  /** the new tasks' ids, in file order */
  taskIds: number[];
  queues: Partial<Record<Queue, number>>;
}

/**
 * The check before a commit: every row as a create would check it, unique keys within the file
 * and against open tasks. Refuses (`invalid_field`, or the first problem's code) listing the row
 * problems when any row has one, or when the file has no data rows; else answers the rows to create.
 */
export async function checkImport(
  db: Kysely<Database>,
  caller: Caller,
  proc: ProcessDef,
  table: ImportTable,
  mapping?: ColumnMapping | null,
): Promise<CheckedImport> {
  const checked = await check(db, caller, proc, table, mapping);
  const { preview } = checked;
  if (preview.rows === 0) throw new Refusal('invalid_body', 'The file has no data rows');
  if (preview.invalid > 0) {
    const first = preview.errors[0];
    const problems: FieldProblem[] = preview.errors.slice(0, 100).map((e) => ({
      index: e.row,
      ...(e.field ? { field: e.field } : {}),
      ...(e.value !== undefined ? { value: e.value } : {}),
      code: e.code,
      message: e.message,
    }));
    throw new Refusal(
      first.code,
      `${preview.invalid} of ${preview.rows} rows have problems; nothing was created. ${first.message}`,
      problems,
      {
        invalidRows: preview.invalid,
      },
    );
  }
  return checked;
}

/**
 * Creates every row of the file, or none (checkImport refuses a file with any bad row). Writes in
 * the caller's transaction `tx`, in chunks of CREATE_CHUNK tasks through createTasks (history row
 * and first comment per task).
 */
export async function commitImport(
  tx: Tx,
  caller: Caller,
  proc: ProcessDef,
  table: ImportTable,
  mapping?: ColumnMapping | null,
): Promise<ImportResult> {
  if (caller.actor.type !== 'user') throw new Error('import.ts: the caller must be a person');
  const { preview, rows } = await checkImport(tx.db, caller, proc, table, mapping);
  const prepared: PreparedTask[] = rows.map((r) => r.task);
  const taskIds: number[] = [];
  for (let i = 0; i < prepared.length; i += CREATE_CHUNK) {
    // a turn for the event loop between chunks: with the embedded store on the server's own thread
    // nothing else would read a request until the commit (the transaction still holds the
    // connection: docs/operations.md)
    if (i > 0) await new Promise((resolve) => setImmediate(resolve));
    const created = await createTasks(tx, caller, proc, prepared.slice(i, i + CREATE_CHUNK), true);
    taskIds.push(...created.map((r) => r.id));
  }
  return { created: taskIds.length, taskIds, queues: preview.queues };
}
