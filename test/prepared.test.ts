/**
 * Hot-path statements are sent as named prepared statements (src/db/store.ts, PREPARED), and on
 * PostgreSQL the takes and hand-backs run on connections that plan each of them once (hotDb).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { Mate } from './helpers/mate.js';
import { openStore, PREPARED } from '../src/db/store.js';
import { STORE_KIND } from './helpers/db.js';

let t: TestApp;
let tenant: SeededTenant;
let mate: Mate;

before(async () => {
  t = await testApp();
  tenant = await seedTenant(t.store, 'prep', { processes: [{ processKey: 'P', fields: [{ name: 'n', type: 'integer' }] }] });
  mate = await Mate.signIn(t.app, tenant);
});
after(() => t.close());

test('a marked statement is prepared once per connection and reused; others are not', async () => {
  const client = await t.store.pool.connect();
  try {
    const marked = `${PREPARED} SELECT $1::int + 1 AS x`;
    assert.equal((await client.query(marked, [41])).rows[0].x, 42);
    assert.equal((await client.query(marked, [1])).rows[0].x, 2);
    await client.query('SELECT $1::int AS plain', [1]);
    const { rows } = await client.query<{ statement: string }>('SELECT statement FROM pg_prepared_statements');
    assert.deepEqual(
      rows.map((r) => r.statement).filter((s) => s.includes('$1::int')),
      [marked],
    );
  } finally {
    client.release();
  }
});

test('a migration adding columns does not break the statements a running server has prepared', async () => {
  const ids: number[] = (await mate.post('/api/CreateTasks/P', [{ n: 1 }, { n: 2 }])).body.taskIds;
  const first = await mate.takeNext('P');
  assert.equal((await mate.post('/api/Solved', { taskId: first.taskId })).body.succeeded, true);
  await sql`ALTER TABLE tasks ADD COLUMN added_later integer`.execute(t.store.db);
  await sql`ALTER TABLE processes ADD COLUMN added_later integer`.execute(t.store.db);
  const second = await mate.takeNext('P');
  assert.deepEqual([first.taskId, second.taskId].sort(), [...ids].sort());
  const solved = await mate.post('/api/Solved', { taskId: second.taskId });
  assert.equal(solved.body.succeeded, true, JSON.stringify(solved.body));
  assert.equal((await mate.takeNext('P')).taskId, -1);
});

test(
  'takes and hand-backs run on the hot connections, planned once; the other connections keep custom plans',
  { skip: STORE_KIND !== 'postgres' && 'the hot connections are PostgreSQL connections' },
  async () => {
    const setting = async (db: typeof t.store.db) =>
      (await sql<{ plan_cache_mode: string }>`SHOW plan_cache_mode`.execute(db)).rows[0].plan_cache_mode;
    assert.notEqual(t.store.hotDb, t.store.db);
    assert.equal(await setting(t.store.hotDb), 'force_generic_plan');
    assert.equal(await setting(t.store.db), 'auto');
    // Mates taking batches of different sizes: each statement is planned once per hot connection
    const ids: number[] = (
      await mate.post(
        '/api/CreateTasks/P',
        Array.from({ length: 40 }, (_, n) => ({ n })),
      )
    ).body.taskIds;
    for (const size of [1, 3, 7, 2, 5, 4, 6, 1, 8]) {
      const taken = await Promise.all(Array.from({ length: size }, () => mate.takeNext('P')));
      const solved = await Promise.all(taken.map((task) => mate.post('/api/Solved', { taskId: task.taskId })));
      assert.ok(solved.every((r) => r.body.succeeded === true));
    }
    assert.equal(ids.length, 40);
    // every hot connection (pg_prepared_statements is per connection): no custom plan of a take
    const pool = t.store.hotPool!;
    const clients = await Promise.all(Array.from({ length: pool.options.max }, () => pool.connect()));
    try {
      let generic = 0;
      for (const c of clients) {
        const { rows } = await c.query<{ custom: number; generic: number }>(
          `SELECT coalesce(sum(custom_plans), 0)::int AS custom, coalesce(sum(generic_plans), 0)::int AS generic
         FROM pg_prepared_statements WHERE statement LIKE '%WITH picked AS%'`,
        );
        assert.equal(rows[0].custom, 0);
        generic += rows[0].generic;
      }
      // each batch of takes ran on the generic plan (a batch of several takes is one statement)
      assert.ok(generic >= 9, `generic plans used: ${generic}`);
    } finally {
      clients.forEach((c) => c.release());
    }
  },
);

test(
  'without prepared statements, or on a pool of one, there are no separate hot connections',
  { skip: STORE_KIND !== 'postgres' && 'PostgreSQL settings' },
  async () => {
    const url = (t.store as unknown as { url: string }).url;
    for (const opts of [
      { preparedStatements: false, poolSize: 4 },
      { preparedStatements: true, poolSize: 1 },
    ]) {
      const store = await openStore({ databaseUrl: url, dataDir: '', genericPlans: true, ...opts });
      try {
        assert.equal(store.hotDb, store.db);
        assert.equal((await sql<{ plan_cache_mode: string }>`SHOW plan_cache_mode`.execute(store.db)).rows[0].plan_cache_mode, 'auto');
      } finally {
        await store.close();
      }
    }
  },
);
