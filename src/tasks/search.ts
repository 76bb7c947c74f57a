/**
 * Finding tasks for people (docs/product.md §5.6): one process's tasks with filters, a sort on any
 * system attribute or field, keyset ("cursor") pagination and a total; a task's detail with its
 * history, comments and KPI events. Every query is scoped to the caller's tenant: another
 * tenant's task or process is simply not found.
 *
 * Pagination is a keyset over (sort key, id), never OFFSET: a page starts strictly after the last
 * row of the previous one, so rows created, changed or deleted meanwhile never make a row that
 * keeps its sort key appear twice or go missing. Sort keys are never NULL (nullable columns sort
 * as +infinity, missing field values as JSON null, the lowest JSON value), so the row comparison
 * is exact.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../db/types.js';
import { Refusal, type FieldProblem } from '../lib/errors.js';
import type { Caller } from '../lib/caller.js';
import { parseDateTimeInput } from '../lib/time.js';
import { showValue, toBoolean } from '../lib/values.js';
import { convertFieldValue, formatTaskValues, type TaskField } from '../processes/task-data.js';
import { loadProcessById, type ProcessDef } from '../processes/store.js';
import { QUEUES, type Queue } from './state-machine.js';
import { taskColumns, type TaskRow } from './store.js';

/** A task as the people's API answers it (docs/people-api.md). */
export interface Task {
  id: number;
  processId: number;
  queue: Queue;
  error: boolean;
  reason: string | null;
  urgent: boolean;
  retryCount: number;
  activationDate: string;
  deadline: string | null;
  lockedBy: null | { type: 'mate' | 'user'; id: number; name: string };
  lockedUntil: string | null;
  createdAt: string;
  updatedAt: string;
  data: Record<string, unknown>;
}

/** A task row with the display name of its lock holder. */
export interface TaskViewRow extends TaskRow {
  locked_by_name: string | null;
}

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

/** The Task answer for a row; `fields` are its process's, `timeZone` the tenant's (datetime values). */
export function taskView(row: TaskViewRow, fields: readonly TaskField[], timeZone: string): Task {
  const holder =
    row.locked_by_mate_id !== null
      ? { type: 'mate' as const, id: row.locked_by_mate_id }
      : row.locked_by_user_id !== null
        ? { type: 'user' as const, id: row.locked_by_user_id }
        : null;
  return {
    id: row.id,
    processId: row.process_id,
    queue: row.queue,
    error: row.error,
    reason: row.reason,
    urgent: row.urgent,
    retryCount: row.retry_count,
    activationDate: row.activation_date.toISOString(),
    deadline: iso(row.deadline),
    lockedBy: holder ? { ...holder, name: row.locked_by_name ?? `${holder.type} ${holder.id}` } : null,
    lockedUntil: iso(row.locked_until),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    data: formatTaskValues(fields, row.data, timeZone),
  };
}

const HOLDER_JOINS = sql`LEFT JOIN mates m ON m.tenant_id = t.tenant_id AND m.id = t.locked_by_mate_id
  LEFT JOIN users u ON u.tenant_id = t.tenant_id AND u.id = t.locked_by_user_id`;
const HOLDER_NAME = sql`COALESCE(NULLIF(m.display_name, ''), m.username, NULLIF(u.display_name, ''), u.username) AS locked_by_name`;

/** Tasks by id as Task answers, in the order asked (missing ones left out). */
export async function loadTaskViews(
  db: Kysely<Database>,
  caller: Caller,
  ids: readonly number[],
  opts: { includeDeleted?: boolean } = {},
): Promise<Task[]> {
  if (ids.length === 0) return [];
  const { rows } = await sql<TaskViewRow>`SELECT ${taskColumns('t')}, ${HOLDER_NAME} FROM tasks t ${HOLDER_JOINS}
    WHERE t.tenant_id = ${caller.tenantId} AND t.id = ANY(${[...ids]}::bigint[])
      ${opts.includeDeleted ? sql`` : sql`AND t.deleted_at IS NULL`}`.execute(db);
  const fields = new Map<number, readonly TaskField[]>();
  for (const r of rows) {
    if (!fields.has(r.process_id)) fields.set(r.process_id, (await loadProcessById(db, caller.tenantId, r.process_id))?.fields ?? []);
  }
  const byId = new Map(rows.map((r) => [r.id, taskView(r, fields.get(r.process_id)!, caller.timeZone)]));
  return ids.flatMap((id) => byId.get(id) ?? []);
}

