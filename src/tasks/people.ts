/**
 * People working tasks (docs/product.md §5.4, docs/product.md §5.6): move, edit, comment, approve, reject, clear
 * the Error flag, set urgent, unlock, reopen, soft delete. Each action on a task writes one history
 * row with the acting user, through the funnel (funnel.ts), in the caller's transaction; the
 * transitions are rows of the state-machine table (state-machine.ts).
 *
 * Locks: a task a Mate (or another person) holds with a live lease cannot be moved, edited,
 * approved, rejected, cleared, reopened or deleted: `task_locked` until someone unlocks it.
 * Comments and urgent are allowed on a locked task. An expired lease the sweeper has not yet
 * recovered does not block: the action releases it, and the former holder's hand-back is then
 * refused (`lock_expired`), as after `unlock`.
 *
 * Permissions (who may act, e.g. delete is admin only) are the HTTP layer's permission table;
 * these functions only require the caller to be a person.
 */
import type { Tx } from '../db/tx.js';
import { Refusal, problemsRefusal, refused, type Outcome } from '../lib/errors.js';
import { callerUserId, type Caller } from '../lib/caller.js';
import { toText } from '../lib/values.js';
import { findMissingRequired, validateTaskData } from '../processes/task-data.js';
import { loadProcessById, type ProcessDef } from '../processes/store.js';
import { applyChanges, type TaskChange } from './funnel.js';
import { createTasks, guardedWrite, prepareTasks } from './create.js';
import { transition, QUEUES, type Queue } from './state-machine.js';
import { findUniqueKeyOwners, selectTasksForUpdate, TASK_ROW_COLUMNS, type TaskRow } from './store.js';

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

const validId = (id: number) => Number.isSafeInteger(id) && id > 0;

function requirePerson(caller: Caller): void {
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

/** Ready from elsewhere: a task arriving in Ready goes to the bottom of the queue, like a Retry. */
function arriving(before: TaskRow, after: TaskRow, now: Date): TaskRow {
  return after.queue === 'Ready' && before.queue !== 'Ready' ? { ...after, queue_position: now } : after;
}

/**
 * Decides one person's action on one task read FOR UPDATE: the change to write, or a Refusal
 * (thrown). `proc` is the task's process.
 */
export function planPersonAction(caller: Caller, row: TaskRow, proc: ProcessDef, input: PersonAction): TaskChange {
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
      const queue = t.to.queue === 'requested' ? input.queue : (t.to.queue as Queue);
      const after = arriving(row, { ...released(row), queue, error: t.to.error }, caller.now);
      return {
        ...base,
        after,
        comment,
        details: { to: queue, ...(row.error && !t.to.error ? { errorResolved: true, note: t.to.note } : {}) },
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
      const r = validateTaskData({ fields: proc.fields, body: data, mode: 'update', timeZone: caller.timeZone, current: row.data });
      if (!r.ok) throw problemsRefusal(r.problems.map((p) => ({ ...p, field: p.field === undefined ? undefined : `data.${p.field}` })));
      const text = comment ?? r.reserved.comment ?? null;
      const fieldNames = Object.keys(r.values);
      if (fieldNames.length === 0 && input.urgent === undefined && text === null) {
        throw new Refusal('invalid_body', 'Nothing to change: give data, urgent or a comment');
      }
      const merged = { ...row.data, ...r.values };
      for (const [k, v] of Object.entries(r.values)) if (v === null) delete merged[k];
      const t = transition('edit', { requiredMissing: row.queue === 'NeedsData' ? r.missingRequired.length > 0 : undefined });
      const queue = t.to.queue === 'unchanged' ? row.queue : (t.to.queue as Queue);
      const urgent = input.urgent === undefined ? row.urgent : input.urgent;
      const after = arriving(row, { ...row, queue, data: merged, unique_key: r.uniqueKey, urgent }, caller.now);
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
      transition('comment', {});
      return { ...base, after: row, comment: text };
    }
    case 'setUrgent': {
      if (typeof input.urgent !== 'boolean') {
        const message = '"urgent" must be true or false';
        throw new Refusal('invalid_field', message, [
          { field: 'urgent', value: (input as { urgent: unknown }).urgent, code: 'invalid_field', message },
        ]);
      }
      transition('setUrgent', {});
      return { ...base, after: { ...row, urgent: input.urgent }, comment, details: { urgent: input.urgent } };
    }
    case 'approve':
    case 'reject': {
      refuseIfLocked(row, caller);
      if (row.queue !== 'NeedsApproval') refuseTransition(row, `only a task in NeedsApproval can be ${input.action}d`);
      const missing = findMissingRequired(proc.fields, row.data);
      const t = transition(input.action, { requiredMissing: missing.length > 0 });
      const after = arriving(row, { ...released(row), queue: t.to.queue as Queue, error: false }, caller.now);
      return { ...base, after, comment, details: missing.length && input.action === 'approve' ? { missingRequired: missing } : null };
    }
    case 'clearError': {
      refuseIfLocked(row, caller);
      if (!row.error) refuseTransition(row, 'it has no Error flag');
      const t = transition('clearError', {});
      return { ...base, after: { ...released(row), error: false }, comment, details: { errorResolved: true, note: t.to.note } };
    }
    case 'unlock': {
      if (row.locked_until === null) refuseTransition(row, 'it is not locked');
      transition('unlock', {});
      const holder =
        row.locked_by_mate_id !== null ? { type: 'mate', id: row.locked_by_mate_id } : { type: 'user', id: row.locked_by_user_id };
      return { ...base, after: released(row), comment, details: { formerHolder: holder, lockedUntil: row.locked_until!.toISOString() } };
    }
    case 'reopen': {
      if (input.queue !== 'Ready' && input.queue !== 'Manual') throw invalidQueue('queue', input.queue, ['Ready', 'Manual']);
      if (row.queue !== 'Solved') refuseTransition(row, 'only a Solved task can be reopened');
      transition('reopen', {});
      const after = arriving(row, { ...released(row), queue: input.queue, error: false }, caller.now);
      return { ...base, after, comment, details: { to: input.queue } };
    }
    case 'delete': {
      refuseIfLocked(row, caller);
      transition('delete', {});
      return { ...base, after: { ...released(row), deleted_at: caller.now }, comment };
    }
    default: {
      const never: never = input;
      throw new Error(`unknown person action ${JSON.stringify(never)}`);
    }
  }
}

