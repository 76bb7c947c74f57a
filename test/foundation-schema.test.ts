/**
 * The embedded store (PGlite) and PostgreSQL end up with the same schema after the migrations:
 * tables, columns (type, nullability, default, identity), indexes (with their definitions) and
 * constraints, read from information_schema and pg_catalog on both.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PGlite } from '@electric-sql/pglite';
import { openStore, type Store } from '../src/db/store.js';
import { migrate } from '../src/db/migrator.js';
import { emptyDatabase, DATABASE_URL } from './helpers/db.js';
import { EXPECTED_TABLES } from './foundation-support.js';
import { VIEWS } from '../src/db/move-store.js';

interface Schema {
  tables: string[];
  columns: string[];
  indexes: string[];
  constraints: string[];
  sequences: string[];
  others: string[];
}

/** A comparable description of the public schema, one string per object, sorted. */
async function describeSchema(store: Store): Promise<Schema> {
  const q = async (text: string) => (await store.pool.query<{ d: string }>(text)).rows.map((r) => r.d).sort();
  return {
    tables: await q(`SELECT table_name || ' ' || table_type AS d FROM information_schema.tables WHERE table_schema = 'public'`),
    columns: await q(`
      SELECT concat_ws(' | ', table_name || '.' || column_name, 'pos ' || ordinal_position, data_type, udt_name,
        'len ' || character_maximum_length, 'prec ' || numeric_precision || ',' || numeric_scale,
        'null ' || is_nullable, 'default ' || column_default, 'identity ' || is_identity || ' ' || coalesce(identity_generation, ''),
        'generated ' || is_generated || ' ' || coalesce(generation_expression, '')) AS d
      FROM information_schema.columns WHERE table_schema = 'public'`),
    indexes: await q(`SELECT tablename || ': ' || indexdef AS d FROM pg_indexes WHERE schemaname = 'public'`),
    // PostgreSQL 18 (PGlite) also records NOT NULL as constraints (contype 'n'); 15 does not.
    // Nullability is compared through the columns instead.
    constraints: await q(`
      SELECT c.conrelid::regclass::text || ' ' || c.conname || ' ' || c.contype::text || ': ' || pg_get_constraintdef(c.oid) AS d
      FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
      WHERE n.nspname = 'public' AND c.contype <> 'n'`),
    sequences: await q(`
      SELECT sequence_name || ' ' || data_type || ' ' || start_value || ' ' || increment AS d
      FROM information_schema.sequences WHERE sequence_schema = 'public'`),
    // Views, functions, triggers and types, should a later migration add any.
    others: await q(`
      SELECT 'view ' || table_name AS d FROM information_schema.views WHERE table_schema = 'public'
      UNION ALL SELECT 'routine ' || routine_name || ' ' || routine_type FROM information_schema.routines WHERE routine_schema = 'public'
      UNION ALL SELECT 'trigger ' || event_object_table || '.' || trigger_name || ' ' || event_manipulation FROM information_schema.triggers WHERE trigger_schema = 'public'
      UNION ALL SELECT 'type ' || t.typname || ' ' || t.typtype::text FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
        WHERE n.nspname = 'public' AND t.typtype IN ('e', 'd', 'c') AND NOT EXISTS (SELECT 1 FROM pg_class r WHERE r.reltype = t.oid)`),
  };
}

async function migratedPglite(): Promise<{ store: Store; close: () => Promise<void> }> {
  const lite = await PGlite.create();
  const store = await openStore({ databaseUrl: null, dataDir: '', pglite: lite });
  await migrate(store);
  return {
    store,
    close: async () => {
      await store.close();
      await lite.close();
    },
  };
}

test('PGlite: the migrations produce the domain tables, their indexes and constraints', async () => {
  const lite = await migratedPglite();
  try {
    const s = await describeSchema(lite.store);
    assert.deepEqual(s.tables, [...EXPECTED_TABLES.map((t) => `${t} BASE TABLE`), ...VIEWS.map((v) => `${v} VIEW`)].sort());
    // Every table has a primary key, and every tenant-owned table leads its primary key with tenant_id.
    const pks = s.constraints.filter((c) => / p: /.test(c));
    for (const t of EXPECTED_TABLES)
      assert.ok(
        pks.some((c) => c.startsWith(`${t} `)),
        `${t} has a primary key`,
      );
    // (the views carry tenant_id too, and have no keys)
    const tenantOwned = s.columns
      .filter((c) => /^\w+\.tenant_id \|/.test(c))
      .map((c) => c.split('.')[0])
      .filter((t) => !VIEWS.includes(t));
    assert.ok(tenantOwned.length >= 15, 'tenant-owned tables carry tenant_id');
    for (const t of tenantOwned) {
      const pk = pks.find((c) => c.startsWith(`${t} `))!;
      assert.match(pk, /PRIMARY KEY \(tenant_id, /, `${t}: ${pk}`);
    }
    assert.ok(
      s.indexes.some((i) => i.includes('tasks_take_idx')),
      'the take-next index exists',
    );
  } finally {
    await lite.close();
  }
});

test(
  'PGlite and PostgreSQL have the same schema after the migrations',
  { skip: DATABASE_URL ? false : 'needs PostgreSQL: set DATABASE_URL (.ci/run does)' },
  async () => {
    const [lite, pg] = await Promise.all([migratedPglite(), emptyDatabase()]);
    try {
      await migrate(pg.store);
      const [a, b] = await Promise.all([describeSchema(lite.store), describeSchema(pg.store)]);
      for (const part of Object.keys(a) as Array<keyof Schema>) {
        assert.deepEqual(a[part], b[part], `${part} differ between PGlite (actual) and PostgreSQL (expected)`);
      }
      assert.ok(a.columns.length > 100 && a.indexes.length > 20 && a.constraints.length > 40, 'the comparison saw the schema');
    } finally {
      await Promise.all([lite.close(), pg.close()]);
    }
  },
);
