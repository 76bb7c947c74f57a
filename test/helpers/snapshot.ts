/**
 * The stored state of a tenant (or of every tenant), for tests asserting that a request changed
 * nothing: every row of every table with a tenant_id column, as JSON, in a stable order, read in
 * one statement. A Mate's last contact is left out: every authenticated call records it
 * (docs/mate-api.md §7), refused or not.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';

const VOLATILE: Record<string, string[]> = { mates: ['last_contact_at'] };

const tablesOf = new WeakMap<object, Promise<string[]>>();

export function tenantTables(db: Kysely<any>): Promise<string[]> {
  let p = tablesOf.get(db);
  if (!p) {
    p = sql<{ table_name: string }>`SELECT DISTINCT table_name FROM information_schema.columns
      WHERE table_schema = current_schema() AND column_name = 'tenant_id' ORDER BY table_name`
      .execute(db)
      .then((r) => r.rows.map((x) => x.table_name));
    tablesOf.set(db, p);
  }
  return p;
}

export async function snapshot(db: Kysely<any>, tenantId?: number): Promise<Record<string, string[]>> {
  const tables = await tenantTables(db);
  const parts: RawBuilder<unknown>[] = tables.map((table) => {
    const row = (VOLATILE[table] ?? []).reduce((acc, col) => sql`${acc} - ${sql.lit(col)}::text`, sql`to_jsonb(t)`);
    const where = tenantId === undefined ? sql`true` : sql`t.tenant_id = ${sql.lit(tenantId)}`;
    return sql`SELECT ${sql.lit(table)}::text AS tbl, (${row})::text AS j FROM ${sql.table(table)} t WHERE ${where}`;
  });
  const { rows } = await sql<{ tbl: string; j: string }>`${sql.join(parts, sql` UNION ALL `)}`.execute(db);
  const out: Record<string, string[]> = Object.fromEntries(tables.map((t) => [t, [] as string[]]));
  for (const r of rows) out[r.tbl].push(r.j);
  for (const t of tables) out[t].sort();
  return out;
}
