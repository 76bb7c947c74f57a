/**
 * UpdateTask (docs/mate-api.md §7.9) and ExtendLock (docs/mate-api.md §7.14) by a Mate: one task, one
 * transaction, written through the funnel.
 */
import type { Tx } from '../db/tx.js';
import { Refusal, problemsRefusal } from '../lib/errors.js';
import { callerMateId, type Caller } from '../lib/caller.js';
import { validateTaskData } from '../processes/task-data.js';
import type { ProcessDef } from '../processes/store.js';
import { applyChanges } from './funnel.js';
import { guardedWrite } from './create.js';
import { sql } from 'kysely';
import { mateTaskRefusal } from './hand-back.js';
import { lockExtended, updated } from './changes.js';
import { findUniqueKeyOwners, lockTaskIf, type TaskRow } from './store.js';

/**
 * Sets field values and appends a comment on a task the Mate holds (its lock is extended), or on
 * a Manual or NeedsData task nobody holds; a NeedsData task whose required fields are now all
 * filled moves to Ready (docs/product.md §3).
 */
export async function updateTask(
  tx: Tx,
  caller: Caller,
  taskId: number,
  body: Record<string, unknown>,
  loadProcess: (processId: number) => Promise<ProcessDef>,
): Promise<{ message: string; row: TaskRow }> {
  const mateId = callerMateId(caller);
  // the row is locked only when this Mate may change it: held by it, or a Manual or NeedsData
  // task nobody holds; any other is refused as read, never taken from its holder
  const found = await lockTaskIf(
    tx.db,
    caller.tenantId,
    taskId,
    sql`t.locked_by_mate_id = ${mateId} OR (t.locked_until IS NULL AND t.queue IN ('Manual', 'NeedsData'))`,
  );
  const row = found?.row;
  const refusal = mateTaskRefusal(row, caller, taskId);
  const heldByMe = row !== undefined && row.locked_by_mate_id === mateId;
  const freeEditable = row && row.locked_until === null && (row.queue === 'Manual' || row.queue === 'NeedsData');
  if (!row || (refusal && refusal.code !== 'task_not_locked_by_you')) throw refusal!;
  if ((!heldByMe && !freeEditable) || !found!.locked) throw new Refusal('task_not_locked_by_you', `Task ${taskId} is not locked by you`);
  const proc = await loadProcess(row.process_id);
  const r = validateTaskData({
    fields: proc.fields,
    body,
    mode: 'update',
    timeZone: caller.timeZone,
    numberFormat: caller.numberFormat,
    current: row.data,
  });
  if (!r.ok) throw problemsRefusal(r.problems);
  const uniqueKey = r.uniqueKey;
  // a unique key value used by another task not Solved is refused (docs/product.md §3)
  const refuseDuplicateKey = async () => {
    if (uniqueKey === null || uniqueKey === row.unique_key) return;
    const owner = (await findUniqueKeyOwners(tx.db, caller.tenantId, proc.id, [uniqueKey])).get(uniqueKey);
    if (owner !== undefined && owner !== row.id) {
      throw new Refusal('duplicate_key', `A task with key ${uniqueKey} already exists (task ${owner})`, [], { existingTaskId: owner });
    }
  };
  await refuseDuplicateKey();
  const change = updated(row, r, caller, heldByMe ? proc.lockTimeoutSeconds : null);
  await guardedWrite(tx, () => applyChanges(tx, [change]), refuseDuplicateKey);
  const { after } = change;
  const moved = after.queue !== row.queue ? `; it moved to ${after.queue}` : '';
  return { message: `Task ${taskId} updated${moved}`, row: after };
}

/** Sets the Mate's lease to max(current, now + seconds); seconds default to the process's lock timeout. */
export async function extendLock(
  tx: Tx,
  caller: Caller,
  taskId: number,
  seconds: number | null,
): Promise<{ message: string; row: TaskRow }> {
  // locked only when this Mate holds it: another Mate's call is refused as read
  const found = await lockTaskIf(tx.db, caller.tenantId, taskId, sql`t.locked_by_mate_id = ${callerMateId(caller)}`);
  const row = found?.row;
  const refusal = mateTaskRefusal(row, caller, taskId);
  if (refusal || !row) throw refusal!;
  if (!found!.locked) throw new Refusal('task_not_locked_by_you', `Task ${taskId} is not locked by you`);
  const change = lockExtended(row, seconds, caller);
  await applyChanges(tx, [change]);
  return { message: `Lock on task ${taskId} extended`, row: change.after };
}
