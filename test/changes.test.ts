/**
 * Every row of the state-machine table (docs/state-machine.md §1) driven through its change
 * constructor (src/tasks/changes.ts) with facts that select it: the change's queue, Error flag,
 * note, KPI outcome and retry match the row's target, no other row of its action matches, and
 * every row is reached. The constructors are pure, so this needs no store.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Caller } from '../src/lib/caller.js';
import type { ProcessDef } from '../src/processes/store.js';
import { validateTaskData } from '../src/processes/task-data.js';
import type { TaskChange } from '../src/tasks/funnel.js';
import type { LockedTaskRow } from '../src/tasks/store.js';
import { prepareTasks } from '../src/tasks/create.js';
import {
  created,
  fieldsCompleted,
  handedBack,
  lockExpired,
  lockExtended,
  personAction,
  updated,
  type HandBackInput,
  type PersonAction,
} from '../src/tasks/changes.js';
import { LOCK_EXPIRED, RETRY_LIMIT_REACHED, TRANSITIONS, type Queue, type Transition } from '../src/tasks/state-machine.js';

const now = new Date('2026-03-02T09:00:00.000Z');
const earlier = new Date('2026-03-01T09:00:00.000Z');
const later = (s: number) => new Date(now.getTime() + s * 1000);
const MATE = 7;
const mate: Caller = { tenantId: 1, timeZone: 'UTC', actor: { type: 'mate', id: MATE, name: 'robot' }, requestId: 'r1', now };
const person: Caller = { tenantId: 1, timeZone: 'UTC', actor: { type: 'user', id: 9, name: 'alice' }, requestId: 'r2', now };

const proc = (over: Partial<ProcessDef> = {}): ProcessDef => ({
  tenantId: 1,
  id: 3,
  processKey: 'p',
  name: 'p',
  tasksEnabled: true,
  gateOpen: true,
  calendar: { blockedWeekdays: [], blockedDates: [] },
  deadlinesEnabled: false,
  defaultDeadlineSeconds: null,
  defaultActivationOffsetSeconds: 0,
  retryAllowed: true,
  maxRetries: 3,
  stopOnErrors: false,
  errorLimit: 10,
  lockTimeoutSeconds: 600,
  requireApproval: 'none',
  kpi: {
    secondsSavedPerTask: 120,
    entriesPerTask: 2,
    secondsSavedPerEntry: null,
    secondsSavedManual: 30,
    secondsSavedError: 5,
    secondsSavedRetry: 7,
  },
  runTimeoutSeconds: 60,
  failureAt: null,
  fields: [{ name: 'key', type: 'text', required: true, isKey: true, isUnique: false, options: [], defaultValue: null }],
  ...over,
});

/** A task of `proc()` in Ready, free, with its value filled, and its process's settings. */
const task = (over: Partial<LockedTaskRow> = {}): LockedTaskRow => ({
  tenant_id: 1,
  id: 42,
  process_id: 3,
  queue: 'Ready',
  error: false,
  reason: null,
  data: { key: 'k1' },
  unique_key: null,
  activation_date: earlier,
  deadline: null,
  urgent: false,
  queue_position: earlier,
  retry_count: 0,
  locked_by_mate_id: null,
  locked_by_user_id: null,
  locked_until: null,
  expired_lock_mate_id: null,
  run_id: null,
  created_at: earlier,
  updated_at: earlier,
  deleted_at: null,
  process_key: 'p',
  retry_allowed: true,
  max_retries: 3,
  kpi: proc().kpi,
  lock_timeout_seconds: 600,
  ...over,
});

/** Held by the Mate with a live lease, in its run. */
const held = (over: Partial<LockedTaskRow> = {}) => task({ locked_by_mate_id: MATE, locked_until: later(60), run_id: 5, ...over });

const handBack = (action: HandBackInput['action']): HandBackInput => ({
  caller: mate,
  action,
  reason: 'why',
  comment: null,
  overrides: { overwriteSecondsSaved: null, overwriteEntries: null },
});

const created1 = (p: ProcessDef, item: Record<string, unknown>, caller: Caller = mate) =>
  created(caller, 100, prepareTasks(caller, p, [item], false)[0], null);