// ---------------------------------------------------------------------------------------------
// Filters

/** One field equals a value (`f.<field>=value`); an empty value matches a missing or empty one. */
export interface FieldEquals {
  /** the stored key (the field's defined name, or a free key of a process without fields) */
  name: string;
  field: TaskField | null;
  /** the converted value; null: missing or empty */
  value: unknown;
}

/** Which tasks of a process: every key optional, all given ones must hold. */
export interface TaskFilter {
  queue?: Queue;
  error?: boolean;
  urgent?: boolean;
  /** a lock is recorded (a live lease, or an expired one the sweeper has not recovered yet) */
  locked?: boolean;
  /** deadline passed and not Solved */
  overdue?: boolean;
  /** in Ready with an activation date still ahead */
  notActiveYet?: boolean;
  /** free text (case-insensitive substring) over field values, reason and comments */
  q?: string;
  fields?: FieldEquals[];
  createdFrom?: Date;
  /** exclusive */
  createdTo?: Date;
  updatedFrom?: Date;
  /** exclusive */
  updatedTo?: Date;
}

/** The query keys a filter is read from (list, bulk, count), besides `f.<field>`. */
export const FILTER_KEYS = [
  'queue',
  'error',
  'urgent',
  'locked',
  'overdue',
  'notActiveYet',
  'q',
  'createdFrom',
  'createdTo',
  'updatedFrom',
  'updatedTo',
] as const;
const LIST_KEYS = ['sort', 'limit', 'cursor'] as const;

const FREE_KEY = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

function problem(field: string, value: unknown, message: string): FieldProblem {
  return { field, value, code: 'invalid_field', message };
}

/** One value of a query key: repeated keys (arrays) are refused. */
function single(key: string, value: unknown, problems: FieldProblem[]): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (Array.isArray(value) || (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean')) {
    problems.push(problem(key, value, `"${key}" must be given once, as a single value`));
    return undefined;
  }
  return String(value);
}

/** Resolves `f.<name>` against the process's fields (case-insensitively) or, without fields, a free key. */
function fieldFor(proc: ProcessDef, name: string): { name: string; field: TaskField | null } | null {
  if (proc.fields.length === 0) return FREE_KEY.test(name) ? { name, field: null } : null;
  const f = proc.fields.find((x) => x.name.toLowerCase() === name.toLowerCase());
  return f ? { name: f.name, field: f } : null;
}

function unknownField(proc: ProcessDef, key: string, name: string): FieldProblem {
  const names = proc.fields.map((f) => f.name).join(', ');
  return { field: key, value: name, code: 'unknown_field', message: `"${name}" is not a field of process ${proc.processKey} (${names})` };
}

