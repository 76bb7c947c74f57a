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
import { existingTaskIds, selectTasks, selectTasksForUpdate, type LockedTaskRow, type ReadMode, type ReadTaskRow } from './store.js';

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

/** Reads and locks one task for an operation on it (none when the id cannot exist). */
export async function lockTask(tx: Tx, tenantId: number, taskId: number): Promise<LockedTaskRow | undefined> {
  const rows = await selectTasksForUpdate(tx.db, tenantId, validId(taskId) ? [taskId] : []);
  return rows.get(taskId);
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

/** The answer to items that met a lock they must not wait for (lock_timeout): busy, nothing done. */
export function busyOutcomes(items: HandBackItem[]): Outcome<HandedBack>[] {
  return items.map((i) => refused(busy(i.taskId)));
}

/**
 * Hands back tasks of one tenant, reading them as `mode` says (store.ts ReadMode):
 * - 'lock' (in a transaction): waits for the rows' other holders;
 * - 'lock-free' (in a transaction): a row another transaction holds is answered `task_busy`,
 *   the other items go ahead;
 * - 'version' (autocommit): one optimistic write (funnel.ts); an item whose row changed or was
 *   held meanwhile, and any later item on the same task, is answered null: nothing of it was
 *   written, hand it back again (the fast path does, with 'lock-free'). `known` rows (as this
 *   server process took them, with their versions) are not read again: the write checks them.
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
  const held =
    mode === 'lock-free' && rows.size < ids.length
      ? await existingTaskIds(
          tx.db,
          tenantId,
          ids.filter((id) => !rows.has(id)),
        )
      : null;
  const changes = new Map<number, HandBackChange>();
  const results: (Outcome<HandedBack> | null)[] = [];
  const seen = new Set<number>();
  for (const item of items) {
    const { caller } = item;
    if (mode === 'version' && seen.has(item.taskId)) {
      // a second item on one task: it must see the first one's effect, which may yet be skipped
      results.push(null);
      continue;
    }
    seen.add(item.taskId);
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
 * transaction) before its items are answered `task_busy`. Task rows are never waited for.
 */
export const HAND_BACK_LOCK_TIMEOUT_MS = 2000;

const LOCK_NOT_AVAILABLE = '55P03';

/**
 * Hands back a batch of one tenant: first as one optimistic autocommitted statement (rows read
 * without a lock, written only if unchanged and free: funnel.ts); the items it skipped (a row
 * changed or held meanwhile) again in a transaction that locks the free rows and answers those
 * another transaction holds `task_busy`, so one stuck row never stalls the tenant's others.
 */
export async function handBackBatch(units: Units, items: HandBackItem[], recent?: RecentTakes): Promise<Outcome<HandedBack>[]> {
  const known = recent?.take(items.map((i) => i.taskId));
  const first = await units.autocommit((tx) => handBackAs(tx, items, 'version', known));
  const again = items.filter((_, i) => first[i] === null);
  if (again.length === 0) return first as Outcome<HandedBack>[];
  let second: Outcome<HandedBack>[];
  try {
    second = await units.transaction(async (tx) => {
      await sql`SET LOCAL lock_timeout = ${sql.lit(`${HAND_BACK_LOCK_TIMEOUT_MS}ms`)}`.execute(tx.db);
      return (await handBackAs(tx, again, 'lock-free')) as Outcome<HandedBack>[];
    });
  } catch (err) {
    if ((err as { code?: string }).code !== LOCK_NOT_AVAILABLE) throw err;
    second = busyOutcomes(again);
  }
  let j = 0;
  return first.map((r) => r ?? second[j++]);
}