const update = (row: LockedTaskRow, body: Record<string, unknown>, lease: number | null) => {
  const r = validateTaskData({ fields: proc().fields, body, mode: 'update', timeZone: 'UTC', current: row.data });
  assert.ok(r.ok);
  return updated(row, r, mate, lease);
};

const act = (row: LockedTaskRow, input: PersonAction) => personAction(row, proc(), input, person);

interface Case {
  change: TaskChange;
  /** the queue asked for, for a target 'requested' */
  requested?: Queue;
}

const key = (t: Pick<Transition, 'action' | 'condition'>) => `${t.action}: ${t.condition}`;

/** The cases of each row, by `action: condition`; the take has none (below). */
const CASES: Record<string, () => Case[]> = {
  'create: approval required for the source (requireApproval = all, or mateCreated and a Mate creates)': () => [
    { change: created1(proc({ requireApproval: 'all' }), { key: 'a' }, person) },
    { change: created1(proc({ requireApproval: 'mateCreated' }), { key: 'a' }) },
  ],
  'create: a required field is missing or empty': () => [{ change: created1(proc(), {}) }],
  'create: otherwise': () => [
    { change: created1(proc(), { key: 'a' }) },
    { change: created1(proc({ requireApproval: 'mateCreated' }), { key: 'a' }, person) },
  ],
  'Solved: -': () => [{ change: handedBack(held(), handBack('Solved'), null, false) }],
  'Manual: -': () => [{ change: handedBack(held(), handBack('Manual'), null, false) }],
  'Error: -': () => [{ change: handedBack(held(), handBack('Error'), null, false) }],
  'Retry: retryAllowed and retryCount < maxRetries': () => [
    { change: handedBack(held({ retry_count: 2 }), handBack('Retry'), null, false) },
    { change: handedBack(held(), handBack('Retry'), later(3600), false) },
  ],
  'Retry: retry not allowed': () => [{ change: handedBack(held({ retry_allowed: false }), handBack('Retry'), null, false) }],
  'Retry: retryCount >= maxRetries': () => [{ change: handedBack(held({ retry_count: 3 }), handBack('Retry'), later(3600), false) }],
  'lockExpired: retryAllowed and retryCount < maxRetries': () => [{ change: lockExpired(held({ locked_until: earlier }), now) }],
  'lockExpired: retry not allowed': () => [{ change: lockExpired(held({ locked_until: earlier, retry_allowed: false }), now) }],
  'lockExpired: retryCount >= maxRetries': () => [{ change: lockExpired(held({ locked_until: earlier, retry_count: 3 }), now) }],
  'update: NeedsData and every required field now filled': () => [
    { change: update(task({ queue: 'NeedsData', data: {} }), { key: 'x' }, null) },
  ],
  'update: otherwise': () => [
    { change: update(held(), { key: 'x' }, 600) },
    { change: update(task({ queue: 'NeedsData', data: {} }), { key: '' }, null) },
    { change: update(task({ queue: 'Manual' }), { key: 'x' }, null) },
  ],
  'extendLock: -': () => [{ change: lockExtended(held(), null, mate) }, { change: lockExtended(held(), 3600, mate) }],
  'move: to Manual with the Error flag': () => [
    { change: act(task(), { action: 'move', queue: 'Manual', error: true }) },
    { change: act(task({ queue: 'Manual' }), { action: 'move', queue: 'Manual', error: true }) },
  ],
  'move: the task had the Error flag': () => [
    { change: act(task({ queue: 'Manual', error: true }), { action: 'move', queue: 'Ready' }), requested: 'Ready' },
    { change: act(task({ queue: 'Manual', error: true }), { action: 'move', queue: 'Manual' }), requested: 'Manual' },
  ],
  'move: otherwise': () => [
    { change: act(task({ queue: 'Manual' }), { action: 'move', queue: 'Ready' }), requested: 'Ready' },
    { change: act(task(), { action: 'move', queue: 'NeedsApproval' }), requested: 'NeedsApproval' },
  ],
  'edit: NeedsData and every required field now filled': () => [
    { change: act(task({ queue: 'NeedsData', data: {} }), { action: 'edit', data: { key: 'x' } }) },
    { change: fieldsCompleted(task({ queue: 'NeedsData', data: {} }), person) },
  ],
  'edit: otherwise': () => [
    { change: act(task({ queue: 'Manual' }), { action: 'edit', data: { key: 'x' } }) },
    { change: act(task({ queue: 'NeedsData', data: {} }), { action: 'edit', urgent: true }) },
  ],
  'comment: -': () => [{ change: act(held(), { action: 'comment', text: 'hello' }) }],
  'setUrgent: -': () => [{ change: act(held(), { action: 'setUrgent', urgent: true }) }],
  'approve: a required field is missing or empty': () => [
    { change: act(task({ queue: 'NeedsApproval', data: {} }), { action: 'approve' }) },
  ],
  'approve: otherwise': () => [{ change: act(task({ queue: 'NeedsApproval' }), { action: 'approve' }) }],
  'reject: -': () => [{ change: act(task({ queue: 'NeedsApproval' }), { action: 'reject' }) }],
  'clearError: -': () => [{ change: act(task({ queue: 'Manual', error: true }), { action: 'clearError' }) }],
  'unlock: -': () => [{ change: act(held(), { action: 'unlock' }) }],
  'reopen: to Ready or Manual': () => [
    { change: act(task({ queue: 'Solved' }), { action: 'reopen', queue: 'Ready' }), requested: 'Ready' },
    { change: act(task({ queue: 'Solved' }), { action: 'reopen', queue: 'Manual' }), requested: 'Manual' },
  ],
  'delete: -': () => [{ change: act(task(), { action: 'delete' }) }],
};

