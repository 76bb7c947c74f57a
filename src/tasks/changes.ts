/**
 * One constructor per transition of the state machine (docs/state-machine.md §1): each picks its
 * row of the table with transition() and returns the whole change the funnel writes (funnel.ts
 * TaskChange): the after row (queue, Error flag, lock release, retry count, queue position,
 * activation date, expired-lock holder, reason), the history action and details, the KPI event and
 * whether it clears the process's Failure state. Callers read, refuse and write; they never
 * assemble an after row themselves.
 *
 * The constructors are pure: no I/O and no clock, the time of a change is `caller.now` (or `now`).
 * The take is the one change built elsewhere: its rows are picked and changed by one SQL statement
 * (take.ts), which leaves the queue and the Error flag as they are, as the table's take row says.
 */
import { Refusal, problemsRefusal } from '../lib/errors.js';
import { callerUserId, systemCaller, type Caller } from '../lib/caller.js';
import { toText } from '../lib/values.js';
import { computeKpi, type KpiOverrides } from '../kpis/rules.js';
import { findMissingRequired, validateTaskData, type TaskData } from '../processes/task-data.js';
import type { ProcessDef } from '../processes/store.js';
import type { TaskChange } from './funnel.js';
import { transition, QUEUES, type HandBackAction, type Queue, type Transition } from './state-machine.js';
import type { LockedTaskRow, ReadTaskRow, TaskRow } from './store.js';

/**
 * The row in the queue and with the Error flag of its transition's target: `'unchanged'` keeps
 * both, `'requested'` is the queue the person asked for. The row itself when neither changes.
 */
function into(row: TaskRow, t: Transition, requested?: Queue): TaskRow {
  if (t.to.queue === 'unchanged') return row;
  const queue = t.to.queue === 'requested' ? requested! : t.to.queue;
  return queue === row.queue && t.to.error === row.error ? row : { ...row, queue, error: t.to.error };
}

/** Ready from elsewhere: a task arriving in Ready goes to the bottom of the queue, like a Retry. */
function arriving(before: TaskRow, after: TaskRow, now: Date): TaskRow {
  return after.queue === 'Ready' && before.queue !== 'Ready' ? { ...after, queue_position: now } : after;
}

/** The row without its lock; a Mate's lease becomes "expired" so its late hand-back is refused. */
function released(row: TaskRow): TaskRow {
  if (row.locked_until === null) return row;
  return {
    ...row,
    locked_by_mate_id: null,
    locked_by_user_id: null,
    locked_until: null,
    run_id: null,
    expired_lock_mate_id: row.locked_by_mate_id ?? row.expired_lock_mate_id,
  };
}

// ---- create -----------------------------------------------------------------------------------

/**
 * A validated task about to be created, with its first comment (create.ts prepareTasks). Its
 * queue is the create row picked when it was validated, before any id is drawn, so that
 * CreateAndTakeTask refuses a task that would not land in Ready before anything is written.
 */
export interface PreparedTask {
  processId: number;
  queue: Queue;
  data: Record<string, unknown>;
  uniqueKey: string | null;
  activationDate: Date;
  deadline: Date | null;
  urgent: boolean;
  comment: string | null;
  missingRequired: string[];
}

/** create: the queue a new task starts in (docs/state-machine.md §1). */
export function createdQueue(caller: Caller, proc: Pick<ProcessDef, 'requireApproval'>, missingRequired: readonly string[]): Queue {
  const source = caller.actor.type === 'user' ? 'user' : 'mate';
  return transition('create', { source, requireApproval: proc.requireApproval, requiredMissing: missingRequired.length > 0 }).to
    .queue as Queue;
}

/**
 * create: the change creating `task` under the drawn `id`, free, or with `lock` taken by the
 * calling Mate in its run (CreateAndTakeTask, a Mate acting on the process: it clears the
 * process's Failure state).
 */
