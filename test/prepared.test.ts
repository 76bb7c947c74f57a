/** Hot-path statements are sent as named prepared statements (src/db/store.ts, PREPARED). */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { Mate } from './helpers/mate.js';
import { PREPARED } from '../src/db/store.js';

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
