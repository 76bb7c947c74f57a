/**
 * Row contention between Mates on one task, with two server processes on one database (two pools,
 * so calls really overlap in the database): a Mate's wrong call (Solved, UpdateTask or ExtendLock
 * on a task it does not hold) is refused without taking the row, so the holder is never answered
 * 409 because of it; concurrent hand-backs of one task have one winner and the others are refused
 * as any late hand-back is (`succeeded: false`, 200), never 409. PostgreSQL only: the embedded
 * store is one connection, so its requests never overlap in the database.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { testApp, type TestApp } from '../helpers/app.js';
import { MATE_PASSWORD, seedTenant, type SeededTenant } from '../helpers/seed.js';
import { Mate, type MateResponse } from '../helpers/mate.js';
import { STORE_KIND } from '../helpers/db.js';
import { createApp } from '../../src/app.js';
import { withSuiteLog } from '../helpers/log-sink.js';
import { openStore, type Store } from '../../src/db/store.js';
import { createMate } from '../../src/accounts/service.js';

const skip = STORE_KIND !== 'postgres' ? 'PostgreSQL only (DATABASE_URL): the embedded store is one connection' : false;
const ROUNDS = 20;

let t: TestApp;
let store2: Store;
let app2: FastifyInstance;
let tenant: SeededTenant;
/** the holder, on the first server process */
let holder: Mate;
/** the holder's credentials on the second server process */
let holder2: Mate;
/** another Mate of the tenant, on both server processes */
let wrong: Mate[];

before(async () => {
  if (skip) return;
  t = await testApp({ config: { dbPoolSize: 8 } });
  store2 = await openStore({ databaseUrl: t.store.url!, dataDir: '', poolSize: 8 });
  app2 = await createApp(...withSuiteLog(t.config, { store: store2, sweeper: false }));
  await app2.ready();
  tenant = await seedTenant(t.store, 'contend', { processes: [{ processKey: 'Work' }] });
  await createMate(t.store.db, tenant.tenantId, { username: 'contend-other', password: MATE_PASSWORD });
  holder = await Mate.signIn(t.app, tenant);
  holder2 = new Mate(app2, holder.token);
  const other = await Mate.signIn(t.app, tenant, 'contend-other', MATE_PASSWORD);
  wrong = [other, new Mate(app2, other.token)];
});
after(async () => {
  if (skip) return;
  await app2.close();
  await store2.close();
  await t.close();
});

async function solvedCount(taskId: number): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM task_history
    WHERE tenant_id = ${tenant.tenantId} AND task_id = ${taskId} AND action = 'Solved'`.execute(t.store.db);
  return rows[0].n;
}

const show = (r: MateResponse) => `${r.status} ${JSON.stringify(r.body)}`;

test('a wrong Mate hammering Solved, UpdateTask and ExtendLock on a held task: the holder is never answered 409', { skip }, async () => {
  const wrongAnswers: MateResponse[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const id = await holder.create('Work', { round });
    assert.equal((await holder.takeNext('Work')).taskId, id);
    let stop = false;
    const hammer = async (m: Mate, k: number) => {
      for (let i = 0; !stop; i++) {
        const calls = [
          () => m.post('/api/Solved', { taskId: id }),
          () => m.post('/api/UpdateTask', { taskId: id, note: `wrong-${i}` }),
          () => m.post('/api/ExtendLock', { taskId: id, seconds: 60 }),
        ];
        wrongAnswers.push(await calls[(i + k) % 3]());
      }
    };
    const hammers = [0, 1, 2, 3].map((k) => hammer(wrong[k % 2], k));
    try {
      // the holder works on its task while the wrong calls run, then hands it back
      const ext = await holder.post('/api/ExtendLock', { taskId: id, seconds: 120 });
      assert.equal(ext.body.succeeded, true, show(ext));
      const upd = await (round % 2 ? holder2 : holder).post('/api/UpdateTask', { taskId: id, note: 'mine' });
      assert.equal(upd.body.succeeded, true, show(upd));
      const solved = await (round % 2 ? holder : holder2).post('/api/Solved', { taskId: id });
      assert.equal(solved.status, 200, show(solved));
      assert.equal(solved.body.succeeded, true, show(solved));
    } finally {
      stop = true;
      await Promise.all(hammers);
    }
    assert.equal(await solvedCount(id), 1);
  }
  // the wrong calls were all refused as such, none answered 409 (or anything but 200)
  assert.ok(wrongAnswers.length >= ROUNDS * 4);
  for (const r of wrongAnswers) {
    assert.equal(r.status, 200, show(r));
    assert.equal(r.body.succeeded, false, show(r));
    assert.ok(['task_not_locked_by_you', 'task_solved'].includes(r.body.code), show(r));
  }
  // nothing the wrong Mate sent was written
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM tasks
    WHERE tenant_id = ${tenant.tenantId} AND data ->> 'note' LIKE 'wrong-%'`.execute(t.store.db);
  assert.equal(rows[0].n, 0);
});

test(
  'concurrent hand-backs of one task by its holder on two server processes: one wins, the others get succeeded: false, never 409',
  { skip },
  async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const id = await holder.create('Work', { round });
      assert.equal((await holder.takeNext('Work')).taskId, id);
      const answers = await Promise.all(
        [holder, holder2, holder2, holder, holder2, holder2].map((m, i) =>
          m.post(i % 3 === 2 ? '/api/Error' : '/api/Solved', { taskId: id, reason: 'r' }),
        ),
      );
      for (const a of answers) assert.equal(a.status, 200, show(a));
      const won = answers.filter((a) => a.body.succeeded === true);
      assert.equal(won.length, 1, answers.map(show).join('\n'));
      for (const a of answers.filter((x) => x.body.succeeded !== true)) {
        assert.equal(a.body.succeeded, false, show(a));
        // the task left the holder's hands: solved, or sent to Manual as an Error
        assert.ok(['task_solved', 'task_not_locked_by_you'].includes(a.body.code), show(a));
      }
      const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM task_history
      WHERE tenant_id = ${tenant.tenantId} AND task_id = ${id} AND action IN ('Solved', 'Error')`.execute(t.store.db);
      assert.equal(rows[0].n, 1, 'one hand-back was written');
    }
  },
);
