/**
 * Multi-row statements through `unnest`: one round trip writes any number of rows, which is what
 * lets the take and hand-back paths serve many callers with one statement.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import { PREPARED } from './store.js';
import type { Database } from './types.js';

export type Column = readonly [name: string, pgType: string];

/** One write statement; several run together as one statement (executeWrites). */
export type Write = RawBuilder<unknown>;

/** `INSERT INTO table (cols) SELECT FROM unnest($1::t1[], …)`, or null for no rows; jsonb columns are passed as text. */
export function insertRowsWrite(table: string, columns: readonly Column[], rows: readonly unknown[][]): Write | null {
  return rows.length === 0 ? null : insertRowsQuery(table, columns, rows, sql``);
}

/**
 * Runs writes to different tables as ONE statement (data-modifying CTEs): one round trip, one
 * parse, however many tables a change touches. The writes see the same snapshot, so none may
 * depend on another's effect.
 */
export async function executeWrites(db: Kysely<Database>, writes: readonly (Write | null)[]): Promise<void> {
  const w = writes.filter((x): x is Write => x !== null);
  if (w.length === 0) return;
  // prepared: the texts vary only with which writes are present
  if (w.length === 1) {
    await sql`${sql.raw(PREPARED)} ${w[0]}`.execute(db);
    return;
  }
  await sql`${sql.raw(PREPARED)} WITH ${sql.join(w.map((q, i) => sql`${sql.raw(`w${i}`)} AS (${q})`))} SELECT 1`.execute(db);
}

/** With `overridingSystemValue`, identity columns take the given ids. */
export function insertRowsQuery(
  table: string,
  columns: readonly Column[],
  rows: readonly unknown[][],
  tail: RawBuilder<unknown>,
  overridingSystemValue = false,
): RawBuilder<any> {
  const arrays = columns.map((_, i) => rows.map((r) => normalize(r[i], columns[i][1])));
  const names = sql.raw(columns.map(([n]) => n).join(', '));
  const selects = sql.join(columns.map(([n, t]) => (t === 'jsonb' ? sql`${sql.ref(`u.${n}`)}::jsonb` : sql.ref(`u.${n}`))));
  const unnests = sql.join(columns.map(([, t], i) => sql`${arrays[i]}::${sql.raw(t === 'jsonb' ? 'text' : t)}[]`));
  const aliases = sql.raw(columns.map(([n]) => n).join(', '));
  const overriding = sql.raw(overridingSystemValue ? 'OVERRIDING SYSTEM VALUE' : '');
  return sql`INSERT INTO ${sql.raw(table)} (${names}) ${overriding} SELECT ${selects} FROM unnest(${unnests}) AS u(${aliases}) ${tail}`;
}

function normalize(v: unknown, type: string): unknown {
  if (v === undefined || v === null) return null;
  if (type === 'jsonb') return JSON.stringify(v);
  if (v instanceof Date) return v.toISOString();
  return v;
}
