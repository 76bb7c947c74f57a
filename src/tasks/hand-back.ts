/**
 * Handing tasks back (docs/product.md §5.3): Solved, Manual, Error and Retry by the Mate that
 * holds the lock. Any number of hand-backs are served by one transaction whose writes are one
 * statement (the funnel); an item that is refused changes nothing.
 */
import { sql } from 'kysely';
import type { Tx, Units } from '../db/tx.js';
import { Refusal, refused, type Outcome } from '../lib/errors.js';
import { callerMateId, type Caller } from '../lib/caller.js';
import { applyChanges } from './funnel.js';
import { handedBack, type HandBackChange, type HandBackInput } from './changes.js';
import type { HandBackAction, Queue } from './state-machine.js';
import type { RecentTakes } from './recent-takes.js';
import { existingTaskIds, lockTasksWithin, selectTasks, type LockedTaskRow, type ReadMode, type ReadTaskRow } from './store.js';

/**
 * Retry's activation date as the surface read it (docs/mate-api.md §7.11): none, the date asked
 * for, or the value sent when it is not a date within 366 days. That one is refused
 * (invalid_activation_date) per item, after the task's own refusals, and the task stays locked.
 */
export type ActivationDateInput = Date | null | { invalid: unknown };

export interface HandBackItem extends HandBackInput {
  taskId: number;
  /** Retry only (null otherwise) */
  activationDate: ActivationDateInput;
}

export interface HandedBack {
  taskId: number;
  queue: Queue;
  error: boolean;
  message: string;
}

const validId = (id: number) => id > 0 && Number.isSafeInteger(id);

/**
 * The task refusals of docs/mate-api.md §5 for a Mate acting on a task it must hold, in their
 * precedence; null when the Mate holds a live lock on it.
 */
export function mateTaskRefusal(row: LockedTaskRow | undefined, caller: Caller, taskId: number): Refusal | null {
  if (!row) return new Refusal('task_not_found', `Task ${taskId} was not found`);
  if (row.queue === 'Solved') return new Refusal('task_solved', `Task ${taskId} is solved and read-only for Mates`);
  const mateId = callerMateId(caller);
  const heldByMe = row.locked_by_mate_id === mateId;
  if ((heldByMe && row.locked_until !== null && row.locked_until <= caller.now) || (!heldByMe && row.expired_lock_mate_id === mateId)) {
    return new Refusal('lock_expired', `Your lock on task ${taskId} expired`);
  }
  if (!heldByMe) return new Refusal('task_not_locked_by_you', `Task ${taskId} is not locked by you`);
  return null;
}

const PAST_TENSE: Record<HandBackAction, string> = {
  Solved: 'solved',
  Manual: 'sent to Manual',
  Error: 'sent to Manual as an Error',
  Retry: 'sent back to Ready for a retry',
};

/**
 * Hands back any number of tasks of one tenant in `tx` (a transaction), items in order; later
 * items see the effect of earlier ones. Every change, history row, comment, KPI event and run
 * count is written by one statement.
 */
export async function handBack(tx: Tx, items: HandBackItem[]): Promise<Outcome<HandedBack>[]> {
  return (await handBackAs(tx, items, 'lock')) as Outcome<HandedBack>[];
}

const busy = (taskId: number) =>
  new Refusal('task_busy', `Task ${taskId} is being changed by another operation; nothing was done, try again shortly`);

/**
 * How long in all a hand-back waits for task rows another transaction holds before answering
 * them `task_busy`: enough for a statement in flight (another hand-back of the task, a take, the
 * lock sweeper) to finish, far less than a row stuck in a long transaction holds it.
 */
export const HAND_BACK_ROW_WAIT_MS = 500;

/** The answer to items that met a lock they must not wait for (lock_timeout): busy, nothing done. */
export function busyOutcomes(items: HandBackItem[]): Outcome<HandedBack>[] {
  return items.map((i) => refused(busy(i.taskId)));
}

