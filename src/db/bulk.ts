/**
 * Multi-row statements through `unnest`: one round trip writes any number of rows, which is what
 * lets the take and hand-back paths serve many callers with one statement.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';

export type Column = readonly [name: string, pgType: string];

/** `INSERT INTO table (cols) SELECT FROM unnest($1::t1[], …)`; jsonb columns are passed as text. */
export async function insertRows(db: Kysely<any>, table: string, columns: readonly Column[], rows: readonly unknown[][]): Promise<void> {
  if (rows.length === 0) return;
  await insertRowsQuery(table, columns, rows, sql``).execute(db);
}

/** With `overridingSystemValue`, identity columns take the given ids. */
export function insertRowsQuery(table: string, columns: readonly Column[], rows: readonly unknown[][], tail: RawBuilder<unknown>, overridingSystemValue = false): RawBuilder<any> {
  const arrays = columns.map((_, i) => rows.map((r) => normalize(r[i], columns[i][1])));
  const names = sql.raw(columns.map(([n]) => n).join(', '));
  const selects = sql.join(
    columns.map(([n, t]) => (t === 'jsonb' ? sql`${sql.ref(`u.${n}`)}::jsonb` : sql.ref(`u.${n}`))),
  );
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