export function created(
  caller: Caller,
  id: number,
  task: PreparedTask,
  lock: { mateId: number; until: Date; runId: number } | null,
): TaskChange {
  return {
    caller,
    before: null,
    after: {
      tenant_id: caller.tenantId,
      id,
      process_id: task.processId,
      queue: task.queue,
      error: false,
      reason: null,
      data: task.data,
      unique_key: task.uniqueKey,
      activation_date: task.activationDate,
      deadline: task.deadline,
      urgent: task.urgent,
      queue_position: task.activationDate,
      retry_count: 0,
      locked_by_mate_id: lock?.mateId ?? null,
      locked_by_user_id: null,
      locked_until: lock?.until ?? null,
      expired_lock_mate_id: null,
      run_id: lock?.runId ?? null,
      created_at: caller.now,
      updated_at: caller.now,
      deleted_at: null,
    },
    action: lock ? 'Created and taken' : 'Created',
    comment: task.comment,
    details: task.missingRequired.length ? { missingRequired: task.missingRequired } : null,
    clearsFailure: lock !== null,
  };
}

// ---- a Mate's hand-back, update and lease ------------------------------------------------------

/** What a Mate hands a task back with (hand-back.ts HandBackItem). */
export interface HandBackInput {
  /** a Mate */
  caller: Caller;
  action: HandBackAction;
  reason: string | null;
  comment: string | null;
  overrides: KpiOverrides;
}

/** A hand-back's change: its after row keeps the process settings (a later item of the batch reads it), its note is the answer's. */
export type HandBackChange = TaskChange & { before: LockedTaskRow; after: LockedTaskRow; details: { note: string } | null };

/**
 * Solved, Manual, Error, Retry by the Mate holding the lock (hand-back.ts has refused the others):
 * unlock, store the reason, the KPI event; a Retry under the limit goes back to Ready with
 * retryCount + 1, at the bottom of the queue or at `activationDate` (a past one counts as now),
 * which then becomes the task's activation date. `optimistic`: the row was read with its version,
 * written only if still unchanged (funnel.ts).
 */
export function handedBack(row: ReadTaskRow, item: HandBackInput, activationDate: Date | null, optimistic: boolean): HandBackChange {
  const { caller } = item;
  const now = caller.now;
  const t = transition(item.action, { retryAllowed: row.retry_allowed, retryCount: row.retry_count, maxRetries: row.max_retries });
  const retried = t.to.retried === true;
  const at = activationDate === null ? null : activationDate < now ? now : activationDate;
  const outcome = t.to.kpi!;
  const { version, ...before } = row;
  return {
    caller,
    before,
    after: {
      ...before,
      queue: t.to.queue as Queue,
      error: t.to.error,
      reason: item.reason,
      retry_count: retried ? row.retry_count + 1 : row.retry_count,
      activation_date: retried && at !== null ? at : row.activation_date,
      queue_position: retried ? (at ?? now) : row.queue_position,
      locked_by_mate_id: null,
      locked_until: null,
      run_id: null,
      expired_lock_mate_id: null,
    },
    action: item.action,
    comment: item.comment,
    details: t.to.note ? { note: t.to.note } : null,
    kpi: { outcome, ...computeKpi(row.kpi, outcome, item.overrides) },
    clearsFailure: true,
    expectedVersion: optimistic ? version : null,
  };
}

/**
 * Lease recovery by the sweeper at `now`: a system Retry with reason "Lock expired" (bottom of the
 * queue, retryCount + 1), or an Error when retries are not allowed or used up. The former holder
 * is kept, so that its late hand-back is refused (lock_expired). No KPI event.
 */
export function lockExpired(row: LockedTaskRow, now: Date): TaskChange {
  const t = transition('lockExpired', { retryAllowed: row.retry_allowed, retryCount: row.retry_count, maxRetries: row.max_retries });
  return {
    caller: systemCaller(row.tenant_id, now),
    before: row,
    after: {
      ...row,
      queue: t.to.queue as Queue,
      error: t.to.error,
      reason: t.to.note ?? null,
      retry_count: t.to.retried ? row.retry_count + 1 : row.retry_count,
      queue_position: t.to.retried ? now : row.queue_position,
      locked_by_mate_id: null,
      locked_until: null,
      run_id: null,
      expired_lock_mate_id: row.locked_by_mate_id,
    },
    action: 'Lock expired',
    details: { formerHolderMateId: row.locked_by_mate_id, lockedUntil: row.locked_until?.toISOString() ?? null },
  };
}