/** Does this change put a unique key value into play (it leaves Solved, or its key changes)? */
function claimsKey(c: TaskChange): boolean {
  const a = c.after;
  const b = c.before!;
  if (a.unique_key === null || a.queue === 'Solved' || a.deleted_at !== null) return false;
  return b.queue === 'Solved' || a.unique_key !== b.unique_key;
}

/** Changes whose key is held by another open task (or by an earlier change of the batch): task id → holder. */
async function keyConflicts(tx: Tx, tenantId: number, changes: TaskChange[]): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  const byProcess = new Map<number, TaskChange[]>();
  for (const c of changes.filter(claimsKey)) {
    const list = byProcess.get(c.after.process_id) ?? [];
    list.push(c);
    byProcess.set(c.after.process_id, list);
  }
  for (const [processId, list] of byProcess) {
    const owners = await findUniqueKeyOwners(tx.db, tenantId, processId, [...new Set(list.map((c) => c.after.unique_key!))]);
    const claimed = new Map<string, number>();
    for (const c of list) {
      const k = c.after.unique_key!;
      const owner = owners.get(k);
      if (owner !== undefined && owner !== c.after.id) out.set(c.after.id, owner);
      else if (claimed.has(k)) out.set(c.after.id, claimed.get(k)!);
      else claimed.set(k, c.after.id);
    }
  }
  return out;
}

function duplicateKey(c: TaskChange, owner: number): Refusal {
  return new Refusal('duplicate_key', `A task with key ${c.after.unique_key} already exists (task ${owner})`, [], {
    existingTaskId: owner,
  });
}

/**
 * One person's action on any number of tasks in `tx`: reads and locks the tasks, plans each one
 * (refusals are per task and change nothing), checks unique keys, and writes every change with one
 * funnel statement. `processId`: tasks of another process are answered as not found (bulk).
 * `loadProcess` gives a task's process (called once per process).
 */