/** The note a change carries: the hand-back's and people's in their details, the sweeper's as the task's reason. */
const noteOf = (c: TaskChange) => (c.action === 'Lock expired' ? c.after.reason : (c.details?.note as string | undefined)) ?? undefined;

/** Does `c` show the target of `row`? */
function shows(row: Transition, { change: c, requested }: Case): boolean {
  const b = c.before;
  const to = row.to;
  const queue = to.queue === 'unchanged' ? b?.queue : to.queue === 'requested' ? requested : to.queue;
  const error = to.queue === 'unchanged' ? b?.error : to.error;
  const retries = (b?.retry_count ?? 0) + (to.retried ? 1 : 0);
  return (
    c.after.queue === queue &&
    c.after.error === error &&
    noteOf(c) === to.note &&
    c.kpi?.outcome === to.kpi &&
    c.after.retry_count === retries
  );
}

test('every row of the state-machine table is reached through its change constructor, and its change shows its target', () => {
  const missed: string[] = [];
  for (const row of TRANSITIONS) {
    if (row.action === 'take') continue;
    const cases = CASES[key(row)];
    if (!cases) {
      missed.push(key(row));
      continue;
    }
    const others = TRANSITIONS.filter((other) => other !== row && other.action === row.action);
    let telling = false;
    for (const c of cases()) {
      assert.ok(shows(row, c), `${key(row)}: ${JSON.stringify({ queue: c.change.after.queue, error: c.change.after.error })}`);
      telling ||= !others.some((other) => shows(other, c));
    }
    // a case that no other row of the action explains proves that the constructor picked this row
    // (an update left in Ready looks like one moved to Ready)
    assert.ok(telling, `${key(row)}: every case also shows another row of ${row.action}`);
  }
  assert.deepEqual(missed, []);
  assert.deepEqual(
    Object.keys(CASES).filter((k) => !TRANSITIONS.some((r) => key(r) === k)),
    [],
    'a case for a row the table no longer has',
  );
});

test("the take's row leaves the queue and the Error flag: take.ts builds that change in SQL (test/lifecycle.test.ts)", () => {
  const rows = TRANSITIONS.filter((r) => r.action === 'take');
  assert.equal(rows.length, 1);
  assert.deepEqual(rows[0].to, { queue: 'unchanged', error: false });
});