/**
 * UpdateTask: the validated values (`update`, validateTaskData in 'update' mode) and their comment
 * on the task; a NeedsData task whose required fields are now all filled moves to Ready. With
 * `leaseSeconds` (the caller holds the lock) the lease becomes max(lockedUntil, now + leaseSeconds);
 * without, the task is free and stays so.
 */
export function updated(row: TaskRow, update: TaskData, caller: Caller, leaseSeconds: number | null): TaskChange {
  const data = { ...row.data, ...update.values };
  for (const [k, v] of Object.entries(update.values)) if (v === null) delete data[k];
  const t = transition('update', { requiredMissing: row.queue === 'NeedsData' ? update.missingRequired.length > 0 : undefined });
  const lockedUntil =
    leaseSeconds === null ? row.locked_until : new Date(Math.max(row.locked_until!.getTime(), caller.now.getTime() + leaseSeconds * 1000));
  return {
    caller,
    before: row,
    after: { ...into(row, t), data, unique_key: update.uniqueKey, locked_until: lockedUntil },
    action: 'Updated',
    comment: update.reserved.comment ?? null,
    details: { fields: Object.keys(update.values) },
    clearsFailure: true,
  };
}

/** ExtendLock: lockedUntil = max(lockedUntil, now + seconds); seconds default to the process's lock timeout. */
export function lockExtended(row: LockedTaskRow, seconds: number | null, caller: Caller): TaskChange {
  const t = transition('extendLock', {});
  const lease = (seconds ?? row.lock_timeout_seconds) * 1000;
  const lockedUntil = new Date(Math.max(row.locked_until!.getTime(), caller.now.getTime() + lease));
  return {
    caller,
    before: row,
    after: { ...into(row, t), locked_until: lockedUntil },
    action: 'Lock extended',
    details: { lockedUntil: lockedUntil.toISOString() },
    clearsFailure: true,
  };
}

/**
 * The fields editor made a NeedsData task nobody holds complete (a required field made optional
 * or removed): it moves to Ready as an edit filling it would, at the bottom of the queue.
 */
export function fieldsCompleted(row: TaskRow, caller: Caller): TaskChange {
  const t = transition('edit', { requiredMissing: false });
  return {
    caller,
    before: row,
    after: { ...into(row, t), queue_position: caller.now },
    action: 'Fields changed',
    details: { reason: 'the required fields changed: every required field holds a value' },
  };
}

// ---- people -----------------------------------------------------------------------------------

/** What a person does to a task. `comment` is appended as a comment and kept in the history row. */
export type PersonAction =
  | { action: 'move'; queue: Queue; error?: boolean; comment?: string | null }
  | { action: 'edit'; data?: Record<string, unknown>; urgent?: boolean; comment?: string | null }
  | { action: 'comment'; text: string }
  | { action: 'approve'; comment?: string | null }
  | { action: 'reject'; comment?: string | null }
  | { action: 'clearError'; comment?: string | null }
  | { action: 'setUrgent'; urgent: boolean; comment?: string | null }
  | { action: 'unlock'; comment?: string | null }
  | { action: 'reopen'; queue: 'Ready' | 'Manual'; comment?: string | null }
  | { action: 'delete'; comment?: string | null };

/** The history action written for each person action (task_history.action). */
export const HISTORY_ACTION: Record<PersonAction['action'], string> = {
  move: 'Moved',
  edit: 'Updated',
  comment: 'Commented',
  approve: 'Approved',
  reject: 'Rejected',
  clearError: 'Error cleared',
  setUrgent: 'Urgent changed',
  unlock: 'Unlocked',
  reopen: 'Reopened',
  delete: 'Deleted',
};