export async function actOnTasks(
  tx: Tx,
  caller: Caller,
  ids: readonly number[],
  input: PersonAction,
  opts: { processId?: number; loadProcess?: (processId: number) => Promise<ProcessDef | null> } = {},
): Promise<Map<number, Outcome<TaskRow>>> {
  requirePerson(caller);
  const wanted = [...new Set(ids)];
  const rows = await selectTasksForUpdate(tx.db, caller.tenantId, wanted.filter(validId));
  const procs = new Map<number, ProcessDef | null>();
  const load = opts.loadProcess ?? ((id: number) => loadProcessById(tx.db, caller.tenantId, id));
  const outcomes = new Map<number, Outcome<TaskRow>>();
  const changes: TaskChange[] = [];
  for (const id of wanted) {
    const row = rows.get(id);
    if (!row || (opts.processId !== undefined && row.process_id !== opts.processId)) {
      outcomes.set(id, refused(new Refusal('task_not_found', `Task ${id} was not found`)));
      continue;
    }
    if (!procs.has(row.process_id)) procs.set(row.process_id, await load(row.process_id));
    const proc = procs.get(row.process_id)!;
    try {
      const change = planPersonAction(caller, stripProcess(row), proc, input);
      changes.push(change);
      outcomes.set(id, { ok: true, value: change.after });
    } catch (err) {
      if (!(err instanceof Refusal)) throw err;
      outcomes.set(id, refused(err));
    }
  }
  const conflicts = await keyConflicts(tx, caller.tenantId, changes);
  const writes = changes.filter((c) => {
    const owner = conflicts.get(c.after.id);
    if (owner !== undefined) outcomes.set(c.after.id, refused(duplicateKey(c, owner)));
    return owner === undefined;
  });
  // a key taken by a concurrent transaction between the check and the write: refused as duplicate_key
  await guardedWrite(
    tx,
    () => applyChanges(tx, writes),
    async () => {
      const again = await keyConflicts(tx, caller.tenantId, writes);
      for (const c of writes) if (again.has(c.after.id)) throw duplicateKey(c, again.get(c.after.id)!);
    },
  );
  return outcomes;
}

/** selectTasksForUpdate answers process settings beside the task columns; the change keeps the task's. */
function stripProcess(row: TaskRow): TaskRow {
  return Object.fromEntries(TASK_ROW_COLUMNS.map((c) => [c, row[c]])) as unknown as TaskRow;
}

/** One person's action on one task, in `tx`: refuses (throws) or answers the task's row as written. */
export async function actOnTask(tx: Tx, caller: Caller, taskId: number, input: PersonAction): Promise<TaskRow> {
  const outcome = (await actOnTasks(tx, caller, [taskId], input)).get(taskId)!;
  if (!outcome.ok) throw outcome.refusal;
  return outcome.value;
}

export const moveTask = (tx: Tx, caller: Caller, taskId: number, to: { queue: Queue; error?: boolean; comment?: string | null }) =>
  actOnTask(tx, caller, taskId, { action: 'move', ...to });
export const editTask = (
  tx: Tx,
  caller: Caller,
  taskId: number,
  patch: { data?: Record<string, unknown>; urgent?: boolean; comment?: string | null },
) => actOnTask(tx, caller, taskId, { action: 'edit', ...patch });
export const commentTask = (tx: Tx, caller: Caller, taskId: number, text: string) =>
  actOnTask(tx, caller, taskId, { action: 'comment', text });
export const approveTask = (tx: Tx, caller: Caller, taskId: number, comment?: string | null) =>
  actOnTask(tx, caller, taskId, { action: 'approve', comment });
export const rejectTask = (tx: Tx, caller: Caller, taskId: number, comment?: string | null) =>
  actOnTask(tx, caller, taskId, { action: 'reject', comment });
export const clearErrorFlag = (tx: Tx, caller: Caller, taskId: number, comment?: string | null) =>
  actOnTask(tx, caller, taskId, { action: 'clearError', comment });
export const setUrgent = (tx: Tx, caller: Caller, taskId: number, urgent: boolean) =>
  actOnTask(tx, caller, taskId, { action: 'setUrgent', urgent });
export const unlockTask = (tx: Tx, caller: Caller, taskId: number, comment?: string | null) =>
  actOnTask(tx, caller, taskId, { action: 'unlock', comment });
export const reopenTask = (tx: Tx, caller: Caller, taskId: number, queue: 'Ready' | 'Manual', comment?: string | null) =>
  actOnTask(tx, caller, taskId, { action: 'reopen', queue, comment });
export const deleteTask = (tx: Tx, caller: Caller, taskId: number, comment?: string | null) =>
  actOnTask(tx, caller, taskId, { action: 'delete', comment });

/** Creates one task as a person (docs/product.md §5.1: requireApproval `all` applies, `mateCreated` does not). */
export async function createTaskByPerson(tx: Tx, caller: Caller, proc: ProcessDef, body: Record<string, unknown>): Promise<TaskRow> {
  requirePerson(caller);
  const prepared = prepareTasks(caller, proc, [body], false);
  const [row] = await createTasks(tx, caller, proc, prepared, false);
  return row;
}
