/** People's actions on tasks (docs/product.md §5.4, docs/product.md §5.6) through src/tasks/people.ts: state, history, refusals, locks, tenants. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { testApp, updateSettings, type TestApp } from './helpers/app.js';
import { seedTenant, seedUser, type SeededTenant } from './helpers/seed.js';
import { Mate } from './helpers/mate.js';
import { readTask, readComments } from './helpers/rows.js';
import { inTx, personCaller, refusalOf } from './helpers/person.js';
import { ManualClock } from '../src/lib/clock.js';
import { createProcess } from '../src/processes/service.js';
import { loadProcessById } from '../src/processes/store.js';
import {
  approveTask,
  clearErrorFlag,
  commentTask,
  createTaskByPerson,
  deleteTask,
  editTask,
  moveTask,
  rejectTask,
  reopenTask,
  setUrgent,
  unlockTask,
} from '../src/tasks/people.js';
import { getTaskDetail } from '../src/task-lists/view.js';
import type { Caller } from '../src/lib/caller.js';

const clock = new ManualClock('2026-03-02T09:00:00.000Z');
let t: TestApp;
let tenant: SeededTenant;
let other: SeededTenant;
let mate: Mate;
let user: { id: number; username: string };
let stranger: { id: number; username: string };
let n = 0;

before(async () => {
  t = await testApp({ clock });
  tenant = await seedTenant(t.store, 'people');
  other = await seedTenant(t.store, 'people-other');
  mate = await Mate.signIn(t.app, tenant);
  user = await seedUser(t.store, tenant.tenantId, 'alice', 'agent');
  stranger = await seedUser(t.store, other.tenantId, 'mallory', 'admin');
});
after(() => t.close());

const me = (): Caller => personCaller(tenant.tenantId, user, clock.now());
const FIELDS = [
  { name: 'invoice', type: 'text' as const, isKey: true, unique: true },
  { name: 'amount', type: 'number' as const, required: true },
];

async function freshProcess(patch: Parameters<typeof updateSettings>[3] = {}): Promise<{ id: number; key: string }> {
  const key = `PP${++n}`;
  const p = await createProcess(t.store.db, tenant.tenantId, { processKey: key, fields: FIELDS });
  if (Object.keys(patch).length) await updateSettings(t, tenant.tenantId, p.id, patch);
  return { id: p.id, key };
}

async function history(id: number) {
  const { rows } = await sql<any>`SELECT action, from_queue, to_queue, error, actor_type, actor_id, actor_name, request_id, comment, details
    FROM task_history WHERE task_id = ${id} ORDER BY id`.execute(t.store.db);
  return rows;
}

/** Runs a person's action and asserts it wrote exactly one history row, by the user; returns that row. */
async function acted(id: number, fn: (c: Caller) => Promise<unknown>) {
  const beforeRows = (await history(id)).length;
  clock.advance(1);
  await fn(me());
  const rows = await history(id);
  assert.equal(rows.length, beforeRows + 1, 'exactly one history row');
  const h = rows[rows.length - 1];
  assert.equal(h.actor_type, 'user');
  assert.equal(Number(h.actor_id), user.id);
  assert.equal(h.actor_name, 'alice');
  assert.equal(h.request_id, `req-${user.id}`);
  return h;
}

async function createdTask(key: string, data: Record<string, unknown>) {
  return mate.create(key, data);
}

