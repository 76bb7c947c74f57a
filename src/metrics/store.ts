/** The figures /metrics computes when scraped (docs/events.md, "Metrics"). */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import { counterRows } from '../processes/counters.js';
import { eventCount } from '../events/store.js';

export interface QueueDepth {
  tenantId: number;
  processId: number;
  processKey: string;
  queue: string;
  error: boolean;
  n: number;
}

/**
 * Tasks per process and queue (with the Error flag), from the queue counters (folded counts plus
 * deltas, src/processes/counters.ts), never a COUNT(*) over tasks. At most one series per
 * process × 6 queue keys; deleted tasks are not counted.
 */
export async function queueDepths(db: Kysely<Database>): Promise<QueueDepth[]> {
  const { rows } = await sql<{ tenant_id: number; process_id: number; process_key: string; kind: string; n: number }>`
    SELECT p.tenant_id, p.id AS process_id, p.process_key, c.kind, c.n
    FROM (SELECT tenant_id, process_id, kind, sum(n)::int AS n
          FROM ${counterRows(sql`true`)} u
          WHERE kind IN ('Ready', 'NeedsData', 'NeedsApproval', 'Manual', 'ManualError', 'Solved')
          GROUP BY tenant_id, process_id, kind) c
    JOIN processes p ON p.tenant_id = c.tenant_id AND p.id = c.process_id
    WHERE c.n <> 0`.execute(db);
  return rows.map((r) => ({
    tenantId: r.tenant_id,
    processId: Number(r.process_id),
    processKey: r.process_key,
    queue: r.kind === 'ManualError' ? 'Manual' : r.kind,
    error: r.kind === 'ManualError',
    n: r.n,
  }));
}

export interface OutboxBacklog {
  /**
   * committed events not visible to readers yet: an older transaction is still running
   * (docs/events.md §3; normally 0 or a few)
   */
  heldBack: number;
  /** how long the oldest of them has waited, in seconds (0: none) */
  heldBackSeconds: number;
  /** webhook deliveries waiting for an attempt */
  pendingDeliveries: number;
  /** age in seconds of the oldest pending delivery's event (0: none) */
  oldestPendingSeconds: number;
}

export async function outboxBacklog(db: Kysely<Database>, now: Date): Promise<OutboxBacklog> {
  const { rows } = await sql<{ held: number; held_since: Date | null; pending: number; oldest: Date | null }>`
    WITH held AS (
      SELECT o.created_at, o.n FROM tenants t CROSS JOIN LATERAL (
        SELECT created_at, ${eventCount(sql`o`)} AS n FROM outbox_events o WHERE o.tenant_id = t.id AND o.xid >= qm_events_horizon(t.id)) o
    )
    -- a row of task events holds several (src/events/store.ts)
    SELECT (SELECT coalesce(sum(n), 0)::int FROM held) AS held, (SELECT min(created_at) FROM held) AS held_since,
      (SELECT count(*)::int FROM webhook_deliveries WHERE status = 'pending') AS pending,
      (SELECT min(created_at) FROM webhook_deliveries WHERE status = 'pending') AS oldest`.execute(db);
  const r = rows[0];
  const age = (d: Date | null) => (d ? Math.max(0, (now.getTime() - d.getTime()) / 1000) : 0);
  return { heldBack: r.held, heldBackSeconds: age(r.held_since), pendingDeliveries: r.pending, oldestPendingSeconds: age(r.oldest) };
}
