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

const jobRow = (id: string) =>
  t.store.db.selectFrom('bulk_jobs').select(['state', 'done', 'total']).where('id', '=', id).executeTakeFirstOrThrow();

let jobId = '';

async function mateCall(path: string): Promise<{ status: number; body: any; ms: number; jobState: string; jobDone: number }> {
  const t0 = performance.now();
  const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${mateToken}` } });
  const body = await res.json();
  const ms = performance.now() - t0;
  // read the moment the answer arrived: where the job was then
  const job = await jobRow(jobId);
  return { status: res.status, body, ms, jobState: job.state, jobDone: job.done };
}

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
  jobId = body.jobId;
  assert.equal(body.total, ROWS);
  const atAnswer = await jobRow(jobId);
  assert.equal(atAnswer.state, 'running', 'the 202 came while the job was running');
  assert.ok(atAnswer.done < ROWS);

  const [ok, taken] = await Promise.all([mateCall('/api/OkToRun/orders'), mateCall('/api/TakeNext/orders')]);
  assert.equal(ok.status, 200);
  assert.equal(ok.body.gateOpen, true);
  assert.equal(taken.status, 200);
  assert.ok(taken.body.taskId > 0, JSON.stringify(taken.body));
  for (const call of [ok, taken]) {
    assert.equal(call.jobState, 'running', 'the Mate was answered before the job ended');
    assert.ok(call.jobDone < ROWS);
  }

  // the progress a person's page reads moves chunk by chunk
  const seen = new Set<number>();
  for (;;) {
    const res = await fetch(`${base}/v1/jobs/${jobId}`, { headers: { authorization: `Bearer ${agent.token}` } });
    const job = (await res.json()) as { status: string; action: string; done: number; failed: number };
    if (job.status !== 'running') {
      assert.deepEqual([job.status, job.action, job.done, job.failed], ['done', 'import', ROWS, 0]);
      break;
    }
    if (job.done > 0) seen.add(job.done);
    await new Promise((r) => setTimeout(r, 50));
  }
  const jobMs = performance.now() - at202;
  assert.ok(seen.size >= 3, `progress seen at ${[...seen].join(', ')}`);
  // a robot waits at most for a chunk or so, not for the whole job
  for (const call of [ok, taken])
    assert.ok(call.ms < jobMs / 2, `a Mate call took ${call.ms.toFixed(0)} ms, the job ${jobMs.toFixed(0)} ms`);
  const created = await t.store.db
    .selectFrom('tasks')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('tenant_id', '=', a.tenantId)
    .where('process_id', '=', importPid)
    .executeTakeFirstOrThrow();
  assert.equal(Number(created.n), ROWS);
});