test('a hand-back releases the lock, keeps the reason, logs its KPI event and clears the Failure state', () => {
  const c = handedBack(held({ version: '77' } as Partial<LockedTaskRow>), handBack('Solved'), null, true);
  assert.deepEqual(
    [c.after.locked_by_mate_id, c.after.locked_until, c.after.run_id, c.after.expired_lock_mate_id, c.after.reason],
    [null, null, null, null, 'why'],
  );
  assert.deepEqual(c.kpi, { outcome: 'Solved', entries: 2, secondsSaved: 120 });
  assert.equal(c.clearsFailure, true);
  assert.equal(c.expectedVersion, '77');
  assert.equal('version' in c.before! || 'version' in c.after, false, 'the version is not part of the row');
  assert.equal(handedBack(held(), handBack('Solved'), null, false).expectedVersion, null);
});

test('a Retry goes to the bottom of the queue, or waits for the activation date asked for (a past one counts as now)', () => {
  const bottom = handedBack(held(), handBack('Retry'), null, false).after;
  assert.deepEqual([bottom.queue_position, bottom.activation_date, bottom.retry_count], [now, earlier, 1]);
  const at = later(3600);
  const waiting = handedBack(held(), handBack('Retry'), at, false).after;
  assert.deepEqual([waiting.queue_position, waiting.activation_date], [at, at]);
  const past = handedBack(held(), handBack('Retry'), new Date(now.getTime() - 5000), false).after;
  assert.deepEqual([past.queue_position, past.activation_date], [now, now]);
  // converted to an Error: the date asked for is not used
  const error = handedBack(held({ retry_count: 3 }), handBack('Retry'), at, false);
  assert.deepEqual([error.after.queue_position, error.after.activation_date, error.after.retry_count], [earlier, earlier, 3]);
  assert.deepEqual([error.kpi?.outcome, error.details], ['Error', { note: RETRY_LIMIT_REACHED }]);
});

test('a lease recovery keeps the former holder, logs no KPI event and acts as the system', () => {
  const c = lockExpired(held({ locked_until: earlier }), now);
  assert.deepEqual(
    [c.after.locked_by_mate_id, c.after.locked_until, c.after.run_id, c.after.expired_lock_mate_id, c.after.queue_position],
    [null, null, null, MATE, now],
  );
  assert.deepEqual([c.after.reason, c.kpi, c.clearsFailure], [LOCK_EXPIRED, undefined, undefined]);
  assert.deepEqual(c.caller, { tenantId: 1, timeZone: 'UTC', actor: { type: 'system', id: null, name: 'system' }, requestId: null, now });
  assert.deepEqual(c.details, { formerHolderMateId: MATE, lockedUntil: earlier.toISOString() });
});

test("a person's action releases a lease, and the former Mate's hand-back is then refused; a task arriving in Ready goes to the bottom", () => {
  const expired = held({ queue: 'Manual', locked_until: earlier });
  const moved = act(expired, { action: 'move', queue: 'Ready' }).after;
  assert.deepEqual(
    [moved.locked_by_mate_id, moved.locked_until, moved.run_id, moved.expired_lock_mate_id, moved.queue_position],
    [null, null, null, MATE, now],
  );
  assert.equal(act(task(), { action: 'comment', text: 'hi' }).after.queue_position, earlier);
  assert.equal(act(held(), { action: 'comment', text: 'hi' }).after.locked_by_mate_id, MATE, 'a comment leaves the lock');
});

test('an update extends the lease of the Mate holding the task, ExtendLock to max(lockedUntil, now + seconds)', () => {
  assert.deepEqual(update(held(), { key: 'x' }, 600).after.locked_until, later(600));
  assert.deepEqual(update(held({ locked_until: later(900) }), { key: 'x' }, 600).after.locked_until, later(900));
  assert.equal(update(task({ queue: 'Manual' }), { key: 'x' }, null).after.locked_until, null);
  assert.deepEqual(lockExtended(held(), null, mate).after.locked_until, later(600));
  assert.deepEqual(lockExtended(held({ locked_until: later(4000) }), 3600, mate).after.locked_until, later(4000));
});
