/** Every row of the state-machine table (src/tasks/state-machine.ts), over HTTP. */
import { readTask } from './helpers/rows.js';
import { test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { testApp, updateSettings, type TestApp } from './helpers/app.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { Mate } from './helpers/mate.js';
import { ManualClock } from '../src/lib/clock.js';
import { createMate } from '../src/accounts/service.js';
import { createProcess } from '../src/processes/service.js';
import { loadProcessByKey, type ProcessSettingsPatch } from '../src/processes/store.js';
import { sweepOnce } from '../src/maintenance/sweep.js';

const clock = new ManualClock('2026-03-02T09:00:00.000Z'); // a Monday
let t: TestApp;
let tenant: SeededTenant;
let mate: Mate;
let other: Mate;
let n = 0;

before(async () => {
  t = await testApp({ clock });
  tenant = await seedTenant(t.store, 'life');
  await createMate(t.store.db, tenant.tenantId, { username: 'other', password: 'other-password-123' });
  mate = await Mate.signIn(t.app, tenant);
  other = await Mate.signIn(t.app, tenant, 'other', 'other-password-123');
});
after(() => t.close());

/** A fresh process per test, so tests don't see each other's tasks. */
async function freshProcess(
  patch: ProcessSettingsPatch = {},
  fields = [
    { name: 'key', type: 'text' as const },
    { name: 'amount', type: 'number' as const, required: true },
  ],
): Promise<string> {
  const key = `P${++n}`;
  const p = await createProcess(t.store.db, tenant.tenantId, { processKey: key, fields });
  if (Object.keys(patch).length) await updateSettings(t, tenant.tenantId, p.id, patch);
  return key;
}

async function setProcess(key: string, patch: ProcessSettingsPatch) {
  const p = (await loadProcessByKey(t.store.db, tenant.tenantId, key))!;
  await updateSettings(t, tenant.tenantId, p.id, patch);
}

const taskRow = (id: number) => readTask(t.store.db, id);

async function history(id: number) {
  const { rows } =
    await sql<any>`SELECT action, from_queue, to_queue, error, reason, details, actor_type FROM task_history WHERE task_id = ${id} ORDER BY id`.execute(
      t.store.db,
    );
  return rows;
}

beforeEach(() => clock.advance(60));

test('create: Ready when complete, NeedsData when a required field is missing', async () => {
  const pk = await freshProcess();
  const ready = await mate.post(`/api/CreateTask/${pk}`, { key: 'a', amount: 1 });
  assert.equal(ready.body.queue, 'Ready');
  const missing = await mate.post(`/api/CreateTask/${pk}`, { key: 'b' });
  assert.equal(missing.body.queue, 'NeedsData');
  const empty = await mate.post(`/api/CreateTask/${pk}`, { key: 'c', amount: '' });
  assert.equal(empty.body.queue, 'NeedsData', 'an empty required value counts as missing');
  assert.equal((await history(missing.body.taskId))[0].to_queue, 'NeedsData');
});

test('create: NeedsApproval when the process requires approval for Mate-created tasks, or all', async () => {
  const pk = await freshProcess({ require_approval: 'mateCreated' });
  assert.equal((await mate.post(`/api/CreateTask/${pk}`, { key: 'a', amount: 1 })).body.queue, 'NeedsApproval');
  await setProcess(pk, { require_approval: 'all' });
  assert.equal((await mate.post(`/api/CreateTask/${pk}`, { key: 'b' })).body.queue, 'NeedsApproval', 'approval comes before NeedsData');
  const took = await mate.takeNext(pk);
  assert.equal(took.taskId, -1, 'tasks awaiting approval are not taken');
});

test('update: a NeedsData task whose required fields get filled moves to Ready', async () => {
  const pk = await freshProcess();
  const id = (await mate.post(`/api/CreateTask/${pk}`, { key: 'x' })).body.taskId;
  const partial = await mate.post('/api/UpdateTask', { taskId: id, key: 'y' });
  assert.equal(partial.body.succeeded, true);
  assert.equal((await taskRow(id)).queue, 'NeedsData');
  const filled = await mate.post('/api/UpdateTask', { taskId: id, amount: '12.5', comment: 'found the amount' });
  assert.equal(filled.body.succeeded, true, JSON.stringify(filled.body));
  const row = await taskRow(id);
  assert.equal(row.queue, 'Ready');
  assert.deepEqual(row.data, { key: 'y', amount: 12.5 });
  const h = await history(id);
  assert.deepEqual(h.at(-1), { ...h.at(-1), action: 'Updated', from_queue: 'NeedsData', to_queue: 'Ready' });
});

test('take: urgent first, then queue position (activation date), then id; retried task at the bottom', async () => {
  const pk = await freshProcess();
  const a = await mate.create(pk, { key: 'a', amount: 1 });
  clock.advance(1);
  const b = await mate.create(pk, { key: 'b', amount: 1 });
  clock.advance(1);
  const c = await mate.create(pk, { key: 'c', amount: 1, urgent: true });
  clock.advance(1);
  const first = await mate.takeNext(pk);
  assert.equal(first.taskId, c, 'urgent first');
  const second = await mate.takeNext(pk);
  assert.equal(second.taskId, a);
  clock.advance(1);
  const retried = await mate.post('/api/Retry', { taskId: a, reason: 'try later' });
  assert.equal(retried.body.queue, 'Ready');
  clock.advance(1);
  const d = await mate.create(pk, { key: 'd', amount: 1 });
  assert.equal((await mate.takeNext(pk)).taskId, b);
  const next = await mate.takeNext(pk);
  assert.equal(next.taskId, a, 'the retried task comes after tasks that were ready before its retry');
  assert.equal(next.retryCount, 1);
  assert.equal(next.reason, 'try later', 'the reason is shown when the task is taken again');
  assert.equal((await mate.takeNext(pk)).taskId, d);
});

test('take: deadlines order the queue when enabled; past activation dates only', async () => {
  const pk = await freshProcess({ deadlines_enabled: true });
  const late = await mate.create(pk, { key: 'late', amount: 1, deadline: '2026-12-01T00:00:00Z' });
  const soon = await mate.create(pk, { key: 'soon', amount: 1, deadline: '2026-04-01T00:00:00Z' });
  const none = await mate.create(pk, { key: 'none', amount: 1 });
  const future = await mate.create(pk, {
    key: 'future',
    amount: 1,
    activationDate: new Date(clock.now().getTime() + 3600_000).toISOString(),
  });
  const s = await mate.takeNext(pk);
  assert.equal(s.taskId, soon);
  assert.match(s.deadline, /^2026-04-01T00:00:00\.000\+00:00$/);
  assert.equal((await mate.takeNext(pk)).taskId, late);
  assert.equal((await mate.takeNext(pk)).taskId, none);
  assert.equal((await mate.takeNext(pk)).taskId, -1, 'a task with a future activation date is not taken');
  clock.advance(3601);
  assert.equal((await mate.takeNext(pk)).taskId, future, 'it is taken once its activation date has come');
});

test('take: gate closed, blocked date and blocked weekday give dummies and leave the run open', async () => {
  const pk = await freshProcess();
  const id = await mate.create(pk, { key: 'a', amount: 1 });
  const run = (await mate.get(`/api/StartOrGetRun/${pk}`)).body.runId;
  await setProcess(pk, { gate_open: false });
  const closed = await mate.takeNext(pk);
  assert.deepEqual([closed.taskId, closed.code], [-1, 'gate_closed']);
  const ok = await mate.get(`/api/OkToRun/${pk}`);
  assert.deepEqual(ok.body.okToRun, false);
  assert.deepEqual(ok.body.gateOpen, false);
  await setProcess(pk, { gate_open: true, calendar: { blockedDates: [clock.now().toISOString().slice(0, 10)], blockedWeekdays: [] } });
  assert.equal((await mate.takeNext(pk)).code, 'blocked_date');
  assert.equal((await mate.get(`/api/OkToRun/${pk}`)).body.notBlockedDate, false);
  await setProcess(pk, { calendar: { blockedDates: [], blockedWeekdays: [clock.now().getUTCDay()] } });
  assert.equal((await mate.takeNext(pk)).code, 'blocked_date');
  const cat = await mate.post(`/api/CreateAndTakeTask/${pk}`, { key: 'b', amount: 2 });
  assert.deepEqual([cat.body.taskId, cat.body.code], [-1, 'blocked_date']);
  const { rows } = await sql<{
    n: number;
  }>`SELECT count(*)::int AS n FROM tasks WHERE process_id = (SELECT process_id FROM tasks WHERE id = ${id})`.execute(t.store.db);
  assert.equal(rows[0].n, 1, 'CreateAndTakeTask created nothing');
  const stillOpen = await sql<{ finished_at: Date | null }>`SELECT finished_at FROM runs WHERE id = ${run}`.execute(t.store.db);
  assert.equal(stillOpen.rows[0].finished_at, null, 'dummies other than queue_empty leave the run alone');
  await setProcess(pk, { calendar: { blockedDates: [], blockedWeekdays: [] } });
  const taken = await mate.takeNext(pk);
  assert.equal(taken.taskId, id);
  assert.equal(taken.runId, run, 'the take resumes the open run');
});

test('Solved, Manual and Error hand-backs', async () => {
  const pk = await freshProcess();
  const ids = [
    await mate.create(pk, { key: 'a', amount: 1 }),
    await mate.create(pk, { key: 'b', amount: 1 }),
    await mate.create(pk, { key: 'c', amount: 1 }),
  ];
  for (const _ of ids) await mate.takeNext(pk);
  const s = await mate.post('/api/Solved', { taskId: ids[0], reason: 'ok' });
  assert.deepEqual([s.body.succeeded, s.body.queue, s.body.error], [true, 'Solved', false]);
  const m = await mate.post('/api/Manual', { taskId: ids[1], reason: 'business case' });
  assert.deepEqual([m.body.queue, m.body.error], ['Manual', false]);
  const e = await mate.post('/api/Error', { taskId: ids[2], reason: 'crash', comment: 'stack trace …' });
  assert.deepEqual([e.body.queue, e.body.error], ['Manual', true]);
  const row = await taskRow(ids[2]);
  assert.deepEqual([row.queue, row.error, row.reason, row.locked_until], ['Manual', true, 'crash', null]);
  const solvedAgain = await mate.post('/api/Solved', { taskId: ids[0] });
  assert.deepEqual([solvedAgain.status, solvedAgain.body.succeeded, solvedAgain.body.code], [200, false, 'task_solved']);
  assert.ok(solvedAgain.body.message.length > 0);
});

test('Retry: allowed under the limit, converted to Error at the limit, and when not allowed', async () => {
  const pk = await freshProcess({ max_retries: 2 });
  const id = await mate.create(pk, { key: 'a', amount: 1 });
  for (let i = 1; i <= 2; i++) {
    clock.advance(1);
    assert.equal((await mate.takeNext(pk)).taskId, id);
    const r = await mate.post('/api/Retry', { taskId: id });
    assert.deepEqual([r.body.queue, r.body.error], ['Ready', false]);
    assert.equal((await taskRow(id)).retry_count, i);
  }
  clock.advance(1);
  await mate.takeNext(pk);
  const limit = await mate.post('/api/Retry', { taskId: id });
  assert.deepEqual([limit.body.succeeded, limit.body.queue, limit.body.error], [true, 'Manual', true]);
  assert.match(limit.body.message, /Retry limit reached/);
  assert.equal((await history(id)).at(-1).details.note, 'Retry limit reached: converted to Error');

  const pk2 = await freshProcess({ retry_allowed: false });
  const id2 = await mate.create(pk2, { key: 'b', amount: 1 });
  await mate.takeNext(pk2);
  const no = await mate.post('/api/Retry', { taskId: id2 });
  assert.deepEqual([no.body.queue, no.body.error], ['Manual', true]);
  assert.equal((await history(id2)).at(-1).details.note, 'Retry not allowed: converted to Error');
  const kpi = await sql<{ outcome: string }>`SELECT outcome FROM kpi_events WHERE task_id = ${id2}`.execute(t.store.db);
  assert.deepEqual(
    kpi.rows.map((r) => r.outcome),
    ['Error'],
    'a Retry converted to Error logs an Error KPI event',
  );
});

test('Retry with an activation date: not taken before it; unreadable date refused, task stays locked', async () => {
  const pk = await freshProcess();
  const id = await mate.create(pk, { key: 'a', amount: 1 });
  await mate.takeNext(pk);
  const bad = await mate.post('/api/Retry', { taskId: id, activationDate: 'tomorrow' });
  assert.deepEqual([bad.status, bad.body.code], [200, 'invalid_activation_date']);
  const far = await mate.post('/api/Retry', { taskId: id, activationDate: '2099-01-01' });
  assert.equal(far.body.code, 'invalid_activation_date');
  assert.equal((await taskRow(id)).locked_by_mate_id, tenant.mateId, 'the task stays locked by the caller');
  const at = new Date(clock.now().getTime() + 7200_000);
  const r = await mate.post('/api/Retry', { taskId: id, activationDate: at.toISOString() });
  assert.equal(r.body.queue, 'Ready');
  assert.equal((await mate.takeNext(pk)).taskId, -1);
  clock.advance(7201);
  assert.equal((await mate.takeNext(pk)).taskId, id);
});

test('Stop on Errors engages above the limit and releases when errors are resolved', async () => {
  const pk = await freshProcess({ stop_on_errors: true, error_limit: 1 });
  const ids = [];
  for (let i = 0; i < 3; i++) ids.push(await mate.create(pk, { key: `e${i}`, amount: 1 }));
  await mate.takeNext(pk);
  await mate.post('/api/Error', { taskId: ids[0] });
  assert.equal((await mate.get(`/api/OkToRun/${pk}`)).body.stoppedByErrors, false, '1 error is within the limit of 1');
  await mate.takeNext(pk);
  await mate.post('/api/Error', { taskId: ids[1] });
  const ok = await mate.get(`/api/OkToRun/${pk}`);
  assert.deepEqual([ok.body.stoppedByErrors, ok.body.okToRun, ok.body.tasksAvailable], [true, false, true]);
  assert.equal((await mate.takeNext(pk)).code, 'stopped_by_errors');
  assert.deepEqual((await mate.get(`/api/TakeMany/${pk}`)).body, []);
  // people resolve one error (moving it to Solved); the process resumes
  await sql`UPDATE tasks SET queue = 'Solved', error = false WHERE id = ${ids[0]}`.execute(t.store.db);
  assert.equal((await mate.get(`/api/OkToRun/${pk}`)).body.okToRun, true);
  assert.equal((await mate.takeNext(pk)).taskId, ids[2]);
});

test('lock expiry: the sweeper recovers the task as a Retry; the former holder is refused', async () => {
  const pk = await freshProcess({ lock_timeout_seconds: 2 });
  const id = await mate.create(pk, { key: 'a', amount: 1 });
  const taken = await mate.takeNext(pk);
  assert.equal(taken.taskId, id);
  clock.advance(3);
  const due = await mate.post('/api/Solved', { taskId: id });
  assert.equal(due.body.code, 'lock_expired', 'a due lease is refused even before the sweep');
  const swept = await sweepOnce(t.app.services, clock.now());
  assert.ok(swept.recovered >= 1);
  const row = await taskRow(id);
  assert.deepEqual([row.queue, row.retry_count, row.reason, row.locked_until], ['Ready', 1, 'Lock expired', null]);
  const byOther = await other.takeNext(pk);
  assert.equal(byOther.taskId, id, 'a second Mate takes the recovered task');
  const late = await mate.post('/api/Solved', { taskId: id });
  assert.equal(late.body.code, 'task_not_locked_by_you', 'held by another Mate now');
  const lateUpdate = await mate.post('/api/UpdateTask', { taskId: id, key: 'z' });
  assert.equal(lateUpdate.body.succeeded, false);
  assert.equal((await taskRow(id)).data.key, 'a', 'the refused update changed nothing');
  const h = (await history(id)).map((r: any) => r.action);
  assert.deepEqual(h, ['Created', 'Taken', 'Lock expired', 'Taken']);
  assert.equal((await other.post('/api/Solved', { taskId: id })).body.succeeded, true);
});

test('lock expiry before another take: the former holder gets lock_expired', async () => {
  const pk = await freshProcess({ lock_timeout_seconds: 2, retry_allowed: false });
  const id = await mate.create(pk, { key: 'a', amount: 1 });
  await mate.takeNext(pk);
  clock.advance(5);
  await sweepOnce(t.app.services, clock.now());
  const row = await taskRow(id);
  assert.deepEqual([row.queue, row.error], ['Manual', true], 'without retries the recovery is an Error');
  assert.equal((await mate.post('/api/Manual', { taskId: id })).body.code, 'lock_expired');
});

test('ExtendLock extends the lease; UpdateTask extends it too', async () => {
  const pk = await freshProcess({ lock_timeout_seconds: 60 });
  const id = await mate.create(pk, { key: 'a', amount: 1 });
  await mate.takeNext(pk);
  const ext = await mate.post('/api/ExtendLock', { taskId: id, seconds: 600 });
  assert.equal(ext.body.succeeded, true);
  assert.equal(new Date(ext.body.lockedUntil).getTime(), clock.now().getTime() + 600_000);
  clock.advance(300);
  assert.equal((await mate.post('/api/ExtendLock', { taskId: id, seconds: 1 })).body.succeeded, true);
  assert.equal((await taskRow(id)).locked_until.getTime(), clock.now().getTime() + 300_000, 'never shortened');
  assert.equal((await other.post('/api/ExtendLock', { taskId: id })).body.code, 'task_not_locked_by_you');
  clock.advance(400);
  assert.equal((await mate.post('/api/ExtendLock', { taskId: id })).body.code, 'lock_expired');
});

test('CreateAndTakeTask: created locked by the caller, even with a future activation date', async () => {
  const pk = await freshProcess();
  const r = await mate.post(`/api/CreateAndTakeTask/${pk}`, { key: 'a', amount: 3, activationDate: '2030-01-01' });
  assert.ok(r.body.taskId > 0, JSON.stringify(r.body));
  assert.ok(r.body.runId > 0);
  assert.equal(r.body.amount, 3);
  assert.equal((await mate.post('/api/Solved', { taskId: r.body.taskId })).body.succeeded, true);
  const missing = await mate.post(`/api/CreateAndTakeTask/${pk}`, { key: 'b' });
  assert.deepEqual([missing.body.taskId, missing.body.code], [-1, 'required_field_missing']);
  assert.equal(missing.body.errors[0].field, 'amount');
});

test('Failure sets the process state; the next take clears it', async () => {
  const pk = await freshProcess();
  const f = await mate.post('/api/Failure', { processKey: pk, message: 'x'.repeat(10_000) });
  assert.equal(f.body.succeeded, true);
  const state = async () =>
    (await sql<any>`SELECT failure_message FROM processes WHERE tenant_id = ${tenant.tenantId} AND process_key = ${pk}`.execute(t.store.db))
      .rows[0].failure_message;
  assert.equal((await state())?.length, 10_000);
  await mate.get(`/api/OkToRun/${pk}`);
  assert.notEqual(await state(), null, 'OkToRun does not clear the Failure state');
  await mate.takeNext(pk);
  assert.ok((await state()) === null, 'the take cleared the Failure state');
  // every Mate action on the process clears it: ExtendLock and a hand-back too
  await mate.post('/api/Failure', { processKey: pk, message: 'again' });
  const id = await mate.create(pk, { key: 'f', amount: 1 });
  await mate.get(`/api/GetRules/${pk}`);
  assert.equal(await state(), 'again', 'GetRules and CreateTask leave it');
  const taken = await mate.takeNext(pk);
  assert.equal(taken.taskId, id);
  await mate.post('/api/Failure', { processKey: pk, message: 'third' });
  await mate.post('/api/ExtendLock', { taskId: id });
  assert.ok((await state()) === null, 'ExtendLock cleared it');
  await mate.post('/api/Failure', { processKey: pk, message: 'fourth' });
  await mate.post('/api/Solved', { taskId: id });
  assert.ok((await state()) === null, 'the hand-back cleared it');
});

test('lock expiry at the retry limit: recovered as an Error', async () => {
  const pk = await freshProcess({ lock_timeout_seconds: 2, max_retries: 0 });
  const id = await mate.create(pk, { key: 'a', amount: 1 });
  await mate.takeNext(pk);
  clock.advance(5);
  await sweepOnce(t.app.services, clock.now());
  const row = await taskRow(id);
  assert.deepEqual([row.queue, row.error, row.retry_count], ['Manual', true, 0]);
  assert.equal((await history(id)).at(-1).reason, 'Lock expired; Retry limit reached: converted to Error');
});

test('runs: an idle run past runTimeoutSeconds is closed; the next take opens a new one', async () => {
  const pk = await freshProcess({ run_timeout_seconds: 600 });
  await mate.create(pk, { key: 'a', amount: 1 });
  await mate.create(pk, { key: 'b', amount: 1 });
  const first = await mate.takeNext(pk);
  clock.advance(300);
  assert.equal((await mate.get(`/api/StartOrGetRun/${pk}`)).body.runId, first.runId, 'within the timeout the run is resumed');
  clock.advance(601);
  const second = await mate.takeNext(pk);
  assert.ok(second.taskId > 0);
  assert.notEqual(second.runId, first.runId, 'a new run after the idle timeout');
  const old = await sql<{ finish_reason: string }>`SELECT finish_reason FROM runs WHERE id = ${first.runId}`.execute(t.store.db);
  assert.equal(old.rows[0].finish_reason, 'timeout');
  // the sweeper closes idle runs nobody touches again
  clock.advance(601);
  const swept = await sweepOnce(t.app.services, clock.now());
  assert.ok(swept.runsClosed >= 1);
  const closed = await sql<{ finish_reason: string }>`SELECT finish_reason FROM runs WHERE id = ${second.runId}`.execute(t.store.db);
  assert.equal(closed.rows[0].finish_reason, 'timeout');
});

test('runs: takes and hand-backs record the last activity to the second; a new Mate is always added', async () => {
  const pk = await freshProcess({ run_timeout_seconds: 600 });
  for (let i = 0; i < 4; i++) await mate.create(pk, { key: `r${i}`, amount: 1 });
  const run = async (id: number) =>
    (
      await sql<{ last_activity_at: Date; mate_ids: number[]; solved_count: number; version: string }>`
        SELECT r.last_activity_at, r.mate_ids, coalesce(o.solved_count, 0) AS solved_count, r.xmin::text AS version
        FROM runs r LEFT JOIN run_outcomes o ON o.tenant_id = r.tenant_id AND o.run_id = r.id WHERE r.id = ${id}`.execute(t.store.db)
    ).rows[0];
  const first = await mate.takeNext(pk);
  const opened = await run(first.runId);
  assert.equal(opened.last_activity_at.getTime(), clock.now().getTime());
  // half a second later: the same Mate's take leaves the run row as it is
  clock.advance(0.5);
  const second = await mate.takeNext(pk);
  assert.equal(second.runId, first.runId);
  assert.equal((await run(first.runId)).version, opened.version, 'the run row was not rewritten');
  // a hand-back within the second counts (its KPI event), without moving the last activity: the
  // run row is not written
  assert.equal((await mate.post('/api/Solved', { taskId: first.taskId })).body.succeeded, true);
  let now = await run(first.runId);
  assert.deepEqual([now.solved_count, now.last_activity_at.getTime()], [1, opened.last_activity_at.getTime()]);
  assert.equal(now.version, opened.version, 'the run row was not rewritten by the hand-back');
  // a second on, the hand-back moves it
  clock.advance(1);
  assert.equal((await mate.post('/api/Solved', { taskId: second.taskId })).body.succeeded, true);
  now = await run(first.runId);
  assert.deepEqual([now.solved_count, now.last_activity_at.getTime()], [2, clock.now().getTime()]);
  // another Mate within the second is added to the run at once
  clock.advance(0.2);
  const third = await other.takeNext(pk);
  assert.equal(third.runId, first.runId);
  now = await run(first.runId);
  assert.equal(now.mate_ids.length, 2);
  assert.equal(now.last_activity_at.getTime(), clock.now().getTime());
  // and a take past the second moves it too
  clock.advance(1.5);
  await mate.takeNext(pk);
  assert.equal((await run(first.runId)).last_activity_at.getTime(), clock.now().getTime());
});

test("every Mate call records the Mate's last contact (written at most every 10 s)", async () => {
  const contact = async () =>
    (await sql<{ last_contact_at: Date | null }>`SELECT last_contact_at FROM mates WHERE id = ${tenant.mateId}`.execute(t.store.db)).rows[0]
      .last_contact_at;
  clock.advance(11);
  const pk = await freshProcess();
  await mate.get(`/api/OkToRun/${pk}`);
  const at = clock.now().getTime();
  assert.equal((await contact())?.getTime(), at);
  clock.advance(5);
  await mate.get(`/api/GetRules/${pk}`);
  assert.equal((await contact())?.getTime(), at, 'not written again within 10 s');
  clock.advance(6);
  await mate.get(`/api/TakeNext/${pk}`);
  assert.equal((await contact())?.getTime(), clock.now().getTime());
});