function readFilterInto(raw: Record<string, unknown>, proc: ProcessDef, timeZone: string, problems: FieldProblem[]): TaskFilter {
  const filter: TaskFilter = {};
  const bool = (key: 'error' | 'urgent' | 'locked' | 'overdue' | 'notActiveYet') => {
    const s = single(key, raw[key], problems);
    if (s === undefined || s === '') return;
    const b = toBoolean(s);
    if (b === undefined) problems.push(problem(key, s, `"${key}": ${showValue(s)} is not true or false`));
    else filter[key] = b;
  };
  const date = (key: 'createdFrom' | 'createdTo' | 'updatedFrom' | 'updatedTo') => {
    const s = single(key, raw[key], problems);
    if (s === undefined || s === '') return;
    const d = parseDateTimeInput(s, timeZone);
    if (d === null) problems.push(problem(key, s, `"${key}": ${showValue(s)} is not a date or date-time`));
    else filter[key] = d;
  };
  const queue = single('queue', raw.queue, problems);
  if (queue !== undefined && queue !== '') {
    const q = QUEUES.find((x) => x.toLowerCase() === queue.toLowerCase());
    if (!q) problems.push(problem('queue', queue, `"queue": ${showValue(queue)} is not one of ${QUEUES.join(', ')}`));
    else filter.queue = q;
  }
  bool('error');
  bool('urgent');
  bool('locked');
  bool('overdue');
  bool('notActiveYet');
  const q = single('q', raw.q, problems);
  if (q !== undefined && q.trim() !== '') filter.q = q.trim();
  date('createdFrom');
  date('createdTo');
  date('updatedFrom');
  date('updatedTo');
  for (const key of Object.keys(raw)) {
    if (!key.startsWith('f.')) {
      if (!(FILTER_KEYS as readonly string[]).includes(key) && !(LIST_KEYS as readonly string[]).includes(key)) {
        problems.push({ field: key, code: 'unknown_field', message: `"${key}" is not a filter (${FILTER_KEYS.join(', ')}, f.<field>)` });
      }
      continue;
    }
    const target = fieldFor(proc, key.slice(2));
    if (!target) {
      problems.push(unknownField(proc, key, key.slice(2)));
      continue;
    }
    const s = single(key, raw[key], problems);
    if (s === undefined) continue;
    let value: unknown = s === '' ? null : s;
    if (value !== null && target.field) {
      const c = convertFieldValue(target.field, s, timeZone);
      if (!c.ok) {
        problems.push(problem(key, s, `"${key}": ${showValue(s)} is not ${c.expected}`));
        continue;
      }
      value = c.value;
    }
    (filter.fields ??= []).push({ ...target, value });
  }
  return filter;
}

function refuse(problems: FieldProblem[]): void {
  if (problems.length) throw new Refusal(problems[0].code, problems[0].message, problems.slice(0, 100));
}

/**
 * Reads a filter from query-like keys (the list query's, a bulk body's `filter`): the FILTER_KEYS
 * and `f.<field>`; strings as a query string carries them (booleans and numbers also accepted).
 * Refuses `invalid_field`/`unknown_field` naming each bad key.
 */
