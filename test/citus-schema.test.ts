/**
 * Ready for Citus, checked on the migrated schema (docs/deployment.md, "Beyond one PostgreSQL:
 * Citus"): every table but the global ones has tenant_id; every primary key, unique index and
 * foreign key of a tenant table includes it (so each can be enforced on the one node holding the
 * tenant's rows); task and run ids come from no shared counter. The last test adds tables that
 * break each rule, to show the check notices.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type pg from 'pg';
import { testStore, STORE_KIND, type TestStore } from './helpers/db.js';

/**
 * The tables without tenant_id, each with why (docs/deployment.md: reference tables, copied to
 * every node, and the migrations' own table).
 */
const GLOBAL_TABLES: Record<string, string> = {
  tenants: 'the tenants themselves: its id is the tenant id; read with every credential check (a reference table)',
  signing_keys: "the server's token signing keys, shared by all tenants (a reference table)",
  sign_in_failures: 'the sign-in throttle, keyed by username and client address before any tenant is known (a reference table)',
  schema_migrations: 'the applied migrations (a reference table)',
};

/** Tables whose id a tenant sees and that must come from no counter shared between tenants. */
const RANDOM_ID_TABLES = ['tasks', 'runs'];

let store: TestStore;
before(async () => {
  store = await testStore({ poolSize: 2 });
});
after(() => store.close());

interface Key {
  table: string;
  name: string;
  kind: 'primary key' | 'unique index' | 'foreign key';
  columns: string[];
  /** foreign keys: the referenced table and columns, in the same order */
  refTable?: string;
  refColumns?: string[];
}

/** The problems of the schema against the rules above, one line each (none: ready). */
async function tenantKeyProblems(pool: pg.Pool): Promise<string[]> {
  const q = async <T extends object>(text: string) => (await pool.query<T>(text)).rows;
  const problems: string[] = [];
  const tables = await q<{ table: string; tenant: boolean; nullable: boolean }>(`
    SELECT c.relname AS table, a.attname IS NOT NULL AS tenant, COALESCE(NOT a.attnotnull, false) AS nullable
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped
    WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') ORDER BY 1`);
  const tenantTables = new Set(tables.filter((t) => t.tenant).map((t) => t.table));
  for (const t of tables) {
    if (!t.tenant && !(t.table in GLOBAL_TABLES)) problems.push(`${t.table}: no tenant_id column`);
    if (t.tenant && t.nullable) problems.push(`${t.table}: tenant_id may be null`);
    if (t.tenant && t.table in GLOBAL_TABLES) problems.push(`${t.table}: has tenant_id but is listed as global`);
  }
  // primary keys and unique indexes (constraints or not, partial or on expressions): key columns by
  // name, 0 (an expression) as null
  const uniques = await q<{ table: string; name: string; primary: boolean; columns: (string | null)[] }>(`
    SELECT c.relname AS table, i.relname AS name, x.indisprimary AS primary,
      ARRAY(SELECT a.attname::text FROM unnest(x.indkey[0:x.indnkeyatts - 1]) WITH ORDINALITY k(attnum, pos)
            LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum ORDER BY k.pos) AS columns
    FROM pg_index x JOIN pg_class c ON c.oid = x.indrelid JOIN pg_class i ON i.oid = x.indexrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'public' AND x.indisunique ORDER BY 1, 2`);
  const keys: Key[] = uniques.map((u) => ({
    table: u.table,
    name: u.name,
    kind: u.primary ? 'primary key' : 'unique index',
    columns: u.columns.map((c) => c ?? '(expression)'),
  }));
  for (const t of tenantTables)
    if (!uniques.some((u) => u.table === t && u.primary)) problems.push(`${t}: no primary key (rows must be addressable on their node)`);
  const fks = await q<{ table: string; name: string; columns: string[]; ref_table: string; ref_columns: string[] }>(`
    SELECT c.relname AS table, k.conname AS name, r.relname AS ref_table,
      ARRAY(SELECT a.attname::text FROM unnest(k.conkey) WITH ORDINALITY u(attnum, pos)
            JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.attnum ORDER BY u.pos) AS columns,
      ARRAY(SELECT a.attname::text FROM unnest(k.confkey) WITH ORDINALITY u(attnum, pos)
            JOIN pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = u.attnum ORDER BY u.pos) AS ref_columns
    FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_class r ON r.oid = k.confrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'public' AND k.contype = 'f' ORDER BY 1, 2`);
  for (const f of fks)
    keys.push({ table: f.table, name: f.name, kind: 'foreign key', columns: f.columns, refTable: f.ref_table, refColumns: f.ref_columns });
  for (const k of keys) {
    if (!tenantTables.has(k.table)) continue;
    if (k.kind !== 'foreign key') {
      if (!k.columns.includes('tenant_id')) problems.push(`${k.table}: ${k.kind} ${k.name} (${k.columns.join(', ')}) lacks tenant_id`);
      else if (k.kind === 'primary key' && k.columns[0] !== 'tenant_id')
        problems.push(`${k.table}: primary key ${k.name} (${k.columns.join(', ')}) does not start with tenant_id`);
      continue;
    }
    const at = k.columns.indexOf('tenant_id');
    if (at < 0) {
      problems.push(`${k.table}: foreign key ${k.name} (${k.columns.join(', ')}) lacks tenant_id`);
      continue;
    }
    // tenant_id must point at the tenant: tenants.id, or the referenced tenant table's tenant_id
    const target = k.refColumns![at];
    const ok = k.refTable === 'tenants' ? target === 'id' : tenantTables.has(k.refTable!) && target === 'tenant_id';
    if (!ok) problems.push(`${k.table}: foreign key ${k.name} maps tenant_id to ${k.refTable}.${target}`);
  }
  const defaults = await q<{ table: string; def: string | null; identity: string }>(`
    SELECT table_name AS table, column_default AS def, is_identity AS identity FROM information_schema.columns
    WHERE table_schema = 'public' AND column_name = 'id' AND table_name = ANY('{${RANDOM_ID_TABLES.join(',')}}')`);
  for (const t of RANDOM_ID_TABLES) {
    const d = defaults.find((x) => x.table === t);
    if (!d || d.identity === 'YES' || d.def !== 'qm_random_id()')
      problems.push(`${t}: id is not drawn by qm_random_id() (default ${d?.def ?? 'none'}, identity ${d?.identity ?? '-'})`);
  }
  return problems;
}

