/**
 * Reading the outbox (docs/events.md §3): one tenant's events once they are visible to every
 * reader, in their visible order, with their ids.
 *
 * An event is visible once its writing transaction (`xid`) is below the events horizon of the
 * reader's snapshot for its tenant (qm_events_horizon(tenant), migrations 0008 and 0013): the
 * oldest transaction still running on the node that holds the tenant's rows (on one PostgreSQL,
 * the database). Every transaction below it has ended, and any transaction that commits later has
 * an xid at or above it. So readers order events by (xid, id) and never see one appear behind their
 * cursor. An event's id encodes that position: xid · 2^20 + its rank among the tenant's events of
 * that xid (1-based); a cursor decodes back to (xid, rank).
 *
 * A statement's task events are one row (per tenant) listing their history rows (outbox.ts);
 * readers expand it into its events, in that order, after the rows before it: ranks count events,
 * not rows.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../db/types.js';

/** Events of one tenant per writing transaction that ids can tell apart (2^20 − 1). */
export const RANK_BITS = 20;

export interface OutboxEvent {
  /** the event id readers see: increasing in the order events become visible */
  id: number;
  type: string;
  payload: Record<string, unknown>;
  createdAt: Date;
}

/** The writing transaction an event id encodes (the outbox key's second column, migration 0010). */
export function eventXid(id: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`((${id} >> ${sql.lit(RANK_BITS)})::text::xid8)`;
}

/** The tenant's visible-events watermark as an id: every event of the tenant visible now has a smaller one. */
export function watermarkIdOf(tenantId: RawBuilder<unknown> | number): RawBuilder<number> {
  return sql<number>`(qm_events_horizon(${tenantId}::bigint)::text::bigint << ${sql.lit(RANK_BITS)})`;
}

/**
 * The events of outbox rows (a row alias `o`), one relation row per event: a row of task events
 * (history_ids, written one per statement and tenant: outbox.ts) holds one event per history row,
 * in the order of history_ids (`pos`); any other row is one event (`pos` 1, history_id null).
 */
export function expandedEvents(o: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`unnest(COALESCE(${o}.history_ids, '{NULL}'::bigint[])) WITH ORDINALITY AS u(history_id, pos)`;
}

/** The number of events of the outbox row `o` (see expandedEvents). */
export function eventCount(o: RawBuilder<unknown>): RawBuilder<number> {
  return sql<number>`COALESCE(cardinality(${o}.history_ids), 1)`;
}

/**
 * An event's type: a task event's is `task.` + its history action in lower case with spaces as
 * underscores ('Lock expired' → task.lock_expired), read from its history row `h` (joined, null for
 * other events); any other event's is its row's (`o`).
 */
export function eventType(o: RawBuilder<unknown>, h: RawBuilder<unknown>): RawBuilder<string> {
  return sql<string>`COALESCE('task.' || replace(lower(${h}.action), ' ', '_'), ${o}.type)`;
}

/**
 * The tenant's visible events after the event id `after`, as a relation with the columns
 * seq (the event id), row_id, pos, history_id, xid, type, payload, created_at; read it
 * ORDER BY xid, row_id, pos (the index's order, then the row's events, which is id order; a LIMIT
 * then stops the scan early).
 *
 * An event's rank in its transaction is the events of the tenant's earlier rows of that
 * transaction plus its place in its row.
 *
 * `rows`: only the events of the first that many outbox rows with events after `after`. The
 * ORDER BY ... LIMIT a reader puts on the events sorts every event after `after` (the planner cannot
 * tell they come out of the index in order), so a reader that goes through a long backlog a few
 * events at a time (the webhook dispatcher) pays for the whole backlog on each read; bounded by
 * rows, the scan stops at the bound and the sort is over those rows' events only.
 */
