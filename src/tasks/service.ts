/**
 * Task operations of Mates (product §5): create, take, hand back, update, extend a lock, and the
 * sweeper that recovers expired leases. Each operation is one transaction in which the task
 * change, its history row, its comment, its KPI event and its run counters commit together.
 */
import { sql, type Kysely } from 'kysely';
import { executeWrites } from '../db/bulk.js';
import type { Database } from '../db/types.js';
import { AppError, type ErrorCode, type FieldProblem } from '../lib/errors.js';
import { clearFailuresWrite, type ProcessDef } from '../processes/store.js';
import { closedReason, type DummyReason } from '../processes/gate.js';
import { validateTaskData } from '../processes/task-data.js';
import { parseDateTimeInput } from '../lib/time.js';
import { historyWrite, commentsWrite, type Actor, type HistoryRow, type CommentRow, SYSTEM_ACTOR } from '../history/store.js';
import { computeKpi, kpiEventsWrite, type KpiEventRow, type KpiOverrides } from '../kpis/rules.js';
import { openOrResumeRun, closeOpenRun, closeIdleRun, runCountsWrite } from '../runs/store.js';
import { transition, type HandBackAction, type Queue } from './state-machine.js';
import {
  insertTasks, findUniqueKeyOwners, takeTasks, compareTakeOrder, selectTasksForUpdate, taskChangesWrite, toChange,
  pickExpiredLocks, type TaskRow, type NewTask, type TaskChange, type LockedTaskRow, type TakeSlot,
} from './store.js';

/** Who is calling, and when. */
export interface MateCall {
  tenantId: number;
  timeZone: string;
  mateId: number;
  mateName: string;
  requestId: string | null;
  now: Date;
}

export function mateActor(call: MateCall): Actor {
  return { type: 'mate', id: call.mateId, name: call.mateName };
}

/** A refusal that changes nothing: answered 200 with succeeded false on the Mate API. */
export class Refusal extends Error {
  constructor(readonly code: ErrorCode, message: string, readonly extra: Record<string, unknown> = {}, readonly problems: FieldProblem[] = []) {
    super(message);
  }
}

const MAX_ACTIVATION_AHEAD_MS = 366 * 24 * 3600 * 1000;

// ---------------------------------------------------------------------------------------------
// Creation

export interface PreparedTask {
  task: NewTask;
  comment: string | null;
  missingRequired: string[];
}

/** Validates raw task data items (values first: 400s before any state is looked at). */
export function prepareTasks(call: MateCall, proc: ProcessDef, items: unknown[], batch: boolean): PreparedTask[] {
  const problems: FieldProblem[] = [];
  const prepared: PreparedTask[] = [];
  items.forEach((item, index) => {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      problems.push({ ...(batch ? { index } : {}), code: 'invalid_body', message: batch ? `Item ${index} must be an object` : 'The body must be a JSON object' });
      return;
    }
    const r = validateTaskData({ fields: proc.fields, body: item as Record<string, unknown>, mode: 'create', timeZone: call.timeZone });
    if (!r.ok) {
      for (const p of r.problems) problems.push(batch ? { ...p, index, message: `Item ${index}: ${p.message}` } : p);
      return;
    }
    const { values, reserved, missingRequired, uniqueKey } = r;
    const activationDate = reserved.activationDate ?? new Date(call.now.getTime() + proc.defaultActivationOffsetSeconds * 1000);
    let deadline: Date | null = null;
    if (proc.deadlinesEnabled) {
      deadline = reserved.deadline ?? (proc.defaultDeadlineSeconds ? new Date(call.now.getTime() + proc.defaultDeadlineSeconds * 1000) : null);
    }
    const t = transition('create', { source: 'mate', requireApproval: proc.requireApproval, requiredMissing: missingRequired.length > 0 });
    prepared.push({
      task: {
        processId: proc.id,
        queue: t.to.queue as Queue,
        data: values,
        uniqueKey,
        activationDate,
        deadline,
        urgent: reserved.urgent ?? false,
        createdByType: 'mate',
        createdById: call.mateId,
      },
      comment: reserved.comment ?? null,
      missingRequired,
    });
  });
  if (problems.length) {
    const first = problems[0];
    throw new AppError(first.code, first.message, problems.slice(0, 100));
  }
  return prepared;
}

