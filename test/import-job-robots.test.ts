/**
 * A large import and robots at once (src/bulk/jobs.ts startImport, src/db/turns.ts), over a real
 * port as a browser and a robot reach it: the 202 arrives while the import job still runs, a
 * Mate's OkToRun and TakeNext on another process made while it runs are answered before it ends
 * (and in far less time than the job takes), and the job's progress moves chunk by chunk.
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

const ROWS = 10_000;
let t: TestApp;
let a: SeededTenant;
let agent: TestPerson;
let mateToken: string;
let base: string;
let importPid: number;

before(async () => {
  t = await testApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  a = await seedTenant(t.store, 'import-robots', {
    processes: [
      { processKey: 'orders', fields: [{ name: 'no', type: 'text' }] },
      { processKey: 'invoices', fields: [{ name: 'ref', type: 'text', isKey: true, unique: true }] },
    ],
  });
  agent = await personWithToken(t.store, a.tenantId, 'agent');
  const pidOf = async (key: string) =>
    (await t.store.db.selectFrom('processes').select('id').where('process_key', '=', key).executeTakeFirstOrThrow()).id;
  importPid = await pidOf('invoices');
  // the robots' process has a few tasks to take
  const orders = (await loadProcessById(t.store.db, a.tenantId, await pidOf('orders')))!;
  const caller = personCaller(a.tenantId, { id: agent.userId, username: agent.username }, new Date());
  const items = Array.from({ length: 10 }, (_, i) => ({ no: `n${i}` }));
  await inTx(t.app, (tx) => createTasks(tx, caller, orders, prepareTasks(caller, orders, items, true), true));
  mateToken = await getToken(t.app, a);
});
after(() => t.close());

const robot = (): JobAndRobot => ({ base, store: t.store, personToken: agent.token, mateToken });

test('a large import answers 202 with its job; a Mate is answered while it runs; its progress moves', async () => {
  const csv = `ref\n${Array.from({ length: ROWS }, (_, i) => `INV-${i}`).join('\n')}\n`;
  const started = await fetch(`${base}/v1/processes/${importPid}/tasks/import`, {
    method: 'POST',
    headers: { authorization: `Bearer ${agent.token}`, 'content-type': 'text/csv' },
    body: csv,
  });
  assert.equal(started.status, 202);
  const at202 = performance.now();
  const body = (await started.json()) as { jobId: string; total: number };
  assert.equal(body.total, ROWS);
  const calls = await assertRobotsServed(robot(), body.jobId, ROWS, 'orders');

  // the progress a person's page reads moves chunk by chunk
  const { job, seen } = await followJob(robot(), body.jobId);
  assert.deepEqual([job.status, job.action, job.done, job.failed], ['done', 'import', ROWS, 0]);
  const jobMs = performance.now() - at202;
  assert.ok(seen.size >= 3, `progress seen at ${[...seen].join(', ')}`);
  // a robot waits at most for a chunk or so, not for the whole job
  for (const call of calls) assert.ok(call.ms < jobMs / 2, `a Mate call took ${call.ms.toFixed(0)} ms, the job ${jobMs.toFixed(0)} ms`);
  const created = await t.store.db
    .selectFrom('tasks')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('tenant_id', '=', a.tenantId)
    .where('process_id', '=', importPid)
    .executeTakeFirstOrThrow();
  assert.equal(Number(created.n), ROWS);
});
