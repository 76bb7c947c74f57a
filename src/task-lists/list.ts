/**
 * One process's tasks as a list for people (docs/product.md §5.6): a sort on any system attribute
 * or field, keyset ("cursor") pagination and a total.
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
import { showValue } from '../lib/values.js';
import type { ProcessDef } from '../processes/store.js';
import { taskColumns } from '../tasks/store.js';
import { countTasks, fieldFor, filterCondition, problem, readFilterInto, refuse, unknownField, type TaskFilter } from './filter.js';
import { HOLDER_JOINS, HOLDER_NAME, taskView, type Task, type TaskViewRow } from './view.js';

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
 * A list query (`GET /v1/processes/:id/tasks`) as its route's schema parsed it: `sort`, `limit` and
 * `cursor` are texts; the other keys are the filter's, read by readFilterInto (the f.<field> keys
 * depend on the process's fields, which no schema knows).
 */
export type TaskListParams = Record<string, unknown> & { sort?: string; limit?: string; cursor?: string };

/**
 * Reads a list query: the filter keys, `sort` (default -createdAt), `limit` (1..500, default 50)
 * and `cursor`. The schema states them as texts (its OpenAPI), so what they must say is read here.
 * Refuses naming every bad key.
 */
export function readTaskListQuery(raw: TaskListParams, proc: ProcessDef, timeZone: string): TaskListQuery {
  const problems: FieldProblem[] = [];
  const filter = readFilterInto(raw, proc, timeZone, problems);
  const sort = readSort(raw.sort === undefined || raw.sort === '' ? DEFAULT_SORT : raw.sort, proc, problems);
  let limit = DEFAULT_LIMIT;
  const l = raw.limit;
  if (l !== undefined && l !== '') {
    const n = Number(l);
    if (!/^\d+$/.test(l) || n < 1 || n > MAX_LIMIT)
      problems.push(problem('limit', l, `"limit": ${showValue(l)} is not a whole number from 1 to ${MAX_LIMIT}`));
    else limit = n;
  }
  refuse(problems);
  return { filter, sort: sort!, limit, cursor: raw.cursor === undefined || raw.cursor === '' ? null : raw.cursor };
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

/**
 * The statement of one page: the filter, the keyset condition after the cursor, ORDER BY the sort
 * key and id, LIMIT limit + 1 (to know whether a next page exists). Exported for the EXPLAIN test.
 */
export function pageStatement(caller: Caller, proc: ProcessDef, query: TaskListQuery): RawBuilder<TaskViewRow & { sort_value: string }> {
  const { sort, limit } = query;
  const where = filterCondition(caller.tenantId, proc.id, query.filter, caller.now);
  const dir = sql.raw(sort.desc ? 'DESC' : 'ASC');
  let after: RawBuilder<unknown> = sql`true`;
  if (query.cursor !== null) {
    const c = decodeCursor(query.cursor, sort);
    const cmp = sql.raw(sort.desc ? '<' : '>');
    after = sql`(${sort.expr}, t.id) ${cmp} (CAST(${c.v} AS ${sql.raw(sort.type)}), ${c.i}::bigint)`;
  }
  return sql<TaskViewRow & { sort_value: string }>`SELECT ${taskColumns('t')}, ${HOLDER_NAME}, (${sort.expr})::text AS sort_value
    FROM tasks t ${HOLDER_JOINS}
    WHERE ${where} AND ${after}
    ORDER BY ${sort.expr} ${dir}, t.id ${dir}
    LIMIT ${limit + 1}`;
}

/** One page of a process's tasks, with the total matching the filter. */
export async function listTasks(db: Kysely<Database>, caller: Caller, proc: ProcessDef, query: TaskListQuery): Promise<TaskPage> {
  const { sort, limit } = query;
  const { rows } = await pageStatement(caller, proc, query)
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