/** Refuses a batch whose unique key values collide with each other or with open tasks. */
async function checkUniqueKeys(db: Kysely<any>, call: MateCall, proc: ProcessDef, tasks: PreparedTask[], batch: boolean): Promise<void> {
  const seen = new Map<string, number>();
  tasks.forEach((p, index) => {
    const k = p.task.uniqueKey;
    if (k === null) return;
    if (seen.has(k)) throw new Refusal('duplicate_key', `Item ${index} has the same key as item ${seen.get(k)}: ${k}`, { index, existingTaskId: null });
    seen.set(k, index);
  });
  const owners = await findUniqueKeyOwners(db, call.tenantId, proc.id, [...seen.keys()]);
  for (const [k, index] of seen) {
    const existing = owners.get(k);
    if (existing !== undefined) {
      throw new Refusal('duplicate_key', `${batch ? `Item ${index}: a` : 'A'} task with key ${k} already exists (task ${existing})`, { existingTaskId: existing, ...(batch ? { index } : {}) });
    }
  }
}

function creationRows(call: MateCall, rows: TaskRow[], prepared: PreparedTask[], action: string): { history: HistoryRow[]; comments: CommentRow[] } {
  const actor = mateActor(call);
  const history: HistoryRow[] = [];
  const comments: CommentRow[] = [];
  rows.forEach((row, i) => {
    const comment = prepared[i].comment;
    history.push({ tenantId: call.tenantId, taskId: row.id, processId: row.process_id, at: call.now, actor, action, fromQueue: null, toQueue: row.queue, error: false, reason: null, comment, retryCount: 0, requestId: call.requestId, details: prepared[i].missingRequired.length ? { missingRequired: prepared[i].missingRequired } : null });
    if (comment) comments.push({ tenantId: call.tenantId, taskId: row.id, actor, body: comment, at: call.now });
  });
  return { history, comments };
}

function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: string })?.code === '23505';
}

/**
 * Creates tasks all-or-nothing inside `trx` (the caller's transaction, so that an idempotency
 * record can commit with them).
 */
export async function createTasksIn(trx: Kysely<any>, call: MateCall, proc: ProcessDef, prepared: PreparedTask[], batch: boolean): Promise<TaskRow[]> {
  if (!proc.tasksEnabled) throw new Refusal('tasks_disabled', `Process ${proc.processKey} has no tasks`);
  await checkUniqueKeys(trx, call, proc, prepared, batch);
  let rows: TaskRow[];
  try {
    await sql`SAVEPOINT create_tasks`.execute(trx);
    rows = await insertTasks(trx, call.tenantId, prepared.map((p) => p.task), call.now);
    await sql`RELEASE SAVEPOINT create_tasks`.execute(trx);
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    // a concurrent create took the key between our check and our insert
    await sql`ROLLBACK TO SAVEPOINT create_tasks`.execute(trx);
    await checkUniqueKeys(trx, call, proc, prepared, batch);
    throw err;
  }
  const { history, comments } = creationRows(call, rows, prepared, 'Created');
  await executeWrites(trx, [historyWrite(history), commentsWrite(comments)]);
  return rows;
}

/** CreateAndTakeTask: create and lock in one transaction, only when the task would land in Ready. */
export async function createAndTakeIn(
  trx: Kysely<any>, call: MateCall, proc: ProcessDef, prepared: PreparedTask,
): Promise<{ task: TaskRow; runId: number } | { dummy: DummyReason | 'approval_required' | 'required_field_missing' | 'duplicate_key'; message: string; problems?: FieldProblem[]; extra?: Record<string, unknown> }> {
  const closed = await closedReason(trx, proc, call.now, call.timeZone);
  if (closed) return { dummy: closed.code, message: `${closed.message}; no task was created` };
  if (prepared.task.queue === 'NeedsApproval') return { dummy: 'approval_required', message: `Tasks of process ${proc.processKey} need approval; no task was created` };
  if (prepared.task.queue === 'NeedsData') {
    const problems: FieldProblem[] = prepared.missingRequired.map((f) => ({ field: f, code: 'required_field_missing', message: `Required field ${f} is missing` }));
    return { dummy: 'required_field_missing', message: `Required field ${prepared.missingRequired[0]} is missing; no task was created`, problems };
  }
  try {
    await checkUniqueKeys(trx, call, proc, [prepared], false);
  } catch (err) {
    if (err instanceof Refusal) return { dummy: 'duplicate_key', message: err.message, extra: err.extra };
    throw err;
  }
  const runId = await openOrResumeRun(trx, call.tenantId, proc.id, [call.mateId], call.now, proc.runTimeoutSeconds);
  const until = new Date(call.now.getTime() + proc.lockTimeoutSeconds * 1000);
  const [row] = await insertTasks(trx, call.tenantId, [{ ...prepared.task, lock: { mateId: call.mateId, until, runId } }], call.now);
  const { history, comments } = creationRows(call, [row], [prepared], 'Created and taken');
  await executeWrites(trx, [historyWrite(history), commentsWrite(comments), proc.failureAt ? clearFailuresWrite(proc.tenantId, [proc.id]) : null]);
  return { task: row, runId };
}