/**
 * Hands back tasks of one tenant, reading them as `mode` says (store.ts ReadMode):
 * - 'lock' (in a transaction): waits for the rows' other holders;
 * - 'lock-free' (in a transaction): the free rows are locked at once; a row another transaction
 *   holds is waited for up to HAND_BACK_ROW_WAIT_MS in all (a statement in flight), and answered
 *   `task_busy` if it is still held then; the other items go ahead;
 * - 'version' (autocommit): one optimistic write (funnel.ts); an item whose row changed or was
 *   held meanwhile, and any later item on a task an earlier item changes, is answered null:
 *   nothing of it was written, hand it back again (the fast path does). A refusal takes no lock.
 *   `known` rows (as this server process took them, with their versions) are not read again:
 *   the write checks them; one that would be refused is read again first (it may be stale).
 */
export async function handBackAs(
  tx: Tx,
  items: HandBackItem[],
  mode: ReadMode,
  known?: Map<number, ReadTaskRow>,
): Promise<(Outcome<HandedBack> | null)[]> {
  const { results, changes } = await prepareHandBacks(tx, items, mode, known);
  const { skipped } = await applyChanges(tx, changes);
  return withSkipped(items, results, skipped);
}

/** The results with the items of skipped optimistic changes answered null (hand them back again). */
export function withSkipped(
  items: HandBackItem[],
  results: (Outcome<HandedBack> | null)[],
  skipped: number[],
): (Outcome<HandedBack> | null)[] {
  if (skipped.length) {
    const again = new Set(skipped);
    items.forEach((item, i) => {
      if (again.has(item.taskId)) results[i] = null;
    });
  }
  return results;
}

/**
 * handBackAs up to the write: each item's answer (null: hand it back again, as handBackAs says)
 * and the changes to write, one per task, with the answers valid once they are written.
 */
export async function prepareHandBacks(
  tx: Tx,
  items: HandBackItem[],
  mode: ReadMode,
  known?: Map<number, ReadTaskRow>,
): Promise<{ results: (Outcome<HandedBack> | null)[]; changes: HandBackChange[] }> {
  if (items.length === 0) return { results: [], changes: [] };
  const tenantId = items[0].caller.tenantId;
  const ids = [...new Set(items.map((i) => i.taskId).filter(validId))];
  // rows this server process took for this tenant (another tenant's id is read, and not found)
  const mine = mode === 'version' && known ? [...known.values()].filter((r) => r.tenant_id === tenantId) : [];
  const rows: Map<number, ReadTaskRow> = await selectTasks(
    tx.db,
    tenantId,
    mine.length ? ids.filter((id) => !mine.some((r) => r.id === id)) : ids,
    mode,
  );
  for (const row of mine) rows.set(row.id, row);
  const remembered = new Set(mine.map((r) => r.id));
  if (remembered.size) {
    // a remembered row may be stale (its lock extended since by ExtendLock or UpdateTask, the task
    // handed back by another server process): one that would refuse an item is read again, without
    // a lock, before the item is answered
    const stale = new Set(
      items.filter((i) => remembered.has(i.taskId) && mateTaskRefusal(rows.get(i.taskId), i.caller, i.taskId)).map((i) => i.taskId),
    );
    if (stale.size) {
      const fresh = await selectTasks(tx.db, tenantId, [...stale], 'version');
      for (const id of stale) {
        remembered.delete(id);
        const row = fresh.get(id);
        if (row) rows.set(id, row);
        else rows.delete(id);
      }
    }
  }
  const held =
    mode === 'lock-free' && rows.size < ids.length
      ? await existingTaskIds(
          tx.db,
          tenantId,
          ids.filter((id) => !rows.has(id)),
        )
      : null;
  if (held?.size) {
    // held only for an instant, most likely: wait a moment before answering busy
    for (const [id, row] of await lockTasksWithin(tx.db, tenantId, [...held], HAND_BACK_ROW_WAIT_MS)) {
      rows.set(id, row);
      held.delete(id);
    }
  }
  const changes = new Map<number, HandBackChange>();
  const results: (Outcome<HandedBack> | null)[] = [];
  for (const item of items) {
    const { caller } = item;
    if (mode === 'version' && changes.has(item.taskId)) {
      // a later item on a task an earlier one changes: it must see that change, which may yet be skipped
      results.push(null);
      continue;
    }
    if (held?.has(item.taskId)) {
      results.push(refused(busy(item.taskId)));
      continue;
    }
    const row = rows.get(item.taskId);
    const refusal = mateTaskRefusal(row, caller, item.taskId);
    if (refusal && mode === 'version' && remembered.has(item.taskId)) {
      // the row as this process took it may be stale (its lock extended since by ExtendLock or
      // UpdateTask): it is read again before it is refused
      results.push(null);
      continue;
    }
    if (refusal || !row) {
      results.push(refused(refusal!));
      continue;
    }
    const at = item.action === 'Retry' ? item.activationDate : null;
    if (at !== null && !(at instanceof Date)) {
      results.push(
        refused(
          new Refusal(
            'invalid_activation_date',
            `activationDate ${JSON.stringify(at.invalid)} is not a date within 366 days; task ${item.taskId} stays locked by you`,
          ),
        ),
      );
      continue;
    }
    const change = handedBack(row, item, at, mode === 'version');
    changes.set(row.id, change);
    // later items in this batch see the new state
    const { after } = change;
    rows.set(row.id, after);
    const note = change.details?.note;
    const message = note ? `Task ${row.id}: ${note}` : `Task ${row.id} ${PAST_TENSE[item.action]}`;
    results.push({ ok: true, value: { taskId: row.id, queue: after.queue, error: after.error, message } });
  }
  return { results, changes: [...changes.values()] };
}

