/**
 * Retention of events and delivery logs (docs/events.md, "Retention"): delivery attempts and
 * finished deliveries older than the retention are deleted, and so are events older than it that no pending
 * delivery and no enabled endpoint still behind them needs. Batches of 5000 keep each statement
 * short; the job loops until a batch comes back short. Every server process runs it every 10
 * minutes; each batch claims its rows with SKIP LOCKED, so several processes purging at once
 * share the rows instead of waiting on each other's.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import { eventCount, RANK_BITS } from '../events/store.js';
import type { Job } from './runner.js';

const BATCH = 5000;
// a purge is a few batched deletes: more often would gain nothing on a retention of days
const PURGE_EVERY_MS = 10 * 60 * 1000;

/** One purge; returns what it deleted: events (a row of task events counts as its events), deliveries, attempts. */
export async function purgeOldEvents(
  db: Kysely<Database>,
  now: Date,
  retentionHours: number,
): Promise<{ events: number; deliveries: number; attempts: number }> {
  const cutoff = new Date(now.getTime() - retentionHours * 3600 * 1000);
  let deliveries = 0;
  let events = 0;
  let attempts = 0;
  // attempts older than the retention, also of deliveries still pending or redelivered since
  // (a purged delivery takes its attempts with it: ON DELETE CASCADE)
  for (;;) {
    const r = await sql`DELETE FROM webhook_attempts WHERE (tenant_id, delivery_id, id) IN (
        SELECT tenant_id, delivery_id, id FROM webhook_attempts WHERE at < ${cutoff} LIMIT ${BATCH} FOR UPDATE SKIP LOCKED)`.execute(db);
    const n = Number(r.numAffectedRows ?? 0);
    attempts += n;
    if (n < BATCH) break;
  }
  for (;;) {
    const r = await sql`DELETE FROM webhook_deliveries WHERE (tenant_id, id) IN (
        SELECT tenant_id, id FROM webhook_deliveries WHERE status <> 'pending' AND created_at < ${cutoff} LIMIT ${BATCH} FOR UPDATE SKIP LOCKED)`.execute(
      db,
    );
    const n = Number(r.numAffectedRows ?? 0);
    deliveries += n;
    if (n < BATCH) break;
  }
  // rows go whole: a row of task events (src/events/store.ts) with all its events, which a pending
  // delivery of any of them keeps; `events` counts events, the batch rows
  for (;;) {
    const { rows } = await sql<{ rows: number; events: number }>`WITH gone AS (
        DELETE FROM outbox_events WHERE (tenant_id, xid, id) IN (
          SELECT e.tenant_id, e.xid, e.id FROM outbox_events e
          WHERE e.created_at < ${cutoff}
            AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.tenant_id = e.tenant_id AND d.event_row_id = e.id AND d.status = 'pending')
            -- an endpoint whose cursor is not past the event's transaction (ids: docs/events.md §3)
            AND NOT EXISTS (SELECT 1 FROM webhook_subscriptions s WHERE s.tenant_id = e.tenant_id AND s.enabled
              AND (s.cursor_seq >> ${sql.lit(RANK_BITS)}) <= e.xid::text::bigint)
          LIMIT ${BATCH} FOR UPDATE OF e SKIP LOCKED)
        RETURNING ${eventCount(sql`outbox_events`)} AS n)
      SELECT count(*)::int AS rows, coalesce(sum(n), 0)::int AS events FROM gone`.execute(db);
    events += rows[0].events;
    if (rows[0].rows < BATCH) break;
  }
  return { events, deliveries, attempts };
}

export const EVENT_PURGE = 'event-purge';

export function eventPurgeJob(db: Kysely<Database>, retentionHours: number): Job<{ events: number; deliveries: number; attempts: number }> {
  return {
    name: EVENT_PURGE,
    everyMs: PURGE_EVERY_MS,
    run: (now) => purgeOldEvents(db, now, retentionHours),
    report: (r) => (r.events || r.deliveries ? { msg: 'purged events and delivery logs past their retention' } : null),
  };
}