// ---------------------------------------------------------------------------------------------
// Taking

export interface TakeRequest {
  call: MateCall;
  count: number;
}

export type TakeResult = { tasks: TaskRow[]; runId: number } | { dummy: DummyReason; message: string };

/** When this server process last resumed each process's run (by store), for takeForCallers. */
const runsTouchedByStore = new WeakMap<object, Map<string, number>>();
function runsTouched(db: Kysely<Database>): Map<string, number> {
  let m = runsTouchedByStore.get(db);
  if (!m) runsTouchedByStore.set(db, (m = new Map()));
  return m;
}

/**
 * Serves any number of take requests on one process with one statement (takeTasks): one SKIP
 * LOCKED pick for all of them, the run opened or resumed, every lock and history row written.
 * Requests are served in order; each caller's tasks come back in take order.
 */
export async function takeForCallers(db: Kysely<Database>, proc: ProcessDef, requests: TakeRequest[]): Promise<TakeResult[]> {
  const { now, timeZone } = requests[0].call;
  await clearFailureIn(db, proc);
  const closed = await closedReason(db, proc, now, timeZone);
  if (closed) return requests.map(() => ({ dummy: closed.code, message: closed.message }));
  // an open run idle past runTimeoutSeconds ends here, so that this take starts a new one; when
  // this server process itself resumed the process's run within that time, no open run can be
  // idle that long (there is one open run at most), and the statement is saved
  const touched = runsTouched(db);
  const key = `${proc.tenantId}:${proc.id}`;
  const last = touched.get(key);
  if (last === undefined || now.getTime() - last >= proc.runTimeoutSeconds * 1000) {
    await closeIdleRun(db, proc.tenantId, proc.id, now, proc.runTimeoutSeconds);
  }
  transition('take', {});
  const slots: TakeSlot[] = requests.flatMap((r) => Array.from({ length: r.count }, () => ({ mateId: r.call.mateId, mateName: r.call.mateName, requestId: r.call.requestId })));
  const until = new Date(now.getTime() + proc.lockTimeoutSeconds * 1000);
  const rows = await takeTasks(db, proc.tenantId, proc.id, proc.deadlinesEnabled, now, until, slots);
  if (rows.length) touched.set(key, now.getTime());
  const bySlot = new Map(rows.map((r) => [r.slot, r]));
  const order = compareTakeOrder(proc.deadlinesEnabled);
  let slot = 0;
  const results: TakeResult[] = requests.map((r) => {
    const mine: TaskRow[] = [];
    for (let i = 0; i < r.count; i++) {
      const row = bySlot.get(++slot);
      if (row) mine.push(row);
    }
    return mine.length ? { tasks: mine.sort(order), runId: mine[0].run_id! } : { dummy: 'queue_empty' as const, message: 'No task is ready' };
  });
  // a caller left without a task: the queue is empty, so the run closes (as it would had the
  // callers come one by one)
  if (results.some((r) => 'dummy' in r)) await closeOpenRun(db, proc.tenantId, proc.id, now, 'emptyQueue');
  return results;
}

// ---------------------------------------------------------------------------------------------
// Handing back

export interface HandBackItem {
  call: MateCall;
  taskId: number;
  action: HandBackAction;
  reason: string | null;
  comment: string | null;
  overrides: KpiOverrides;
  /** Retry only: the raw value sent; unreadable or > 366 days ahead → invalid_activation_date */
  activationDate: unknown;
}

export type HandBackResult =
  | { ok: true; taskId: number; queue: Queue; error: boolean; message: string }
  | { ok: false; taskId: number; code: ErrorCode; message: string };

