/**
 * Lease recovery (docs/product.md §5.5): an expired Mate lock is recovered as a system Retry with
 * reason "Lock expired": back to Ready at the bottom when the retry rules allow, else to Manual
 * with the Error flag. The former holder's late hand-back is refused with lock_expired.
 */
import type { Units } from '../db/tx.js';
import { systemCaller } from '../lib/caller.js';
import { applyChanges, type TaskChange } from '../tasks/funnel.js';
import { transition, type Queue } from '../tasks/state-machine.js';
import { pickExpiredLocks, selectTasksForUpdate } from '../tasks/store.js';

/**
 * Recovers up to `limit` expired leases in one transaction. SKIP LOCKED lets the sweepers of
 * several server processes share the work without recovering a task twice. Returns how many.
 */
export async function recoverExpiredLeases(units: Units, now: Date, limit: number): Promise<number> {
  return units.transaction(async (tx) => {
    const expired = await pickExpiredLocks(tx.db, now, limit);
    const byTenant = new Map<number, number[]>();
    for (const e of expired) byTenant.set(e.tenant_id, [...(byTenant.get(e.tenant_id) ?? []), e.id]);
    const changes: TaskChange[] = [];
    for (const [tenantId, ids] of byTenant) {
      const caller = systemCaller(tenantId, now);
      for (const row of (await selectTasksForUpdate(tx.db, tenantId, ids)).values()) {
        const t = transition('lockExpired', { retryAllowed: row.retry_allowed, retryCount: row.retry_count, maxRetries: row.max_retries });
        const retryCount = row.retry_count + (t.to.retried ? 1 : 0);
        changes.push({
          caller,
          before: row,
          after: {
            ...row,
            queue: t.to.queue as Queue,
            error: t.to.error,
            reason: t.to.note ?? null,
            retry_count: retryCount,
            queue_position: t.to.retried ? now : row.queue_position,
            locked_by_mate_id: null,
            locked_until: null,
            run_id: null,
            expired_lock_mate_id: row.locked_by_mate_id,
          },
          action: 'Lock expired',
          details: { formerHolderMateId: row.locked_by_mate_id, lockedUntil: row.locked_until?.toISOString() ?? null },
        });
      }
    }
    await applyChanges(tx, changes);
    return expired.length;
  });
}