export function requirePerson(caller: Caller): void {
  if (caller.actor.type !== 'user') throw new Error('people.ts: the caller must be a person');
}

const liveLease = (row: TaskRow, now: Date) => row.locked_until !== null && row.locked_until > now;

/** Refuses when someone other than the caller holds a live lease on the task. */
function refuseIfLocked(row: TaskRow, caller: Caller): void {
  if (!liveLease(row, caller.now)) return;
  if (row.locked_by_user_id !== null && row.locked_by_user_id === callerUserId(caller)) return;
  const who = row.locked_by_mate_id !== null ? `a Mate (${row.locked_by_mate_id})` : `another person (${row.locked_by_user_id})`;
  throw new Refusal('task_locked', `Task ${row.id} is locked by ${who} until ${row.locked_until!.toISOString()}; unlock it first`, [], {
    lockedBy: row.locked_by_mate_id !== null ? { type: 'mate', id: row.locked_by_mate_id } : { type: 'user', id: row.locked_by_user_id },
  });
}

function readComment(value: unknown, key = 'comment'): string | null {
  if (value === undefined || value === null || value === '') return null;
  const s = toText(value);
  if (s === undefined || typeof value !== 'string')
    throw new Refusal('invalid_field', `"${key}" must be a text`, [
      { field: key, code: 'invalid_field', message: `"${key}" must be a text` },
    ]);
  return s;
}

function refuseTransition(row: TaskRow, what: string): never {
  const state = row.queue === 'Manual' && row.error ? 'Manual with the Error flag' : row.queue;
  throw new Refusal('invalid_transition', `Task ${row.id} is in ${state}: ${what}`, [], { queue: row.queue, error: row.error });
}

function invalidQueue(key: string, value: unknown, allowed: readonly string[]): Refusal {
  const message = `"${key}" must be one of ${allowed.join(', ')}`;
  return new Refusal('invalid_field', message, [{ field: key, value, code: 'invalid_field', message }]);
}

/**
 * One person's action on one task read FOR UPDATE: the change to write, or a Refusal (thrown)
 * when the input or the task's state does not allow it (docs/state-machine.md §3). `proc` is the
 * task's process. Locks: see people.ts.
 */