test('move: any queue, Error flag only with Manual, moving an Error task resolves it (logged); the same place is refused', async () => {
  const p = await freshProcess();
  const id = await createdTask(p.key, { invoice: 'A1', amount: 1 });
  let h = await acted(id, (c) => inTx(t.app, (tx) => moveTask(tx, c, id, { queue: 'Manual', error: true, comment: 'broken' })));
  assert.deepEqual([h.action, h.from_queue, h.to_queue, h.error, h.comment], ['Moved', 'Ready', 'Manual', true, 'broken']);
  assert.deepEqual(await readComments(t.store.db, id), ['broken']);
  let row = await readTask(t.store.db, id);
  assert.deepEqual([row.queue, row.error], ['Manual', true]);

  const r = await refusalOf(() => inTx(t.app, (tx) => moveTask(tx, me(), id, { queue: 'Ready', error: true })));
  assert.equal(r.code, 'invalid_field');
  assert.equal(
    (await refusalOf(() => inTx(t.app, (tx) => moveTask(tx, me(), id, { queue: 'Manual', error: true })))).code,
    'invalid_transition',
  );
  assert.equal((await refusalOf(() => inTx(t.app, (tx) => moveTask(tx, me(), id, { queue: 'Nowhere' as never })))).code, 'invalid_field');

  h = await acted(id, (c) => inTx(t.app, (tx) => moveTask(tx, c, id, { queue: 'Ready' })));
  assert.deepEqual(
    [h.from_queue, h.to_queue, h.error, h.details.errorResolved, h.details.note],
    ['Manual', 'Ready', false, true, 'Error resolved'],
  );
  row = await readTask(t.store.db, id);
  assert.equal(row.queue_position.getTime(), clock.now().getTime(), 'bottom of the queue');

  const task = await inTx(t.app, (tx) => moveTask(tx, me(), id, { queue: 'Solved' }));
  assert.equal(task.queue, 'Solved');
  assert.equal(task.id, id);
  assert.deepEqual(task.data, { invoice: 'A1', amount: 1 });
  // a person's Solved logs no KPI event (KPI events are Mate hand-backs)
  const kpi = await sql<any>`SELECT count(*)::int AS n FROM kpi_events WHERE task_id = ${id}`.execute(t.store.db);
  assert.equal(kpi.rows[0].n, 0);
});

test('edit: values validated, NeedsData → Ready once complete, unique key refused with the existing id, nothing changed on refusal', async () => {
  const p = await freshProcess();
  const first = await createdTask(p.key, { invoice: 'K1', amount: 5 });
  const id = await createdTask(p.key, { invoice: 'K2' });
  assert.equal((await readTask(t.store.db, id)).queue, 'NeedsData');

  const bad = await refusalOf(() => inTx(t.app, (tx) => editTask(tx, me(), id, { data: { amount: 'twelve' } })));
  assert.equal(bad.code, 'invalid_field');
  assert.equal(bad.problems[0].field, 'data.amount');
  const unknown = await refusalOf(() => inTx(t.app, (tx) => editTask(tx, me(), id, { data: { colour: 'red' } })));
  assert.equal(unknown.code, 'unknown_field');
  const dup = await refusalOf(() => inTx(t.app, (tx) => editTask(tx, me(), id, { data: { invoice: ' k1 ', amount: 3 } })));
  assert.equal(dup.code, 'duplicate_key');
  assert.equal(dup.details.existingTaskId, first);
  assert.equal((await refusalOf(() => inTx(t.app, (tx) => editTask(tx, me(), id, {})))).code, 'invalid_body');
  assert.equal((await history(id)).length, 1, 'refusals wrote nothing');

  const h = await acted(id, (c) =>
    inTx(t.app, (tx) => editTask(tx, c, id, { data: { amount: '12.5' }, urgent: true, comment: 'filled in' })),
  );
  assert.deepEqual([h.action, h.from_queue, h.to_queue, h.comment], ['Updated', 'NeedsData', 'Ready', 'filled in']);
  assert.deepEqual(h.details.fields, ['amount']);
  const row = await readTask(t.store.db, id);
  assert.deepEqual([row.queue, row.urgent, row.data.amount], ['Ready', true, 12.5]);

  // clearing a required field keeps a Ready task where it is
  await acted(id, (c) => inTx(t.app, (tx) => editTask(tx, c, id, { data: { amount: '' } })));
  const cleared = await readTask(t.store.db, id);
  assert.equal(cleared.queue, 'Ready');
  assert.equal('amount' in cleared.data, false);
});