/**
 * How long a hand-back waits for a lock it cannot skip (the process's run row, held by another
 * transaction) before its items are answered `task_busy`. Task rows are waited for a shorter
 * moment (hand-back.ts, HAND_BACK_ROW_WAIT_MS).
 */
export const HAND_BACK_LOCK_TIMEOUT_MS = 2000;

const LOCK_NOT_AVAILABLE = '55P03';

/**
 * Hands back a batch of one tenant: first as one optimistic autocommitted statement (rows read
 * without a lock, written only if unchanged and free: funnel.ts); the items it skipped (a row
 * changed or held meanwhile, a later item on a task an earlier one changed) once more the same
 * way with the rows read as they are now, so a refusal still takes no row lock; what is left, in
 * a transaction that locks the free rows, waits a moment for the held ones (a statement in
 * flight) and answers those still held `task_busy`, so one stuck row never stalls the tenant's
 * others.
 */
export async function handBackBatch(units: Units, items: HandBackItem[], recent?: RecentTakes): Promise<Outcome<HandedBack>[]> {
  const known = recent?.take(items.map((i) => i.taskId));
  const results = await units.autocommit((tx) => handBackAs(tx, items, 'version', known));
  const pending = () => results.flatMap((r, i) => (r === null ? [i] : []));
  let left = pending();
  if (left.length === 0) return results as Outcome<HandedBack>[];
  const fresh = await units.autocommit((tx) =>
    handBackAs(
      tx,
      left.map((i) => items[i]),
      'version',
    ),
  );
  left.forEach((i, j) => (results[i] = fresh[j]));
  left = pending();
  if (left.length === 0) return results as Outcome<HandedBack>[];
  const again = left.map((i) => items[i]);
  let locked: Outcome<HandedBack>[];
  try {
    locked = await units.transaction(async (tx) => {
      await sql`SET LOCAL lock_timeout = ${sql.lit(`${HAND_BACK_LOCK_TIMEOUT_MS}ms`)}`.execute(tx.db);
      return (await handBackAs(tx, again, 'lock-free')) as Outcome<HandedBack>[];
    });
  } catch (err) {
    if ((err as { code?: string }).code !== LOCK_NOT_AVAILABLE) throw err;
    locked = busyOutcomes(again);
  }
  left.forEach((i, j) => (results[i] = locked[j]));
  return results as Outcome<HandedBack>[];
}
