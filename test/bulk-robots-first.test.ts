/**
 * A large bulk move and robots at once (src/bulk/jobs.ts, src/db/turns.ts), over a real port as a
 * browser and a robot reach it: the 202 arrives while the job still runs, a Mate's OkToRun and
 * TakeNext made while it runs are answered before it ends, and the job's progress moves chunk by
 * chunk. Ordering is asserted, not timing.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { getToken } from './helpers/mate.js';
import { personWithToken, type TestPerson } from './helpers/people.js';
import { inTx, personCaller } from './helpers/person.js';
import { loadProcessById } from '../src/processes/store.js';
import { createTasks, prepareTasks } from '../src/tasks/create.js';
import { assertRobotsServed, followJob, type JobAndRobot } from './helpers/job-robots.js';

const TASKS = 10_000;
let t: TestApp;
let a: SeededTenant;
let agent: TestPerson;
let mateToken: string;
let base: string;
let pid: number;

before(async () => {
  t = await testApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  a = await seedTenant(t.store, 'robots-first', { processes: [{ processKey: 'orders', fields: [{ name: 'no', type: 'text' }] }] });
  agent = await personWithToken(t.store, a.tenantId, 'agent');
  pid = (await t.store.db.selectFrom('processes').select('id').where('process_key', '=', 'orders').executeTakeFirstOrThrow()).id;
  const proc = (await loadProcessById(t.store.db, a.tenantId, pid))!;
  const caller = personCaller(a.tenantId, { id: agent.userId, username: agent.username }, new Date());
  for (let i = 0; i < TASKS; i += 1000) {
    const items = Array.from({ length: 1000 }, (_, j) => ({ no: `n${i + j}` }));
    await inTx(t.app, (tx) => createTasks(tx, caller, proc, prepareTasks(caller, proc, items, true), true));
  }
  mateToken = await getToken(t.app, a);
});
after(() => t.close());

const robot = (): JobAndRobot => ({ base, store: t.store, personToken: agent.token, mateToken });

test('a large move answers 202 at once; a Mate is answered while it runs; its progress moves', async () => {
  const started = await fetch(`${base}/v1/processes/${pid}/tasks/bulk`, {
    method: 'POST',
    headers: { authorization: `Bearer ${agent.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ action: 'move', queue: 'Manual', filter: { queue: 'Ready' } }),
  });
  assert.equal(started.status, 202);
  const body = (await started.json()) as { jobId: string; total: number };
  assert.equal(body.total, TASKS);
  await assertRobotsServed(robot(), body.jobId, TASKS, 'orders');

  // the progress a person's dialog reads moves chunk by chunk
  const { job, seen } = await followJob(robot(), body.jobId);
  assert.equal(job.status, 'done');
  // the task the Mate holds is skipped if the job had not moved it before the take
  assert.equal(job.done + job.skipped, TASKS);
  assert.ok(job.skipped <= 1);
  assert.equal(job.failed, 0);
  assert.ok(seen.size >= 3, `progress seen at ${[...seen].join(', ')}`);
});