export function personAction(row: TaskRow, proc: ProcessDef, input: PersonAction, caller: Caller): TaskChange {
  requirePerson(caller);
  const base = { caller, before: row, action: HISTORY_ACTION[input.action], clearsFailure: false };
  const comment = 'comment' in input ? readComment(input.comment) : null;
  switch (input.action) {
    case 'move': {
      if (!QUEUES.includes(input.queue)) throw invalidQueue('queue', input.queue, QUEUES);
      const wantError = input.error === true;
      if (wantError && input.queue !== 'Manual') {
        const message = 'The Error flag can only be set on a task moved to Manual';
        throw new Refusal('invalid_field', message, [{ field: 'error', value: true, code: 'invalid_field', message }]);
      }
      refuseIfLocked(row, caller);
      if (row.queue === input.queue && row.error === wantError) refuseTransition(row, 'it is there already');
      const t = transition('move', { fromError: row.error, targetError: wantError });
      const after = arriving(row, into(released(row), t, input.queue), caller.now);
      return {
        ...base,
        after,
        comment,
        details: { to: after.queue, ...(row.error && !t.to.error ? { errorResolved: true, note: t.to.note } : {}) },
      };
    }
    case 'edit': {
      const data = input.data ?? {};
      if (typeof data !== 'object' || data === null || Array.isArray(data)) {
        throw new Refusal('invalid_field', '"data" must be an object', [
          { field: 'data', code: 'invalid_field', message: '"data" must be an object' },
        ]);
      }
      const editsData = Object.keys(data).length > 0;
      if (row.queue === 'Solved') throw new Refusal('task_solved', `Task ${row.id} is solved; reopen it before editing`);
      if (editsData) refuseIfLocked(row, caller);
      const r = validateTaskData({
        fields: proc.fields,
        body: data,
        mode: 'update',
        timeZone: caller.timeZone,
        numberFormat: caller.numberFormat,
        current: row.data,
      });
      if (!r.ok) throw problemsRefusal(r.problems.map((p) => ({ ...p, field: p.field === undefined ? undefined : `data.${p.field}` })));
      const text = comment ?? r.reserved.comment ?? null;
      const fieldNames = Object.keys(r.values);
      if (fieldNames.length === 0 && input.urgent === undefined && text === null) {
        throw new Refusal('invalid_body', 'Nothing to change: give data, urgent or a comment');
      }
      const merged = { ...row.data, ...r.values };
      for (const [k, v] of Object.entries(r.values)) if (v === null) delete merged[k];
      const t = transition('edit', { requiredMissing: row.queue === 'NeedsData' ? r.missingRequired.length > 0 : undefined });
      const urgent = input.urgent === undefined ? row.urgent : input.urgent;
      const after = arriving(row, { ...into(row, t), data: merged, unique_key: r.uniqueKey, urgent }, caller.now);
      return {
        ...base,
        after,
        comment: text,
        details: {
          fields: fieldNames,
          ...(input.urgent !== undefined ? { urgent } : {}),
          ...(r.missingRequired.length ? { missingRequired: r.missingRequired } : {}),
        },
      };
    }
    case 'comment': {
      const text = readComment(input.text, 'text');
      if (text === null || text.trim() === '') {
        const message = '"text" must be a non-empty text';
        throw new Refusal('invalid_field', message, [{ field: 'text', code: 'invalid_field', message }]);
      }
      return { ...base, after: into(row, transition('comment', {})), comment: text };
    }
    case 'setUrgent': {
      if (typeof input.urgent !== 'boolean') {
        const message = '"urgent" must be true or false';
        throw new Refusal('invalid_field', message, [
          { field: 'urgent', value: (input as { urgent: unknown }).urgent, code: 'invalid_field', message },
        ]);
      }
      const after = { ...into(row, transition('setUrgent', {})), urgent: input.urgent };
      return { ...base, after, comment, details: { urgent: input.urgent } };
    }
    case 'approve':
    case 'reject': {
      refuseIfLocked(row, caller);
      if (row.queue !== 'NeedsApproval') refuseTransition(row, `only a task in NeedsApproval can be ${input.action}d`);
      const missing = findMissingRequired(proc.fields, row.data);
      const t = transition(input.action, { requiredMissing: missing.length > 0 });
      const after = arriving(row, into(released(row), t), caller.now);
      return { ...base, after, comment, details: missing.length && input.action === 'approve' ? { missingRequired: missing } : null };
    }
    case 'clearError': {
      refuseIfLocked(row, caller);
      if (!row.error) refuseTransition(row, 'it has no Error flag');
      const t = transition('clearError', {});
      return { ...base, after: into(released(row), t), comment, details: { errorResolved: true, note: t.to.note } };
    }
    case 'unlock': {
      if (row.locked_until === null) refuseTransition(row, 'it is not locked');
      const after = into(released(row), transition('unlock', {}));
      const holder =
        row.locked_by_mate_id !== null ? { type: 'mate', id: row.locked_by_mate_id } : { type: 'user', id: row.locked_by_user_id };
      return { ...base, after, comment, details: { formerHolder: holder, lockedUntil: row.locked_until!.toISOString() } };
    }
    case 'reopen': {
      if (input.queue !== 'Ready' && input.queue !== 'Manual') throw invalidQueue('queue', input.queue, ['Ready', 'Manual']);
      if (row.queue !== 'Solved') refuseTransition(row, 'only a Solved task can be reopened');
      const after = arriving(row, into(released(row), transition('reopen', {}), input.queue), caller.now);
      return { ...base, after, comment, details: { to: input.queue } };
    }
    case 'delete': {
      refuseIfLocked(row, caller);
      const after = { ...into(released(row), transition('delete', {})), deleted_at: caller.now };
      return { ...base, after, comment };
    }
    default: {
      const never: never = input;
      throw new Error(`unknown person action ${JSON.stringify(never)}`);
    }
  }
}
