/**
 * Races on unique constraints with real concurrency (issue 7 item 8), and a stuck row lock (the
 * store's lock timeout): PostgreSQL only — the embedded store is one connection, so its requests
 * never overlap in the database.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import type { FastifyInstance } from 'fastify';
import { testApp, type TestApp } from '../helpers/app.js';
import { seedTenant, type SeededTenant } from '../helpers/seed.js';
import { Mate } from '../helpers/mate.js';
import { STORE_KIND } from '../helpers/db.js';
import { createApp } from '../../src/app.js';
import { withSuiteLog } from '../helpers/log-sink.js';
import { openStore, type Store } from '../../src/db/store.js';

const skip = STORE_KIND !== 'postgres' ? 'PostgreSQL only (DATABASE_URL)' : false;
const N = 24;
const FIELDS = [{ name: 'ref', type: 'text' as const, isKey: true, unique: true }];

let t: TestApp;
let tenant: SeededTenant;
let mates: Mate[];

before(async () => {
  if (skip) return;
  t = await testApp({ config: { dbPoolSize: 10 } });
  tenant = await seedTenant(t.store, 'races', { processes: [{ processKey: 'UK', fields: FIELDS }] });
  const m = await Mate.signIn(t.app, tenant);
  mates = Array.from({ length: N }, () => new Mate(t.app, m.token));
});
after(async () => {
  if (!skip) await t.close();
});

function tally(answers: Array<{ status: number; body: any }>) {
  const statuses = answers.map((a) => a.status);
  assert.deepEqual(
    statuses.filter((s) => s !== 200),
    [],
    `no 500: ${JSON.stringify(answers.find((a) => a.status !== 200)?.body)}`,
  );
  return {
    // CreateAndTakeTask answers the task object itself (no succeeded key), or the dummy task with a code
    won: answers.filter((a) => a.body.code === undefined),
    lost: answers.filter((a) => a.body.code !== undefined),
  };
}

test(
  'concurrent CreateAndTakeTask, CreateTask and CreateTasks with one unique value: one wins, the others get duplicate_key',
  { skip },
  async () => {
    for (const [route, body] of [
      ['CreateAndTakeTask', () => ({ ref: 'same-1' })],
      ['CreateTask', () => ({ ref: 'same-2' })],
      ['CreateTasks', (i: number) => [{ ref: `solo-${i}` }, { ref: 'same-3' }]],
    ] as const) {
      const answers = await Promise.all(mates.map((m, i) => m.post(`/api/${route}/UK`, body(i))));
      const { won, lost } = tally(answers);
      assert.equal(won.length, 1, `${route}: exactly one wins`);
      assert.equal(lost.length, N - 1);
      for (const l of lost) assert.equal(l.body.code, 'duplicate_key', `${route}: ${JSON.stringify(l.body)}`);
      const winner = won[0].body.taskId ?? won[0].body.taskIds?.[1];
      for (const l of lost) if (route !== 'CreateTasks') assert.equal(l.body.existingTaskId, winner, 'the loser is told the winner');
    }
    const { count } = await t.store.db
      .selectFrom('tasks')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .where('tenant_id', '=', tenant.tenantId)
      .where('unique_key', 'in', ['same-1', 'same-2', 'same-3'])
      .executeTakeFirstOrThrow();
    assert.equal(Number(count), 3);
  },
);

test('concurrent UpdateTask setting one unique value on different tasks: one wins, the others get duplicate_key', { skip }, async () => {
  const ids: number[] = [];
  for (let i = 0; i < N; i++) ids.push(await mates[0].create('UK', { ref: `upd-${i}` }));
  const taken = await mates[0].get(`/api/TakeMany/UK?count=100`);
  const mine = new Set(taken.body.map((x: any) => x.taskId));
  for (const id of ids) assert.ok(mine.has(id));
  const answers = await Promise.all(ids.map((id, i) => mates[i].post('/api/UpdateTask', { taskId: id, ref: 'the-one' })));
  const { won, lost } = tally(answers);
  assert.equal(won.length, 1);
  for (const l of lost) assert.equal(l.body.code, 'duplicate_key', JSON.stringify(l.body));
});

test(
  'one stuck row lock: a request on that task is 503 with Retry-After after the lock timeout, other tasks are served',
  { skip },
  async () => {
    // a second server process whose store waits at most 300 ms for a row lock
    const store: Store = await openStore({ databaseUrl: t.store.url!, dataDir: '', poolSize: 4, lockTimeoutMs: 300 });
    const app: FastifyInstance = await createApp(...withSuiteLog(t.config, { store, sweeper: false }));
    const holder = new pg.Client({ connectionString: t.store.url! });
    await holder.connect();
    try {
      const m = new Mate(app, mates[0].token);
      const stuck = await m.create('UK', { ref: 'stuck' });
      const free = await m.create('UK', { ref: 'free' });
      await t.store.db.updateTable('tasks').set({ urgent: true }).where('id', 'in', [stuck, free]).execute();
      const taken = (await m.get('/api/TakeMany/UK?count=2')).body.map((x: any) => x.taskId).sort();
      assert.deepEqual(taken, [stuck, free].sort());
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM tasks WHERE id = $1 FOR UPDATE', [stuck]);
      const r = await m.post('/api/UpdateTask', { taskId: stuck, ref: 'stuck-2' });
      assert.equal(r.status, 503, JSON.stringify(r.body));
      assert.equal(r.body.code, 'unavailable');
      assert.equal(r.headers['retry-after'], '5');
      const ok = await m.post('/api/UpdateTask', { taskId: free, ref: 'free-2' });
      assert.equal(ok.body.succeeded, true, JSON.stringify(ok.body));
      await holder.query('ROLLBACK');
      const after = await m.post('/api/UpdateTask', { taskId: stuck, ref: 'stuck-3' });
      assert.equal(after.body.succeeded, true, 'once the lock is gone the task is served');
    } finally {
      await holder.end();
      await app.close();
      await store.close();
    }
  },
);
