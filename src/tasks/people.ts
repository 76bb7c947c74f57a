/**
 * People working tasks (docs/product.md §5.4, docs/product.md §5.6): move, edit, comment, approve, reject, clear
 * the Error flag, set urgent, unlock, reopen, soft delete. Each action on a task writes one history
 * row with the acting user, through the funnel (funnel.ts), in the caller's transaction; each
 * change is built by personAction (changes.ts) from its row of the state-machine table.
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
import { Refusal, refused, type Outcome } from '../lib/errors.js';
import type { Caller } from '../lib/caller.js';
import { loadProcessById, type ProcessDef } from '../processes/store.js';
import { applyChanges, type TaskChange } from './funnel.js';
import { createTasks, guardedWrite, prepareTasks } from './create.js';
import { personAction, requirePerson, type PersonAction } from './changes.js';
import type { Queue } from './state-machine.js';
import { findUniqueKeyOwners, selectTasksForUpdate, TASK_ROW_COLUMNS, type TaskRow } from './store.js';

export type { PersonAction } from './changes.js';

const validId = (id: number) => Number.isSafeInteger(id) && id > 0;

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
      const change = personAction(stripProcess(row), proc, input, caller);
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
