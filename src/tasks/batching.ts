/**
 * The take and hand-back hot paths with concurrent callers coalesced (group commit): TakeNext /
 * TakeMany calls on one process share one SKIP LOCKED pick; Solved/Manual/Error/Retry calls of one
 * tenant share one optimistic autocommitted write. One statement of each kind is in flight per
 * key; everything that arrived meanwhile goes in the next one, sent the moment the previous one
 * returns (no timers: a lone request runs at once).
 */
import { sql } from 'kysely';
import type { Units } from '../db/tx.js';
import type { Outcome } from '../lib/errors.js';
import { Coalescer } from '../lib/coalescer.js';
import type { ProcessDef } from '../processes/store.js';
import { busyOutcomes, handBackAs, type HandBackItem, type HandedBack } from './hand-back.js';
import { Takes, type TakeRequest, type TakeResult } from './take.js';
import { RecentTakes } from './recent-takes.js';
import type { ChangeNotifier } from '../lib/notifier.js';

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

export class TaskBatchers {
  private readonly takes: Coalescer<{ proc: ProcessDef; req: TakeRequest }, TakeResult>;
  private readonly handBacks: Coalescer<HandBackItem, Outcome<HandedBack>>;

  private readonly recent: RecentTakes;

  constructor(units: Units, notifier: ChangeNotifier) {
    const takes = new Takes(units);
    const recent = (this.recent = new RecentTakes(notifier));
    this.takes = new Coalescer(async (batch) => {
      const proc = batch[0].proc;
      const results = await takes.forCallers(
        proc,
        batch.map((b) => b.req),
      );
      for (const r of results) if ('tasks' in r) recent.remember(proc, r.tasks);
      return results;
    });
    this.handBacks = new Coalescer((batch) => handBackBatch(units, batch, recent));
  }

  close(): void {
    this.recent.close();
  }

  take(proc: ProcessDef, req: TakeRequest): Promise<TakeResult> {
    return this.takes.submit(`${proc.tenantId}:${proc.id}`, { proc, req });
  }

  handBack(item: HandBackItem): Promise<Outcome<HandedBack>> {
    return this.handBacks.submit(String(item.caller.tenantId), item);
  }
}
