/**
 * A bulk job survives a server restart (src/bulk/jobs.ts, migration 0007): one app on the store
 * starts a job by filter over 3,000 tasks and is closed after two chunks; a second app on the same
 * store resumes it from its maintenance sweep and finishes it. Every matching task is changed
 * exactly once (its history rows by request id bulk:<job>), the counts add up, and the job, its
 * audit entry and its progress are readable through /v1 of the new app.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import { createApp } from '../src/app.js';
import { testConfig } from '../src/config.js';
import { ManualClock } from '../src/lib/clock.js';
import { createProcess } from '../src/processes/service.js';
import { loadProcessById, type ProcessDef } from '../src/processes/store.js';
import { createTasks, prepareTasks } from '../src/tasks/create.js';
import { sweepOnce } from '../src/maintenance/sweep.js';
import { testStore, type TestStore } from './helpers/db.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { Mate } from './helpers/mate.js';
import { inTx, personCaller } from './helpers/person.js';
import { asPerson, peopleOfEveryRole, type TestPerson } from './helpers/people.js';

const clock = new ManualClock('2026-05-04T08:00:00.000Z');
const TASKS = 3000;
let store: TestStore;
let first: FastifyInstance;
let tenant: SeededTenant;
let agent: TestPerson;
let admin: TestPerson;
let proc: ProcessDef;

const build = () => createApp(testConfig(), { store, clock, sweeper: false });

before(async () => {
  store = await testStore();
  first = await build();
  await first.ready();
  tenant = await seedTenant(store, 'restart');
  const people = await peopleOfEveryRole(store, tenant.tenantId, '', clock.now());
  agent = people.agent;
  admin = people.admin;
  const p = await createProcess(store.db, tenant.tenantId, {
    processKey: 'R1',
    fields: [{ name: 'ref', type: 'text', isKey: true, unique: true }],
  });
  proc = (await loadProcessById(store.db, tenant.tenantId, p.id))!;
  const caller = personCaller(tenant.tenantId, { id: agent.userId, username: agent.username }, clock.now());
  for (let i = 0; i < TASKS; i += 1000) {
    const items = Array.from({ length: 1000 }, (_, j) => ({ ref: `R${i + j}` }));
    await inTx(first, (tx) => createTasks(tx, caller, proc, prepareTasks(caller, proc, items, true), true));
  }
});
after(() => store.close());

test('a job by filter cut off by a restart after two chunks is finished by the next app: each task once, counts add up', async () => {
  const mate = await Mate.signIn(first, tenant);
  const held = [(await mate.takeNext('R1')).taskId, (await mate.takeNext('R1')).taskId];
  const started = await asPerson(first, agent, {
    method: 'POST',
    url: `/v1/processes/${proc.id}/tasks/bulk`,
    payload: { action: 'move', queue: 'Manual', comment: 'restart', filter: { queue: 'Ready' } },
  });
  assert.equal(started.statusCode, 202, started.body);
  const { jobId, total } = started.json();
  assert.equal(total, TASKS);

  // the first server stops after its second chunk (as at a deploy: SIGTERM closes the app)
  let chunks = 0;
  let closing: Promise<void> | null = null;
  first.services.bulkJobs.afterChunk = () => {
    if (++chunks === 2) closing = first.close();
  };
  await first.services.bulkJobs.wait(tenant.tenantId, jobId);
  await closing;
  const cut = (
    await sql<{ state: string; cursor: number; done: number; skipped: number; lease_owner: string | null }>`
    SELECT state, cursor, done, skipped, lease_owner FROM bulk_jobs WHERE id = ${jobId}`.execute(store.db)
  ).rows[0];
  assert.deepEqual([cut.state, cut.lease_owner], ['running', null], 'cut off while running, the lease let go');
  // the app stops after the chunk in progress when close() began: two or three chunks in all
  const chunkSize = first.services.bulkJobs.chunkSize;
  assert.ok(cut.done + cut.skipped >= 2 * chunkSize && cut.done + cut.skipped < TASKS, `${cut.done} done at the cut`);
  const moved = await sql<{ n: number; upto: number }>`SELECT count(*)::int AS n,
      (SELECT count(*)::int FROM tasks WHERE process_id = ${proc.id} AND id <= ${cut.cursor}) AS upto
    FROM task_history WHERE request_id = ${`bulk:${jobId}`}`.execute(store.db);
  assert.equal(moved.rows[0].n, cut.done, 'the progress and the task changes committed together');
  assert.equal(moved.rows[0].upto, cut.done + cut.skipped, 'the cursor is the last task done');

  // a new app on the same store: its GET answers the job at once, its sweep resumes it
  const second = await build();
  await second.ready();
  try {
    const mid = await asPerson(second, agent, { method: 'GET', url: `/v1/jobs/${jobId}` });
    assert.equal(mid.statusCode, 200);
    assert.deepEqual([mid.json().status, mid.json().done], ['running', cut.done]);
    const swept = await sweepOnce(second.services, clock.now());
    assert.equal(swept.bulkJobsResumed, 1);
    await second.services.bulkJobs.wait(tenant.tenantId, jobId);

    const res = await asPerson(second, agent, { method: 'GET', url: `/v1/jobs/${jobId}` });
    const v = res.json();
    assert.deepEqual([v.status, v.total, v.done, v.failed, v.skipped], ['done', TASKS, TASKS - 2, 0, 2]);
    assert.deepEqual(v.errors.map((e: any) => [e.taskId, e.code]).sort(), held.map((id) => [id, 'task_locked']).sort());
    assert.equal(v.done + v.failed + v.skipped, v.total);
    assert.deepEqual(v.createdBy, { type: 'user', id: agent.userId, name: agent.username });

    const h = await sql<{ n: number; tasks: number; by: number }>`SELECT count(*)::int AS n, count(DISTINCT task_id)::int AS tasks,
        count(*) FILTER (WHERE actor_type = 'user' AND actor_id = ${agent.userId})::int AS by
      FROM task_history WHERE request_id = ${`bulk:${jobId}`}`.execute(store.db);
    assert.deepEqual(h.rows[0], { n: TASKS - 2, tasks: TASKS - 2, by: TASKS - 2 }, 'every task changed exactly once, by the person');
    const q = await sql<{ queue: string; n: number }>`SELECT queue, count(*)::int AS n FROM tasks
      WHERE process_id = ${proc.id} GROUP BY queue ORDER BY queue`.execute(store.db);
    assert.deepEqual(
      q.rows.map((r) => [r.queue, r.n]),
      [
        ['Manual', TASKS - 2],
        ['Ready', 2],
      ],
    );
    const locked = await sql<{
      n: number;
    }>`SELECT count(*)::int AS n FROM tasks WHERE id = ANY(${held}::bigint[]) AND queue = 'Ready'`.execute(store.db);
    assert.equal(locked.rows[0].n, 2, "the Mate's tasks were skipped, not moved");

    const auditLog = await asPerson(second, admin, { method: 'GET', url: '/v1/audit?action=bulk.start' });
    assert.equal(auditLog.statusCode, 200, auditLog.body);
    const entry = auditLog.json().items.find((e: any) => e.targetId === jobId);
    assert.ok(entry, 'the start of the job is in the audit log');
    assert.equal(entry.details.total, TASKS);
  } finally {
    await second.close();
  }
});