/** The task refusals of mate-api §5, in their precedence. */
function refuseFor(row: LockedTaskRow | undefined, mateId: number, now: Date, taskId: number): { code: ErrorCode; message: string } | null {
  if (!row) return { code: 'task_not_found', message: `Task ${taskId} was not found` };
  if (row.queue === 'Solved') return { code: 'task_solved', message: `Task ${taskId} is solved and read-only for Mates` };
  const heldByMe = row.locked_by_mate_id === mateId;
  if ((heldByMe && row.locked_until !== null && row.locked_until <= now) || (!heldByMe && row.expired_lock_mate_id === mateId)) {
    return { code: 'lock_expired', message: `Your lock on task ${taskId} expired` };
  }
  if (!heldByMe) return { code: 'task_not_locked_by_you', message: `Task ${taskId} is not locked by you` };
  return null;
}

const PAST_TENSE: Record<HandBackAction, string> = { Solved: 'solved', Manual: 'sent to Manual', Error: 'sent to Manual as an Error', Retry: 'sent back to Ready for a retry' };

/**
 * Hands back any number of tasks in one transaction, items in order; an item that is refused
 * changes nothing. Every change, history row, comment, KPI event and run count commits together.
 */
export async function handBack(db: Kysely<Database>, items: HandBackItem[]): Promise<HandBackResult[]> {
  if (items.length === 0) return [];
  const tenantId = items[0].call.tenantId;
  return db.transaction().execute(async (trx) => {
    const ids = [...new Set(items.map((i) => i.taskId).filter((id) => id > 0 && Number.isSafeInteger(id)))];
    const rows = await selectTasksForUpdate(trx, tenantId, ids);
    const changes = new Map<number, TaskChange>();
    const history: HistoryRow[] = [];
    const comments: CommentRow[] = [];
    const kpis: KpiEventRow[] = [];
    const runCounts = new Map<number, { Solved: number; Manual: number; Error: number; Retry: number }>();
    const failureProcesses = new Set<number>();
    const results: HandBackResult[] = [];
    for (const item of items) {
      const { call } = item;
      const row = rows.get(item.taskId);
      const refusal = refuseFor(row, call.mateId, call.now, item.taskId);
      if (refusal || !row) {
        results.push({ ok: false, taskId: item.taskId, ...refusal! });
        continue;
      }
      let queuePosition = call.now;
      let activationDate = row.activation_date;
      if (item.action === 'Retry' && item.activationDate !== null && item.activationDate !== undefined && item.activationDate !== '') {
        const at = typeof item.activationDate === 'string' ? parseDateTimeInput(item.activationDate, call.timeZone) : null;
        if (!at || at.getTime() > call.now.getTime() + MAX_ACTIVATION_AHEAD_MS) {
          results.push({ ok: false, taskId: item.taskId, code: 'invalid_activation_date', message: `activationDate ${JSON.stringify(item.activationDate)} is not a date within 366 days; task ${item.taskId} stays locked by you` });
          continue;
        }
        activationDate = at < call.now ? call.now : at;
        queuePosition = activationDate;
      }
      const t = transition(item.action, { retryAllowed: row.retry_allowed, retryCount: row.retry_count, maxRetries: row.max_retries });
      const queue = t.to.queue as Queue;
      const retryCount = row.retry_count + (t.to.retried ? 1 : 0);
      const change: TaskChange = {
        ...toChange(row),
        queue,
        error: t.to.error,
        reason: item.reason,
        retryCount,
        activationDate: t.to.retried ? activationDate : row.activation_date,
        queuePosition: t.to.retried ? queuePosition : row.queue_position,
        lockedByMateId: null,
        lockedUntil: null,
        runId: null,
        expiredLockMateId: null,
      };
      changes.set(row.id, change);
      const actor = mateActor(call);
      history.push({
        tenantId, taskId: row.id, processId: row.process_id, at: call.now, actor, action: item.action,
        fromQueue: row.queue, toQueue: queue, error: t.to.error, reason: item.reason, comment: item.comment,
        retryCount, requestId: call.requestId, details: t.to.note ? { note: t.to.note } : null,
      });
      if (item.comment) comments.push({ tenantId, taskId: row.id, actor, body: item.comment, at: call.now });
      const outcome = t.to.kpi!;
      const { entries, secondsSaved } = computeKpi(row.kpi, outcome, item.overrides);
      kpis.push({ tenantId, processId: row.process_id, taskId: row.id, runId: row.run_id, mateId: call.mateId, at: call.now, outcome, entries, secondsSaved });
      if (row.run_id) {
        const c = runCounts.get(row.run_id) ?? { Solved: 0, Manual: 0, Error: 0, Retry: 0 };
        c[outcome] += 1;
        runCounts.set(row.run_id, c);
      }
      if (row.failure_at) failureProcesses.add(row.process_id);
      // later items in this batch see the new state
      Object.assign(row, { queue, error: t.to.error, locked_by_mate_id: null, locked_until: null, retry_count: retryCount, expired_lock_mate_id: null });
      const message = t.to.note ? `Task ${row.id}: ${t.to.note}` : `Task ${row.id} ${PAST_TENSE[item.action]}`;
      results.push({ ok: true, taskId: row.id, queue, error: t.to.error, message });
    }
    const now = items[0].call.now;
    // every write of the batch in one statement
    await executeWrites(trx, [
      taskChangesWrite(tenantId, [...changes.values()], now),
      historyWrite(history),
      commentsWrite(comments),
      kpiEventsWrite(kpis),
      runCountsWrite(tenantId, runCounts, now),
      clearFailuresWrite(tenantId, [...failureProcesses]),
    ]);
    return results;
  });
}

