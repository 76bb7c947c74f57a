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

const jobRow = (id: string) =>
  t.store.db.selectFrom('bulk_jobs').select(['state', 'done', 'total']).where('id', '=', id).executeTakeFirstOrThrow();

async function mateCall(path: string): Promise<{ status: number; body: any; jobState: string; jobDone: number }> {
  const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${mateToken}` } });
  const body = await res.json();
  // read the moment the answer arrived: where the job was then
  const job = await jobRow(jobId);
  return { status: res.status, body, jobState: job.state, jobDone: job.done };
}

let jobId = '';

test('a large move answers 202 at once; a Mate is answered while it runs; its progress moves', async () => {
  const started = await fetch(`${base}/v1/processes/${pid}/tasks/bulk`, {
    method: 'POST',
    headers: { authorization: `Bearer ${agent.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ action: 'move', queue: 'Manual', filter: { queue: 'Ready' } }),
  });
  assert.equal(started.status, 202);
  const body = (await started.json()) as { jobId: string; total: number };
  jobId = body.jobId;
  assert.equal(body.total, TASKS);
  const atAnswer = await jobRow(jobId);
  assert.equal(atAnswer.state, 'running', 'the 202 came while the job was running');
  assert.ok(atAnswer.done < TASKS);

  const [ok, taken] = await Promise.all([mateCall('/api/OkToRun/orders'), mateCall('/api/TakeNext/orders')]);
  assert.equal(ok.status, 200);
  assert.equal(ok.body.gateOpen, true);
  assert.equal(taken.status, 200);
  assert.ok(taken.body.taskId > 0, JSON.stringify(taken.body));
  for (const call of [ok, taken]) {
    assert.equal(call.jobState, 'running', 'the Mate was answered before the job ended');
    assert.ok(call.jobDone < TASKS);
  }

  // the progress a person's dialog reads moves chunk by chunk
  const seen = new Set<number>();
  for (;;) {
    const res = await fetch(`${base}/v1/jobs/${jobId}`, { headers: { authorization: `Bearer ${agent.token}` } });
    const job = (await res.json()) as { status: string; done: number; skipped: number; failed: number };
    if (job.status !== 'running') {
      assert.equal(job.status, 'done');
      // the task the Mate holds is skipped if the job had not moved it before the take
      assert.equal(job.done + job.skipped, TASKS);
      assert.ok(job.skipped <= 1);
      assert.equal(job.failed, 0);
      break;
    }
    if (job.done > 0) seen.add(job.done);
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.ok(seen.size >= 3, `progress seen at ${[...seen].join(', ')}`);
});
