/** Bulk actions by people (src/bulk/jobs.ts): by filter and by ids, chunked jobs, locked tasks skipped, counts, isolation. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { testApp, updateSettings, type TestApp } from './helpers/app.js';
import { seedTenant, seedUser, type SeededTenant } from './helpers/seed.js';
import { Mate } from './helpers/mate.js';
import { readTask } from './helpers/rows.js';
import { inTx, personCaller, refusalOf } from './helpers/person.js';
import { asPerson, personWithToken } from './helpers/people.js';
import { ManualClock } from '../src/lib/clock.js';
import { createProcess } from '../src/processes/service.js';
import { loadProcessById, type ProcessDef } from '../src/processes/store.js';
import { createTasks, prepareTasks } from '../src/tasks/create.js';
import { BulkJobs, bulkRequestFrom, countMatching } from '../src/bulk/jobs.js';
import { moveTask } from '../src/tasks/people.js';
import type { Caller } from '../src/lib/caller.js';

const clock = new ManualClock('2026-05-04T08:00:00.000Z');
let t: TestApp;
let tenant: SeededTenant;
let other: SeededTenant;
let mate: Mate;
let user: { id: number; username: string };
let stranger: { id: number; username: string };
let n = 0;

before(async () => {
  t = await testApp({ clock });
  tenant = await seedTenant(t.store, 'bulk');
  other = await seedTenant(t.store, 'bulk-other');
  mate = await Mate.signIn(t.app, tenant);
  user = await seedUser(t.store, tenant.tenantId, 'bea', 'agent');
  stranger = await seedUser(t.store, other.tenantId, 'oscar', 'admin');
});
after(() => t.close());

const me = (): Caller => personCaller(tenant.tenantId, user, clock.now());
const jobs = () => t.app.services.bulkJobs;

async function freshProcess(tenantId = tenant.tenantId, patch: Parameters<typeof updateSettings>[3] = {}): Promise<ProcessDef> {
  const p = await createProcess(t.store.db, tenantId, {
    processKey: `B${++n}`,
    fields: [
      { name: 'ref', type: 'text', isKey: true, unique: true },
      { name: 'amount', type: 'number', required: true },
    ],
  });
  if (Object.keys(patch).length) await updateSettings(t, tenantId, p.id, patch);
  return (await loadProcessById(t.store.db, tenantId, p.id))!;
}

async function create(proc: ProcessDef, items: Record<string, unknown>[], caller = me()): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < items.length; i += 1000) {
    const chunk = items.slice(i, i + 1000);
    const rows = await inTx(t.app, (tx) => createTasks(tx, caller, proc, prepareTasks(caller, proc, chunk, true), true));
    ids.push(...rows.map((r) => r.id));
  }
  return ids;
}

async function queueCounts(proc: ProcessDef) {
  const { rows } = await sql<{ queue: string; error: boolean; n: number }>`SELECT queue, error, count(*)::int AS n FROM tasks
    WHERE process_id = ${proc.id} AND deleted_at IS NULL GROUP BY queue, error ORDER BY queue, error`.execute(t.store.db);
  return Object.fromEntries(rows.map((r) => [`${r.queue}${r.error ? '+Error' : ''}`, r.n]));
}

test('a 5,000-task move by filter runs in chunks, skips and counts the tasks Mates hold, and logs one history row per task', async () => {
  const proc = await freshProcess();
  await create(
    proc,
    Array.from({ length: 5000 }, (_, i) => ({ ref: `R${i}`, amount: i })),
  );
  const held: number[] = [];
  for (let i = 0; i < 3; i++) held.push((await mate.takeNext(proc.processKey)).taskId);
  const req = bulkRequestFrom({ action: 'move', queue: 'Manual', error: true, comment: 'bulk', filter: { queue: 'Ready' } }, proc, 'UTC');
  assert.equal(await countMatching(t.store.db, me(), proc, req.target), 5000);
  const { jobId, total } = await jobs().start(me(), proc, req);
  assert.equal(total, 5000);
  const view = (await jobs().wait(tenant.tenantId, jobId))!;
  assert.deepEqual([view.status, view.total, view.done, view.failed, view.skipped], ['done', 5000, 4997, 0, 3]);
  assert.deepEqual(view.errors.map((e) => [e.taskId, e.code]).sort(), held.map((id) => [id, 'task_locked']).sort());
  assert.deepEqual(view.createdBy, { type: 'user', id: user.id, name: 'bea' });
  assert.deepEqual(await queueCounts(proc), { 'Manual+Error': 4997, Ready: 3 });
  const h = await sql<{
    n: number;
    users: number;
  }>`SELECT count(*)::int AS n, count(*) FILTER (WHERE actor_type = 'user' AND actor_id = ${user.id} AND comment = 'bulk')::int AS users
    FROM task_history WHERE request_id = ${`bulk:${jobId}`}`.execute(t.store.db);
  assert.deepEqual(h.rows[0], { n: 4997, users: 4997 });
  const comments = await sql<{
    n: number;
  }>`SELECT count(*)::int AS n FROM task_comments c JOIN tasks t ON t.tenant_id = c.tenant_id AND t.id = c.task_id
    WHERE t.process_id = ${proc.id} AND c.body = 'bulk'`.execute(t.store.db);
  assert.equal(comments.rows[0].n, 4997);

  // and back: clear every Error by filter (the Stop-on-Errors clean-up)
  const clear = bulkRequestFrom({ action: 'clearError', filter: { queue: 'Manual', error: 'true' } }, proc, 'UTC');
  const second = await jobs().start(me(), proc, clear);
  const v2 = (await jobs().wait(tenant.tenantId, second.jobId))!;
  assert.deepEqual([v2.status, v2.total, v2.done, v2.failed, v2.skipped], ['done', 4997, 4997, 0, 0]);
  assert.deepEqual(await queueCounts(proc), { Manual: 4997, Ready: 3 });
});

test('by ids: per-task refusals are counted and listed; other processes and tenants are not found; approve and urgent', async () => {
  const proc = await freshProcess(tenant.tenantId, { require_approval: 'all' });
  const elsewhere = await freshProcess();
  const [a, b, c] = await create(proc, [{ ref: 'A', amount: 1 }, { ref: 'B' }, { ref: 'C', amount: 3 }]);
  const [ready] = await create(elsewhere, [{ ref: 'X', amount: 1 }]);
  const theirProc = await freshProcess(other.tenantId, { require_approval: 'all' });
  const [theirs] = await create(theirProc, [{ ref: 'A', amount: 1 }], personCaller(other.tenantId, stranger, clock.now()));
  await inTx(t.app, (tx) => moveTask(tx, me(), c, { queue: 'Manual' }));

  const req = bulkRequestFrom({ action: 'approve', ids: [a, b, c, ready, theirs, a] }, proc, 'UTC');
  assert.equal(await countMatching(t.store.db, me(), proc, req.target), 3);
  const { jobId } = await jobs().start(me(), proc, req);
  const v = (await jobs().wait(tenant.tenantId, jobId))!;
  assert.deepEqual([v.status, v.done, v.failed, v.skipped], ['done', 2, 3, 0]);
  assert.deepEqual(
    v.errors.map((e) => [e.taskId, e.code]),
    [
      [c, 'invalid_transition'],
      [ready, 'task_not_found'],
      [theirs, 'task_not_found'],
    ],
  );
  assert.equal((await readTask(t.store.db, a)).queue, 'Ready');
  assert.equal((await readTask(t.store.db, b)).queue, 'NeedsData');
  assert.equal((await readTask(t.store.db, theirs)).queue, 'NeedsApproval', "another tenant's task is untouched");

  const urgent = await jobs().start(me(), proc, bulkRequestFrom({ action: 'urgent', urgent: true, ids: [a, b] }, proc, 'UTC'));
  assert.equal((await jobs().wait(tenant.tenantId, urgent.jobId))!.done, 2);
  assert.equal((await readTask(t.store.db, b)).urgent, true);

  // another tenant cannot read the job
  assert.equal(await jobs().get(other.tenantId, jobId), null);
  assert.equal(await jobs().get(tenant.tenantId, 'no-such-job'), null);
});

test('moving Solved tasks back: a key held by another open task is refused per task', async () => {
  const proc = await freshProcess();
  const [s1, s2] = await create(proc, [
    { ref: 'K', amount: 1 },
    { ref: 'L', amount: 1 },
  ]);
  await inTx(t.app, (tx) => moveTask(tx, me(), s1, { queue: 'Solved' }));
  const [open] = await create(proc, [{ ref: 'k', amount: 2 }]);
  await inTx(t.app, (tx) => moveTask(tx, me(), s2, { queue: 'Solved' }));
  const { jobId } = await jobs().start(
    me(),
    proc,
    bulkRequestFrom({ action: 'move', queue: 'Ready', filter: { queue: 'Solved' } }, proc, 'UTC'),
  );
  const v = (await jobs().wait(tenant.tenantId, jobId))!;
  assert.deepEqual([v.done, v.failed], [1, 1]);
  assert.equal(v.errors[0].code, 'duplicate_key');
  assert.match(v.errors[0].message, new RegExp(`task ${open}`));
  assert.equal((await readTask(t.store.db, s1)).queue, 'Solved');
  assert.equal((await readTask(t.store.db, s2)).queue, 'Ready');
});

test('delete by filter; a small chunk size still visits every task once', async () => {
  const proc = await freshProcess();
  const ids = await create(
    proc,
    Array.from({ length: 23 }, (_, i) => ({ ref: `D${i}`, amount: i % 2 })),
  );
  const small = new BulkJobs(t.app.services.units, t.store.db, clock, 4);
  const req = bulkRequestFrom({ action: 'delete', filter: { 'f.amount': '1' } }, proc, 'UTC');
  const { jobId, total } = await small.start(me(), proc, req);
  assert.equal(total, 11);
  const v = (await small.wait(tenant.tenantId, jobId))!;
  assert.deepEqual([v.status, v.done, v.failed], ['done', 11, 0]);
  const left = await sql<{ n: number }>`SELECT count(*)::int AS n FROM tasks WHERE process_id = ${proc.id} AND deleted_at IS NULL`.execute(
    t.store.db,
  );
  assert.equal(left.rows[0].n, 12);
  assert.equal((await readTask(t.store.db, ids[1])).deleted_at instanceof Date, true);
});

test('a job stopped by a shutdown stays running, lets go of its lease, and another server process resumes it', async () => {
  const proc = await freshProcess();
  await create(
    proc,
    Array.from({ length: 12 }, (_, i) => ({ ref: `S${i}`, amount: i })),
  );
  const small = new BulkJobs(t.app.services.units, t.store.db, clock, 5);
  const { jobId } = await small.start(me(), proc, bulkRequestFrom({ action: 'move', queue: 'Manual', filter: {} }, proc, 'UTC'));
  small.close(); // before its first chunk
  const v = (await small.wait(tenant.tenantId, jobId))!;
  assert.deepEqual([v.status, v.done, v.finishedAt], ['running', 0, null]);
  assert.equal(
    (await refusalOf(() => small.start(me(), proc, bulkRequestFrom({ action: 'delete', filter: {} }, proc, 'UTC')))).code,
    'unavailable',
  );
  assert.equal(await small.resume(), 0, 'a closed process claims nothing');
  const next = new BulkJobs(t.app.services.units, t.store.db, clock, 5);
  assert.equal(await next.resume(), 1);
  const after = (await next.wait(tenant.tenantId, jobId))!;
  assert.deepEqual([after.status, after.done, after.failed, after.skipped], ['done', 12, 0, 0]);
  assert.equal(await next.resume(), 0, 'an ended job is not claimed again');
});

test('a process that stalls past its lease loses the job: its late chunk rolls back, the new holder does each task once', async () => {
  const proc = await freshProcess();
  await create(
    proc,
    Array.from({ length: 10 }, (_, i) => ({ ref: `L${i}`, amount: i })),
  );
  const stalled = new BulkJobs(t.app.services.units, t.store.db, clock, { chunkSize: 4, leaseMs: 1000 });
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let stalledAt!: () => void;
  const isStalled = new Promise<void>((r) => (stalledAt = r));
  // after its first chunk the first process stalls (a long pause, a frozen VM) until released
  stalled.afterChunk = async () => {
    stalled.afterChunk = null;
    stalledAt();
    await gate;
  };
  const { jobId } = await stalled.start(me(), proc, bulkRequestFrom({ action: 'urgent', urgent: true, filter: {} }, proc, 'UTC'));
  await isStalled;
  const other = new BulkJobs(t.app.services.units, t.store.db, clock, { chunkSize: 4, leaseMs: 1000 });
  assert.equal(await other.resume(), 0, 'the lease still holds');
  clock.advance(1.001);
  assert.equal(await other.resume(), 1);
  const v = (await other.wait(tenant.tenantId, jobId))!;
  release();
  await stalled.wait(tenant.tenantId, jobId);
  assert.deepEqual([v.status, v.done, v.failed, v.skipped], ['done', 10, 0, 0]);
  const h = await sql<{ n: number; tasks: number }>`SELECT count(*)::int AS n, count(DISTINCT task_id)::int AS tasks
    FROM task_history WHERE request_id = ${`bulk:${jobId}`}`.execute(t.store.db);
  assert.deepEqual(h.rows[0], { n: 10, tasks: 10 }, "the stalled process's late chunk left no trace");
  const urgent = await sql<{ n: number }>`SELECT count(*)::int AS n FROM tasks WHERE process_id = ${proc.id} AND urgent`.execute(
    t.store.db,
  );
  assert.equal(urgent.rows[0].n, 10);
  assert.deepEqual([(await stalled.get(tenant.tenantId, jobId))!.done, (await stalled.get(tenant.tenantId, jobId))!.status], [10, 'done']);
});

test('bad bulk bodies are refused naming the key', async () => {
  const proc = await freshProcess();
  const agent = await personWithToken(t.store, tenant.tenantId, 'agent', `bulk-agent-${proc.id}`, clock.now());
  // through the route: its schema (BulkBody) refuses what it states, bulkRequestFrom the rest
  const cases: [unknown, string, string | undefined][] = [
    [[], 'invalid_body', undefined],
    [{ action: 'explode', ids: [1] }, 'invalid_field', 'action'],
    [{ action: 'move', ids: [1] }, 'invalid_field', 'queue'],
    [{ action: 'move', queue: 'Manual', error: 'perhaps', ids: [1] }, 'invalid_field', 'error'],
    [{ action: 'urgent', ids: [1] }, 'invalid_field', 'urgent'],
    [{ action: 'delete' }, 'invalid_body', undefined],
    [{ action: 'delete', ids: [1], filter: {} }, 'invalid_body', undefined],
    [{ action: 'delete', ids: [] }, 'invalid_field', 'ids'],
    [{ action: 'delete', ids: [1, -2] }, 'invalid_field', 'ids.1'],
    [{ action: 'delete', ids: [2 ** 60] }, 'invalid_field', 'ids'],
    [{ action: 'delete', filter: { queue: 'Nope' } }, 'invalid_field', 'queue'],
    [{ action: 'delete', filter: { sort: 'id' } }, 'unknown_field', 'sort'],
    [{ action: 'delete', ids: [1], extra: true }, 'unknown_field', 'extra'],
  ];
  for (const [body, code, field] of cases) {
    const res = await asPerson(t.app, agent, {
      method: 'POST',
      url: `/v1/processes/${proc.id}/tasks/bulk/count`,
      payload: JSON.stringify(body),
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(res.statusCode, 400, JSON.stringify(body));
    assert.equal(res.json().code, code, JSON.stringify(body));
    if (field) assert.equal(res.json().errors?.[0]?.field, field, JSON.stringify(body));
  }
});