test(`${STORE_KIND}: every table has tenant_id and every primary key, unique index and foreign key includes it`, async () => {
  const problems = await tenantKeyProblems(store.pool);
  assert.deepEqual(problems, [], `not ready for distribution by tenant:\n  ${problems.join('\n  ')}`);
  // the global tables exist as listed (a renamed or dropped one would leave a stale exception)
  const { rows } = await store.pool.query<{ n: string }>(
    `SELECT relname AS n FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind = 'r' AND relname = ANY($1)`,
    [Object.keys(GLOBAL_TABLES)],
  );
  assert.deepEqual(rows.map((r) => r.n).sort(), Object.keys(GLOBAL_TABLES).sort());
});

test(`${STORE_KIND}: a personal access token is unique per tenant, found by (tenant_id, token_hash); no index makes a hash unique across tenants`, async () => {
  const { rows } = await store.pool.query<{ def: string }>(
    `SELECT indexdef AS def FROM pg_indexes WHERE tablename = 'user_tokens' ORDER BY 1`,
  );
  const defs = rows.map((r) => r.def);
  assert.ok(
    defs.some((d) => /UNIQUE INDEX user_tokens_hash_key ON public\.user_tokens USING btree \(tenant_id, token_hash\)$/.test(d)),
    defs.join('\n'),
  );
  // the legacy lookup by hash alone serves only tokens issued before tokens named their tenant
  assert.ok(
    defs.some((d) => /INDEX user_tokens_legacy_hash_idx ON public\.user_tokens USING btree \(token_hash\) WHERE legacy$/.test(d)),
    defs.join('\n'),
  );
  assert.ok(!defs.some((d) => /UNIQUE/.test(d) && !/tenant_id/.test(d)), defs.join('\n'));
});

test(`${STORE_KIND}: qm_random_id() draws distinct ids over the 52-bit range, none 0, with no counter behind them`, async () => {
  const { rows } = await sql<{ id: number }>`SELECT qm_random_id() AS id FROM generate_series(1, 2000)`.execute(store.db);
  const ids = rows.map((r) => Number(r.id));
  assert.equal(new Set(ids).size, ids.length);
  for (const id of ids) assert.ok(Number.isSafeInteger(id) && id >= 1 && id < 2 ** 52, `id ${id}`);
  // spread over the whole range: 2000 draws all in its lower half, or all odd, has chance 2^-2000
  assert.ok(ids.some((id) => id >= 2 ** 51));
  assert.ok(ids.some((id) => id % 2 === 0) && ids.some((id) => id % 2 === 1));
  // consecutive draws are not a counter: their differences are not all the same
  assert.ok(new Set(ids.slice(1).map((id, i) => id - ids[i])).size > 1000);
  const { rows: seqs } = await store.pool.query<{ n: string }>(
    `SELECT sequence_name AS n FROM information_schema.sequences WHERE sequence_schema = 'public' AND sequence_name ~ '^(tasks|runs)_id'`,
  );
  assert.deepEqual(seqs, []);
});

test(`${STORE_KIND}: the check notices a table without tenant_id, and keys, unique indexes and foreign keys without it`, async () => {
  const c = await store.pool.connect();
  try {
    await c.query('BEGIN');
    await c.query(`CREATE TABLE zz_global (id bigint PRIMARY KEY)`);
    await c.query(
      `CREATE TABLE zz_owned (tenant_id bigint NOT NULL, id bigint PRIMARY KEY, code text, g bigint REFERENCES zz_global (id))`,
    );
    await c.query(`CREATE UNIQUE INDEX zz_owned_code_key ON zz_owned (lower(code))`);
    await c.query(`CREATE UNIQUE INDEX zz_owned_pair_key ON zz_owned (id, tenant_id)`);
    await c.query(`CREATE TABLE zz_child (tenant_id bigint NOT NULL, owner_id bigint NOT NULL, PRIMARY KEY (tenant_id, owner_id),
      FOREIGN KEY (tenant_id, owner_id) REFERENCES zz_owned (id, tenant_id))`);
    await c.query(`ALTER TABLE tasks ALTER COLUMN id SET DEFAULT 7`);
    const problems = await tenantKeyProblems({ query: c.query.bind(c) } as unknown as pg.Pool);
    assert.deepEqual(problems.sort(), [
      'tasks: id is not drawn by qm_random_id() (default 7, identity NO)',
      'zz_child: foreign key zz_child_tenant_id_owner_id_fkey maps tenant_id to zz_owned.id',
      'zz_global: no tenant_id column',
      'zz_owned: foreign key zz_owned_g_fkey (g) lacks tenant_id',
      'zz_owned: primary key zz_owned_pkey (id) lacks tenant_id',
      'zz_owned: unique index zz_owned_code_key ((expression)) lacks tenant_id',
    ]);
  } finally {
    await c.query('ROLLBACK');
    c.release();
  }
});
