/**
 * The copy list of `queuemate move-store` (src/db/move-store.ts) against a migrated database:
 * every table of the schema is in it, it names no table that is gone, and each table comes after
 * the tables it references. A migration that adds a table fails here until the list copies it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStore, STORE_KIND } from './helpers/db.js';
import { copyListProblems, TABLES, VIEWS } from '../src/db/move-store.js';

test(`${STORE_KIND}: the move-store copy list is every table of the schema, in reference order`, async () => {
  const store = await testStore();
  try {
    assert.deepEqual(await copyListProblems(store.pool), []);
    const { rows } = await store.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM information_schema.tables
       WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> 'schema_migrations'`,
    );
    assert.equal(TABLES.length, rows[0].n);
    // the views, which the migrations make and the move does not copy, are known by name (an
    // empty target may hold them)
    const views = await store.pool.query<{ name: string }>(
      `SELECT table_name AS name FROM information_schema.views WHERE table_schema = current_schema() ORDER BY 1`,
    );
    assert.deepEqual(
      views.rows.map((r) => r.name),
      [...VIEWS].sort(),
    );
    // the check itself: a table the list lacks is reported
    await store.pool.query('CREATE TABLE zz_new_table (id int PRIMARY KEY, tenant_id bigint REFERENCES tenants (id))');
    assert.deepEqual(await copyListProblems(store.pool), ['table zz_new_table is not in the copy list']);
  } finally {
    await store.close();
  }
});