// ---------------------------------------------------------------------------------------------
// UpdateTask and ExtendLock

export type TaskActionResult = { ok: true; message: string; row: TaskRow } | { ok: false; code: ErrorCode; message: string; extra?: Record<string, unknown> };

/** Loads the process of a task for UpdateTask's field validation. */
export async function updateTask(
  db: Kysely<Database>, call: MateCall, taskId: number, body: Record<string, unknown>,
  loadProcess: (trx: Kysely<any>, processId: number) => Promise<ProcessDef>,
): Promise<TaskActionResult> {
  return db.transaction().execute(async (trx) => {
    const rows = await selectTasksForUpdate(trx, call.tenantId, taskId > 0 && Number.isSafeInteger(taskId) ? [taskId] : []);
    const row = rows.get(taskId);
    const refusal = refuseFor(row, call.mateId, call.now, taskId);
    const heldByMe = row?.locked_by_mate_id === call.mateId;
    const freeEditable = row && row.locked_until === null && (row.queue === 'Manual' || row.queue === 'NeedsData');
    if (!row || refusal?.code === 'task_not_found' || refusal?.code === 'task_solved' || refusal?.code === 'lock_expired') return { ok: false, ...refusal! };
    if (!heldByMe && !freeEditable) return { ok: false, code: 'task_not_locked_by_you', message: `Task ${taskId} is not locked by you` };
    const proc = await loadProcess(trx, row.process_id);
    const r = validateTaskData({ fields: proc.fields, body, mode: 'update', timeZone: call.timeZone, current: row.data });
    if (!r.ok) {
      const first = r.problems[0];
      throw new AppError(first.code, first.message, r.problems.slice(0, 100));
    }
    const data = { ...row.data, ...r.values };
    for (const [k, v] of Object.entries(r.values)) if (v === null) delete data[k];
    const uniqueKey = r.uniqueKey;
    if (uniqueKey !== null && uniqueKey !== row.unique_key) {
      const owners = await findUniqueKeyOwners(trx, call.tenantId, proc.id, [uniqueKey]);
      const owner = owners.get(uniqueKey);
      if (owner !== undefined && owner !== row.id) return { ok: false, code: 'duplicate_key', message: `A task with key ${uniqueKey} already exists (task ${owner})`, extra: { existingTaskId: owner } };
    }
    const t = transition('update', { requiredMissing: row.queue === 'NeedsData' ? r.missingRequired.length > 0 : undefined });
    const queue = t.to.queue === 'unchanged' ? row.queue : (t.to.queue as Queue);
    const lockedUntil = heldByMe ? new Date(Math.max(row.locked_until!.getTime(), call.now.getTime() + proc.lockTimeoutSeconds * 1000)) : row.locked_until;
    const comment = r.reserved.comment ?? null;
    const actor = mateActor(call);
    await executeWrites(trx, [
      taskChangesWrite(call.tenantId, [{ ...toChange(row), queue, data, uniqueKey, lockedUntil }], call.now),
      historyWrite([{
        tenantId: call.tenantId, taskId, processId: row.process_id, at: call.now, actor, action: 'Updated', fromQueue: row.queue, toQueue: queue,
        error: row.error, reason: row.reason, comment, retryCount: row.retry_count, requestId: call.requestId, details: { fields: Object.keys(r.values) },
      }]),
      comment ? commentsWrite([{ tenantId: call.tenantId, taskId, actor, body: comment, at: call.now }]) : null,
    ]);
    await clearFailureIn(trx, proc);
    const moved = queue !== row.queue ? `; it moved to ${queue}` : '';
    return { ok: true, message: `Task ${taskId} updated${moved}`, row: { ...row, queue, data, locked_until: lockedUntil } };
  });
}