test('comment and urgent; both allowed on a task a Mate holds', async () => {
  const p = await freshProcess();
  const id = await createdTask(p.key, { invoice: 'C1', amount: 1 });
  assert.equal((await mate.takeNext(p.key)).taskId, id);
  let h = await acted(id, (c) => inTx(t.app, (tx) => commentTask(tx, c, id, 'called the customer')));
  assert.deepEqual([h.action, h.from_queue, h.to_queue, h.comment], ['Commented', 'Ready', 'Ready', 'called the customer']);
  assert.deepEqual(await readComments(t.store.db, id), ['called the customer']);
  assert.equal((await refusalOf(() => inTx(t.app, (tx) => commentTask(tx, me(), id, '  ')))).code, 'invalid_field');
  h = await acted(id, (c) => inTx(t.app, (tx) => setUrgent(tx, c, id, true)));
  assert.deepEqual([h.action, h.details.urgent], ['Urgent changed', true]);
  const row = await readTask(t.store.db, id);
  assert.equal(row.urgent, true);
  assert.equal(Number(row.locked_by_mate_id), tenant.mateId, 'the lock is kept');
});

test('approve → Ready, or NeedsData when incomplete; reject → Manual; approve outside NeedsApproval is refused', async () => {
  const p = await freshProcess({ require_approval: 'all' });
  const user2 = personCaller(tenant.tenantId, user, clock.now());
  const complete = await inTx(t.app, async (tx) => {
    const proc = (await loadProcessById(tx.db, tenant.tenantId, p.id))!;
    return createTaskByPerson(tx, user2, proc, { invoice: 'AP1', amount: 2 });
  });
  assert.equal(complete.queue, 'NeedsApproval', 'requireApproval all applies to people');
  const created = await sql<any>`SELECT created_by_type, created_by_id FROM tasks WHERE id = ${complete.id}`.execute(t.store.db);
  assert.deepEqual([created.rows[0].created_by_type, Number(created.rows[0].created_by_id)], ['user', user.id]);
  const incomplete = await createdTask(p.key, { invoice: 'AP2' });
  const rejected = await createdTask(p.key, { invoice: 'AP3', amount: 1 });

  let h = await acted(complete.id, (c) => inTx(t.app, (tx) => approveTask(tx, c, complete.id)));
  assert.deepEqual([h.action, h.from_queue, h.to_queue], ['Approved', 'NeedsApproval', 'Ready']);
  h = await acted(incomplete, (c) => inTx(t.app, (tx) => approveTask(tx, c, incomplete, 'needs an amount')));
  assert.deepEqual([h.to_queue, h.details.missingRequired], ['NeedsData', ['amount']]);
  h = await acted(rejected, (c) => inTx(t.app, (tx) => rejectTask(tx, c, rejected, 'not ours')));
  assert.deepEqual([h.action, h.to_queue, h.error], ['Rejected', 'Manual', false]);
  const r = await refusalOf(() => inTx(t.app, (tx) => approveTask(tx, me(), complete.id)));
  assert.equal(r.code, 'invalid_transition');
  assert.equal((await refusalOf(() => inTx(t.app, (tx) => rejectTask(tx, me(), complete.id)))).code, 'invalid_transition');
});

test('mateCreated approval does not apply to people', async () => {
  const p = await freshProcess({ require_approval: 'mateCreated' });
  const task = await inTx(t.app, async (tx) =>
    createTaskByPerson(tx, me(), (await loadProcessById(tx.db, tenant.tenantId, p.id))!, { invoice: 'M1', amount: 1 }),
  );
  assert.equal(task.queue, 'Ready');
});