export function eventsAfter(
  tenantId: RawBuilder<unknown> | number,
  after: RawBuilder<unknown> | number,
  rows?: number,
): RawBuilder<unknown> {
  const cx = sql`(((${after})::bigint >> ${sql.lit(RANK_BITS)})::text::xid8)`;
  const cr = sql`((${after})::bigint & ${sql.lit(2 ** RANK_BITS - 1)})`;
  const all = sql`(SELECT o.id, o.xid, o.type, o.payload, o.history_ids, o.tenant_id, o.created_at, ${eventCount(sql`o`)} AS n,
            sum(${eventCount(sql`o`)}) OVER (PARTITION BY o.xid ORDER BY o.id ROWS UNBOUNDED PRECEDING) - ${eventCount(sql`o`)} AS before
          FROM outbox_events o
          WHERE o.tenant_id = ${tenantId} AND o.xid >= ${cx} AND o.xid < qm_events_horizon(${tenantId}::bigint))`;
  // the window's output keeps the index's (xid, id) order, so the limit stops the scan
  const source =
    rows === undefined
      ? sql`${all} r`
      : sql`(SELECT * FROM ${all} p WHERE p.xid > ${cx} OR p.before + p.n > ${cr} ORDER BY p.xid, p.id LIMIT ${rows}) r`;
  return sql`(SELECT (r.xid::text::bigint << ${sql.lit(RANK_BITS)}) + r.before + u.pos AS seq, r.id AS row_id, u.pos, u.history_id, r.xid,
      ${eventType(sql`r`, sql`h`)} AS type, ${storedPayload(sql`r`, sql`h`)} AS payload, COALESCE(h.at, r.created_at) AS created_at
    FROM ${source}
    CROSS JOIN LATERAL ${expandedEvents(sql`r`)}
    LEFT JOIN task_history h ON h.tenant_id = r.tenant_id AND h.id = u.history_id
    WHERE (r.xid > ${cx} OR r.before + r.n > ${cr}) AND (r.xid > ${cx} OR r.before + u.pos > ${cr}))`;
}

/**
 * The stored payload of an event: a task event's is built from its history row `h` (joined on the
 * event's history id; the keys of docs/events.md §2), every other event's is its outbox row's own
 * (`o`, a row alias with payload). History rows are kept longer than events (docs/events.md §8), so
 * an event's history row exists as long as the event does.
 */
export function storedPayload(o: RawBuilder<unknown>, h: RawBuilder<unknown>): RawBuilder<Record<string, unknown>> {
  return sql<Record<string, unknown>>`CASE WHEN ${h}.id IS NULL THEN ${o}.payload ELSE
    jsonb_build_object('processId', ${h}.process_id, 'taskId', ${h}.task_id, 'action', ${h}.action, 'queue', ${h}.to_queue, 'error', ${h}.error,
      'fromQueue', ${h}.from_queue, 'fromError', ${h}.from_error, 'reason', ${h}.reason, 'retryCount', ${h}.retry_count,
      'actor', jsonb_build_object('type', ${h}.actor_type, 'id', ${h}.actor_id, 'name', ${h}.actor_name), 'requestId', ${h}.request_id) END`;
}

/**
 * Up to `limit` visible events of the tenant after `afterId`, oldest first; `hiddenFamilies`
 * leaves out types of those families (`webhook` hides webhook.*).
 */
export async function readEvents(
  db: Kysely<Database>,
  tenantId: number,
  afterId: number,
  limit: number,
  hiddenFamilies: readonly string[] = [],
): Promise<OutboxEvent[]> {
  const { rows } = await sql<{ seq: number; type: string; payload: Record<string, unknown>; created_at: Date }>`
    SELECT e.seq, e.type, e.payload, e.created_at FROM ${eventsAfter(tenantId, afterId)} e
    ${hiddenFamilies.length ? sql`WHERE split_part(e.type, '.', 1) <> ALL(${hiddenFamilies}::text[])` : sql``}
    ORDER BY e.xid, e.row_id, e.pos LIMIT ${limit}`.execute(db);
  return rows.map((r) => ({
    id: Number(r.seq),
    type: r.type,
    payload: eventPayload(r.type, r.created_at, r.payload),
    createdAt: r.created_at,
  }));
}

/** The payload readers get: `type` and `at` (from the row's columns) first, then the stored fields. */
export function eventPayload(type: string, at: Date, stored: Record<string, unknown>): Record<string, unknown> {
  return { type, at: at.toISOString(), ...stored };
}

/**
 * Where a reader of the tenant's events starting now starts: below every event of the tenant not
 * yet visible. An event that committed behind a transaction still running is not visible yet, so
 * it comes after.
 */
export async function watermarkId(db: Kysely<Database>, tenantId: number): Promise<number> {
  const { rows } = await sql<{ id: string }>`SELECT ${watermarkIdOf(tenantId)} AS id`.execute(db);
  return Number(rows[0].id);
}
