/**
 * Lease recovery (docs/product.md §5.5): an expired Mate lock is recovered as a system Retry with
 * reason "Lock expired": back to Ready at the bottom when the retry rules allow, else to Manual
 * with the Error flag. The former holder's late hand-back is refused with lock_expired.
 */
import type { Units } from '../db/tx.js';
import { applyChanges, type TaskChange } from '../tasks/funnel.js';
import { lockExpired } from '../tasks/changes.js';
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
      for (const row of (await selectTasksForUpdate(tx.db, tenantId, ids)).values()) changes.push(lockExpired(row, now));
    }
    await applyChanges(tx, changes);
    return expired.length;
  });
}