test('clear the Error flag (logged); a task without it is refused', async () => {
  const p = await freshProcess();
  const id = await createdTask(p.key, { invoice: 'E1', amount: 1 });
  await mate.takeNext(p.key);
  assert.equal((await mate.post('/api/Error', { taskId: id, reason: 'boom' })).body.succeeded, true);
  const h = await acted(id, (c) => inTx(t.app, (tx) => clearErrorFlag(tx, c, id)));
  assert.deepEqual(
    [h.action, h.from_queue, h.to_queue, h.error, h.details.errorResolved],
    ['Error cleared', 'Manual', 'Manual', false, true],
  );
  assert.equal((await refusalOf(() => inTx(t.app, (tx) => clearErrorFlag(tx, me(), id)))).code, 'invalid_transition');
});

test("a Mate's lock: move, edit, delete refused with task_locked; unlock frees it and the Mate's late hand-back is refused", async () => {
  const p = await freshProcess();
  const id = await createdTask(p.key, { invoice: 'L1', amount: 1 });
  assert.equal((await mate.takeNext(p.key)).taskId, id);
  for (const act of [
    (c: Caller) => inTx(t.app, (tx) => moveTask(tx, c, id, { queue: 'Manual' })),
    (c: Caller) => inTx(t.app, (tx) => editTask(tx, c, id, { data: { amount: 2 } })),
    (c: Caller) => inTx(t.app, (tx) => deleteTask(tx, c, id)),
  ]) {
    const r = await refusalOf(() => act(me()));
    assert.equal(r.code, 'task_locked');
    assert.match(r.message, /unlock it first/);
  }
  const h = await acted(id, (c) => inTx(t.app, (tx) => unlockTask(tx, c, id)));
  assert.deepEqual([h.action, h.details.formerHolder], ['Unlocked', { type: 'mate', id: tenant.mateId }]);
  const row = await readTask(t.store.db, id);
  assert.deepEqual([row.queue, row.locked_until, row.run_id, Number(row.expired_lock_mate_id)], ['Ready', null, null, tenant.mateId]);
  const late = await mate.post('/api/Solved', { taskId: id });
  assert.deepEqual([late.body.succeeded, late.body.code], [false, 'lock_expired']);
  assert.equal((await refusalOf(() => inTx(t.app, (tx) => unlockTask(tx, me(), id)))).code, 'invalid_transition');
  // now free: a person moves it
  await acted(id, (c) => inTx(t.app, (tx) => moveTask(tx, c, id, { queue: 'Manual' })));
});

test('an expired lease the sweeper has not recovered yet does not block a person', async () => {
  const p = await freshProcess({ lock_timeout_seconds: 60 });
  const id = await createdTask(p.key, { invoice: 'X1', amount: 1 });
  await mate.takeNext(p.key);
  clock.advance(61);
  await acted(id, (c) => inTx(t.app, (tx) => moveTask(tx, c, id, { queue: 'Manual' })));
  const row = await readTask(t.store.db, id);
  assert.deepEqual([row.queue, row.locked_until, Number(row.expired_lock_mate_id)], ['Manual', null, tenant.mateId]);
  assert.equal((await mate.post('/api/Solved', { taskId: id })).body.code, 'lock_expired');
});

test('reopen Solved → Ready or Manual (logged); a key taken meanwhile is refused; only Solved tasks reopen', async () => {
  const p = await freshProcess();
  const id = await createdTask(p.key, { invoice: 'R1', amount: 1 });
  await mate.takeNext(p.key);
  await mate.post('/api/Solved', { taskId: id });
  const h = await acted(id, (c) => inTx(t.app, (tx) => reopenTask(tx, c, id, 'Manual', 'customer called back')));
  assert.deepEqual([h.action, h.from_queue, h.to_queue, h.comment], ['Reopened', 'Solved', 'Manual', 'customer called back']);
  assert.equal((await refusalOf(() => inTx(t.app, (tx) => reopenTask(tx, me(), id, 'Ready')))).code, 'invalid_transition');
  await inTx(t.app, (tx) => moveTask(tx, me(), id, { queue: 'Solved' }));
  const twin = await createdTask(p.key, { invoice: 'r1', amount: 2 });
  const r = await refusalOf(() => inTx(t.app, (tx) => reopenTask(tx, me(), id, 'Ready')));
  assert.deepEqual([r.code, r.details.existingTaskId], ['duplicate_key', twin]);
  assert.equal((await refusalOf(() => inTx(t.app, (tx) => reopenTask(tx, me(), id, 'Solved' as never)))).code, 'invalid_field');
  assert.equal((await readTask(t.store.db, id)).queue, 'Solved');
});