export async function extendLock(db: Kysely<Database>, call: MateCall, taskId: number, seconds: number | null): Promise<TaskActionResult> {
  return db.transaction().execute(async (trx) => {
    const rows = await selectTasksForUpdate(trx, call.tenantId, taskId > 0 && Number.isSafeInteger(taskId) ? [taskId] : []);
    const row = rows.get(taskId);
    const refusal = refuseFor(row, call.mateId, call.now, taskId);
    if (refusal || !row) return { ok: false, ...refusal! };
    transition('extendLock', {});
    const lease = (seconds ?? row.lock_timeout_seconds) * 1000;
    const lockedUntil = new Date(Math.max(row.locked_until!.getTime(), call.now.getTime() + lease));
    await executeWrites(trx, [
      taskChangesWrite(call.tenantId, [{ ...toChange(row), lockedUntil }], call.now),
      historyWrite([{
        tenantId: call.tenantId, taskId, processId: row.process_id, at: call.now, actor: mateActor(call), action: 'Lock extended', fromQueue: row.queue,
        toQueue: row.queue, error: row.error, reason: row.reason, comment: null, retryCount: row.retry_count, requestId: call.requestId,
        details: { lockedUntil: lockedUntil.toISOString() },
      }]),
      row.failure_at ? clearFailuresWrite(call.tenantId, [row.process_id]) : null,
    ]);
    return { ok: true, message: `Lock on task ${taskId} extended`, row: { ...row, locked_until: lockedUntil } };
  });
}

// ---------------------------------------------------------------------------------------------
// The lock sweeper (product §5.5)

/**
 * Recovers expired Mate leases as a system Retry ("Lock expired"): to Ready at the bottom when
 * retry rules allow, else to Manual with Error. SKIP LOCKED lets sweepers in several server
 * processes share the work without recovering a task twice. Returns how many were recovered.
 */
export async function sweepExpiredLocks(db: Kysely<Database>, now: Date, limit = 500): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const expired = await pickExpiredLocks(trx, now, limit);
    const byTenant = new Map<number, number[]>();
    for (const e of expired) byTenant.set(e.tenant_id, [...(byTenant.get(e.tenant_id) ?? []), e.id]);
    for (const [tenantId, ids] of byTenant) {
      const rows = await selectTasksForUpdate(trx, tenantId, ids);
      const changes: TaskChange[] = [];
      const history: HistoryRow[] = [];
      for (const row of rows.values()) {
        const t = transition('lockExpired', { retryAllowed: row.retry_allowed, retryCount: row.retry_count, maxRetries: row.max_retries });
        const retryCount = row.retry_count + (t.to.retried ? 1 : 0);
        changes.push({
          ...toChange(row), queue: t.to.queue as Queue, error: t.to.error, reason: t.to.note ?? null, retryCount,
          queuePosition: t.to.retried ? now : row.queue_position, lockedByMateId: null, lockedUntil: null, runId: null,
          expiredLockMateId: row.locked_by_mate_id,
        });
        history.push({
          tenantId, taskId: row.id, processId: row.process_id, at: now, actor: SYSTEM_ACTOR, action: 'Lock expired', fromQueue: row.queue,
          toQueue: t.to.queue as Queue, error: t.to.error, reason: t.to.note ?? null, comment: null, retryCount, requestId: null,
          details: { formerHolderMateId: row.locked_by_mate_id, lockedUntil: row.locked_until?.toISOString() ?? null },
        });
      }
      await executeWrites(trx, [taskChangesWrite(tenantId, changes, now), historyWrite(history)]);
    }
    return expired.length;
  });
}

// ---------------------------------------------------------------------------------------------

/** Clears a process's Failure state (product §7) when its definition shows one. */
export async function clearFailureIn(db: Kysely<any>, proc: ProcessDef): Promise<void> {
  if (proc.failureAt) await executeWrites(db, [clearFailuresWrite(proc.tenantId, [proc.id])]);
}