export function readTaskFilter(raw: Record<string, unknown>, proc: ProcessDef, timeZone: string): TaskFilter {
  const problems: FieldProblem[] = [];
  const filter = readFilterInto(raw, proc, timeZone, problems);
  for (const k of LIST_KEYS)
    if (raw[k] !== undefined) problems.push({ field: k, code: 'unknown_field', message: `"${k}" is not a filter` });
  refuse(problems);
  return filter;
}

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/** The SQL condition of a filter over `tasks t` (tenant, process and not deleted included). */
export function filterCondition(tenantId: number, processId: number, f: TaskFilter, now: Date): RawBuilder<unknown> {
  const c: RawBuilder<unknown>[] = [sql`t.tenant_id = ${tenantId}`, sql`t.process_id = ${processId}`, sql`t.deleted_at IS NULL`];
  if (f.queue !== undefined) c.push(sql`t.queue = ${f.queue}`);
  if (f.error !== undefined) c.push(sql`t.error = ${f.error}`);
  if (f.urgent !== undefined) c.push(sql`t.urgent = ${f.urgent}`);
  if (f.locked !== undefined) c.push(f.locked ? sql`t.locked_until IS NOT NULL` : sql`t.locked_until IS NULL`);
  const overdue = sql`(t.deadline IS NOT NULL AND t.deadline < ${now} AND t.queue <> 'Solved')`;
  if (f.overdue !== undefined) c.push(f.overdue ? overdue : sql`NOT ${overdue}`);
  const notActive = sql`(t.queue = 'Ready' AND t.activation_date > ${now})`;
  if (f.notActiveYet !== undefined) c.push(f.notActiveYet ? notActive : sql`NOT ${notActive}`);
  if (f.q !== undefined) {
    const p = `%${escapeLike(f.q)}%`;
    c.push(sql`(t.reason ILIKE ${p}
      OR EXISTS (SELECT 1 FROM jsonb_each_text(t.data) e WHERE e.value ILIKE ${p})
      OR EXISTS (SELECT 1 FROM task_comments tc WHERE tc.tenant_id = t.tenant_id AND tc.task_id = t.id AND tc.body ILIKE ${p}))`);
  }
  if (f.createdFrom) c.push(sql`t.created_at >= ${f.createdFrom}`);
  if (f.createdTo) c.push(sql`t.created_at < ${f.createdTo}`);
  if (f.updatedFrom) c.push(sql`t.updated_at >= ${f.updatedFrom}`);
  if (f.updatedTo) c.push(sql`t.updated_at < ${f.updatedTo}`);
  for (const e of f.fields ?? []) {
    if (e.value === null) c.push(sql`COALESCE(t.data ->> ${e.name}, '') = ''`);
    else if (e.field === null || ['text', 'dropdown', 'email'].includes(e.field.type)) {
      c.push(sql`lower(t.data ->> ${e.name}) = lower(${String(e.value)})`);
    } else c.push(sql`t.data -> ${e.name} = ${JSON.stringify(e.value)}::jsonb`);
  }
  return sql.join(c, sql` AND `);
}