test('soft delete: logged, then gone for people and Mates', async () => {
  const p = await freshProcess();
  const id = await createdTask(p.key, { invoice: 'D1', amount: 1 });
  const h = await acted(id, (c) => inTx(t.app, (tx) => deleteTask(tx, c, id)));
  assert.equal(h.action, 'Deleted');
  assert.ok((await readTask(t.store.db, id)).deleted_at instanceof Date);
  assert.equal((await refusalOf(() => inTx(t.app, (tx) => moveTask(tx, me(), id, { queue: 'Manual' })))).code, 'task_not_found');
  assert.equal((await refusalOf(() => getTaskDetail(t.store.db, me(), id))).code, 'task_not_found');
  assert.equal((await mate.takeNext(p.key)).taskId, -1);
  // the key of a deleted task is free again
  await createdTask(p.key, { invoice: 'D1', amount: 1 });
});

test("another tenant's person gets task_not_found for every action, and nothing changes", async () => {
  const p = await freshProcess();
  const id = await createdTask(p.key, { invoice: 'T1', amount: 1 });
  const them = personCaller(other.tenantId, stranger, clock.now());
  const acts = [
    () => inTx(t.app, (tx) => moveTask(tx, them, id, { queue: 'Manual' })),
    () => inTx(t.app, (tx) => editTask(tx, them, id, { data: { amount: 3 } })),
    () => inTx(t.app, (tx) => commentTask(tx, them, id, 'hi')),
    () => inTx(t.app, (tx) => setUrgent(tx, them, id, true)),
    () => inTx(t.app, (tx) => deleteTask(tx, them, id)),
    () => inTx(t.app, (tx) => unlockTask(tx, them, id)),
    () => getTaskDetail(t.store.db, them, id),
  ];
  for (const act of acts) assert.equal((await refusalOf(act)).code, 'task_not_found');
  assert.equal((await refusalOf(() => inTx(t.app, (tx) => moveTask(tx, me(), 2 ** 60, { queue: 'Manual' })))).code, 'task_not_found');
  assert.equal((await history(id)).length, 1);
  const row = await readTask(t.store.db, id);
  assert.deepEqual([row.queue, row.urgent, row.deleted_at], ['Ready', false, null]);
});

test('detail: history, comments and KPI events in order, with actors', async () => {
  const p = await freshProcess();
  const id = await createdTask(p.key, { invoice: 'H1', amount: 1 });
  await mate.takeNext(p.key);
  await mate.post('/api/Manual', { taskId: id, reason: 'needs a look', comment: 'mate says hi' });
  await inTx(t.app, (tx) => commentTask(tx, me(), id, 'person says hi'));
  const d = await getTaskDetail(t.store.db, me(), id);
  assert.deepEqual(
    d.history.map((h) => [h.action, h.actor.type]),
    [
      ['Created', 'mate'],
      ['Taken', 'mate'],
      ['Manual', 'mate'],
      ['Commented', 'user'],
    ],
  );
  assert.deepEqual(
    d.comments.map((c) => [c.text, c.author.type, c.author.name]),
    [
      ['mate says hi', 'mate', tenant.mateUsername],
      ['person says hi', 'user', 'alice'],
    ],
  );
  assert.deepEqual(
    d.kpiEvents.map((k) => k.outcome),
    ['Manual'],
  );
  assert.equal(d.reason, 'needs a look');
  assert.equal(d.lockedBy, null);
});
