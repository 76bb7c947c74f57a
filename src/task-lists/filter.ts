/**
 * Which tasks of a process (docs/product.md §5.6): a filter read from query-like keys (the list's
 * query, a bulk body's `filter`), its SQL condition and the count of matching tasks. Every
 * condition includes the caller's tenant: another tenant's tasks never match.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../db/types.js';
import { Refusal, type FieldProblem } from '../lib/errors.js';
import type { Caller } from '../lib/caller.js';
import { parseDateTimeInput } from '../lib/time.js';
import { showValue, toBoolean } from '../lib/values.js';
import { convertFieldValue, type TaskField } from '../processes/task-data.js';
import type { ProcessDef } from '../processes/store.js';
import { QUEUES, type Queue } from '../tasks/state-machine.js';

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
export const LIST_KEYS = ['sort', 'limit', 'cursor'] as const;

const FREE_KEY = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

export function problem(field: string, value: unknown, message: string): FieldProblem {
  return { field, value, code: 'invalid_field', message };
}

/** One value of a query key: repeated keys (arrays) are refused. */
export function single(key: string, value: unknown, problems: FieldProblem[]): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (Array.isArray(value) || (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean')) {
    problems.push(problem(key, value, `"${key}" must be given once, as a single value`));
    return undefined;
  }
  return String(value);
}

/** Resolves `f.<name>` against the process's fields (case-insensitively) or, without fields, a free key. */
export function fieldFor(proc: ProcessDef, name: string): { name: string; field: TaskField | null } | null {
  if (proc.fields.length === 0) return FREE_KEY.test(name) ? { name, field: null } : null;
  const f = proc.fields.find((x) => x.name.toLowerCase() === name.toLowerCase());
  return f ? { name: f.name, field: f } : null;
}

export function unknownField(proc: ProcessDef, key: string, name: string): FieldProblem {
  const names = proc.fields.map((f) => f.name).join(', ');
  return { field: key, value: name, code: 'unknown_field', message: `"${name}" is not a field of process ${proc.processKey} (${names})` };
}

export function readFilterInto(raw: Record<string, unknown>, proc: ProcessDef, timeZone: string, problems: FieldProblem[]): TaskFilter {
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

export function refuse(problems: FieldProblem[]): void {
  if (problems.length) throw new Refusal(problems[0].code, problems[0].message, problems.slice(0, 100));
}

/**
 * Reads a filter from query-like keys (the list query's, a bulk body's `filter`): the FILTER_KEYS
 * and `f.<field>`; strings as a query string carries them (booleans and numbers also accepted).
 * Refuses `invalid_field`/`unknown_field` naming each bad key. A hand reader, for what no schema
 * says: the `f.<field>` keys and their types depend on the process's fields, and a bulk body's
 * filter (read again, against the fields of then, when a stored job resumes) is any JSON object.
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