/** How many tasks of the process match (the total of a list, the preview of a bulk action). */
export async function countTasks(db: Kysely<Database>, caller: Caller, processId: number, filter: TaskFilter): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM tasks t
    WHERE ${filterCondition(caller.tenantId, processId, filter, caller.now)}`.execute(db);
  return rows[0].n;
}

// ---------------------------------------------------------------------------------------------
// Sorting and pagination

/** System attributes a list sorts by, with their never-NULL sort expression and SQL type. */
const SORT_COLUMNS: Record<string, { expr: RawBuilder<unknown>; type: string }> = {
  id: { expr: sql`t.id`, type: 'bigint' },
  createdAt: { expr: sql`t.created_at`, type: 'timestamptz' },
  updatedAt: { expr: sql`t.updated_at`, type: 'timestamptz' },
  activationDate: { expr: sql`t.activation_date`, type: 'timestamptz' },
  deadline: { expr: sql`COALESCE(t.deadline, 'infinity'::timestamptz)`, type: 'timestamptz' },
  lockedUntil: { expr: sql`COALESCE(t.locked_until, 'infinity'::timestamptz)`, type: 'timestamptz' },
  queue: { expr: sql`t.queue`, type: 'text' },
  error: { expr: sql`t.error`, type: 'boolean' },
  urgent: { expr: sql`t.urgent`, type: 'boolean' },
  retryCount: { expr: sql`t.retry_count`, type: 'integer' },
  reason: { expr: sql`COALESCE(t.reason, '')`, type: 'text' },
};
export const SORT_KEYS = Object.keys(SORT_COLUMNS);
export const DEFAULT_SORT = '-createdAt';
export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 500;

export interface TaskSort {
  /** as given, normalized: `createdAt`, `-createdAt`, `f.amount`, … */
  text: string;
  desc: boolean;
  expr: RawBuilder<unknown>;
  type: string;
}

export interface TaskListQuery {
  filter: TaskFilter;
  sort: TaskSort;
  limit: number;
  cursor: string | null;
}

function readSort(value: string, proc: ProcessDef, problems: FieldProblem[]): TaskSort | undefined {
  const desc = value.startsWith('-');
  const name = desc || value.startsWith('+') ? value.slice(1) : value;
  if (name.startsWith('f.')) {
    const target = fieldFor(proc, name.slice(2));
    if (!target) {
      problems.push(unknownField(proc, 'sort', name.slice(2)));
      return undefined;
    }
    return {
      text: `${desc ? '-' : ''}f.${target.name}`,
      desc,
      expr: sql`COALESCE(t.data -> ${target.name}, 'null'::jsonb)`,
      type: 'jsonb',
    };
  }
  const col = Object.keys(SORT_COLUMNS).find((k) => k.toLowerCase() === name.toLowerCase());
  if (!col) {
    problems.push(
      problem('sort', value, `"sort": ${showValue(value)} is not one of ${SORT_KEYS.join(', ')} or f.<field> (prefix - for descending)`),
    );
    return undefined;
  }
  return { text: `${desc ? '-' : ''}${col}`, desc, ...SORT_COLUMNS[col] };
}

/**
 * Reads a list query (`GET /v1/processes/:id/tasks`): the filter keys, `sort` (default
 * -createdAt), `limit` (1..500, default 50) and `cursor`. Refuses naming every bad key.
 */
export function readTaskListQuery(raw: Record<string, unknown>, proc: ProcessDef, timeZone: string): TaskListQuery {
  const problems: FieldProblem[] = [];
  const filter = readFilterInto(raw, proc, timeZone, problems);
  const sortText = single('sort', raw.sort, problems);
  const sort = readSort(sortText === undefined || sortText === '' ? DEFAULT_SORT : sortText, proc, problems);
  let limit = DEFAULT_LIMIT;
  const l = single('limit', raw.limit, problems);
  if (l !== undefined && l !== '') {
    const n = Number(l);
    if (!/^\d+$/.test(l) || n < 1 || n > MAX_LIMIT)
      problems.push(problem('limit', l, `"limit": ${showValue(l)} is not a whole number from 1 to ${MAX_LIMIT}`));
    else limit = n;
  }
  const cursor = single('cursor', raw.cursor, problems);
  refuse(problems);
  return { filter, sort: sort!, limit, cursor: cursor === undefined || cursor === '' ? null : cursor };
}

interface CursorBody {
  s: string;
  v: string;
  i: number;
}

function encodeCursor(c: CursorBody): string {
  return Buffer.from(JSON.stringify(c)).toString('base64url');
}

function badCursor(): Refusal {
  const message = '"cursor" is not a cursor this list answered';
  return new Refusal('invalid_field', message, [{ field: 'cursor', code: 'invalid_field', message }]);
}

function decodeCursor(cursor: string, sort: TaskSort): CursorBody {
  let c: CursorBody | null = null;
  try {
    c = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    c = null;
  }
  if (!c || typeof c !== 'object' || typeof c.v !== 'string' || !Number.isSafeInteger(c.i) || typeof c.s !== 'string') throw badCursor();
  if (c.s !== sort.text) {
    const message = `"cursor" belongs to the sort ${c.s}, not ${sort.text}: start again without a cursor`;
    throw new Refusal('invalid_field', message, [{ field: 'cursor', code: 'invalid_field', message }]);
  }
  return c;
}

export interface TaskPage {
  items: Task[];
  total: number;
  nextCursor: string | null;
}

/** One page of a process's tasks, with the total matching the filter. */
export async function listTasks(db: Kysely<Database>, caller: Caller, proc: ProcessDef, query: TaskListQuery): Promise<TaskPage> {
  const { sort, limit } = query;
  const where = filterCondition(caller.tenantId, proc.id, query.filter, caller.now);
  const dir = sql.raw(sort.desc ? 'DESC' : 'ASC');
  let after: RawBuilder<unknown> = sql`true`;
  if (query.cursor !== null) {
    const c = decodeCursor(query.cursor, sort);
    const cmp = sql.raw(sort.desc ? '<' : '>');
    after = sql`(${sort.expr}, t.id) ${cmp} (CAST(${c.v} AS ${sql.raw(sort.type)}), ${c.i}::bigint)`;
  }
  const { rows } = await sql<
    TaskViewRow & { sort_value: string }
  >`SELECT ${taskColumns('t')}, ${HOLDER_NAME}, (${sort.expr})::text AS sort_value
      FROM tasks t ${HOLDER_JOINS}
      WHERE ${where} AND ${after}
      ORDER BY ${sort.expr} ${dir}, t.id ${dir}
      LIMIT ${limit + 1}`
    .execute(db)
    .catch((err) => {
      // a forged cursor whose value does not read as the sort's type (22xxx: data exception)
      if (query.cursor !== null && String((err as { code?: string }).code ?? '').startsWith('22')) throw badCursor();
      throw err;
    });
  const total = await countTasks(db, caller, proc.id, query.filter);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    items: page.map((r) => taskView(r, proc.fields, caller.timeZone)),
    total,
    nextCursor: rows.length > limit ? encodeCursor({ s: sort.text, v: last.sort_value, i: last.id }) : null,
  };
}

// ---------------------------------------------------------------------------------------------
// Detail

export interface HistoryRow {
  id: number;
  at: string;
  actor: { type: 'mate' | 'user' | 'system'; id: number | null; name: string };
  action: string;
  fromQueue: string | null;
  toQueue: string | null;
  error: boolean;
  reason: string | null;
  comment: string | null;
  retryCount: number;
  requestId: string | null;
  details: Record<string, unknown> | null;
}

export interface Comment {
  id: number;
  at: string;
  author: { type: 'mate' | 'user' | 'system'; id: number | null; name: string };
  text: string;
}

export interface KpiEventView {
  id: number;
  at: string;
  outcome: string;
  entries: number;
  secondsSaved: number;
  runId: number | null;
  mateId: number | null;
}

export interface TaskDetail extends Task {
  history: HistoryRow[];
  comments: Comment[];
  kpiEvents: KpiEventView[];
}

/** A task with its whole history, comments and KPI events; `task_not_found` for a missing, deleted or other tenant's id. */
export async function getTaskDetail(db: Kysely<Database>, caller: Caller, taskId: number): Promise<TaskDetail> {
  const [task] = Number.isSafeInteger(taskId) && taskId > 0 ? await loadTaskViews(db, caller, [taskId]) : [];
  if (!task) throw new Refusal('task_not_found', `Task ${taskId} was not found`);
  const t = caller.tenantId;
  const [history, comments, kpi] = await Promise.all([
    db.selectFrom('task_history').selectAll().where('tenant_id', '=', t).where('task_id', '=', taskId).orderBy('id').execute(),
    db.selectFrom('task_comments').selectAll().where('tenant_id', '=', t).where('task_id', '=', taskId).orderBy('id').execute(),
    db.selectFrom('kpi_events').selectAll().where('tenant_id', '=', t).where('task_id', '=', taskId).orderBy('id').execute(),
  ]);
  return {
    ...task,
    history: history.map((h) => ({
      id: h.id,
      at: h.at.toISOString(),
      actor: { type: h.actor_type, id: h.actor_id, name: h.actor_name },
      action: h.action,
      fromQueue: h.from_queue,
      toQueue: h.to_queue,
      error: h.error,
      reason: h.reason,
      comment: h.comment,
      retryCount: h.retry_count,
      requestId: h.request_id,
      details: (h.details as Record<string, unknown> | null) ?? null,
    })),
    comments: comments.map((c) => ({
      id: c.id,
      at: c.created_at.toISOString(),
      author: { type: c.author_type, id: c.author_id, name: c.author_name },
      text: c.body,
    })),
    kpiEvents: kpi.map((k) => ({
      id: k.id,
      at: k.at.toISOString(),
      outcome: k.outcome,
      entries: k.entries,
      secondsSaved: Number(k.seconds_saved),
      runId: k.run_id,
      mateId: k.mate_id,
    })),
  };
}
