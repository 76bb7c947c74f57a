/** Reading the outbox: numbered events of one tenant, in their visible order (docs/events.md). */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/types.js';

export interface OutboxEvent {
  /** the event id readers see: `seq`, increasing in the order events become visible */
  id: number;
  type: string;
  payload: Record<string, unknown>;
  createdAt: Date;
}

/**
 * Up to `limit` numbered events of the tenant after `afterId`, oldest first; `hiddenFamilies`
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
    SELECT seq, type, payload, created_at FROM outbox_events
    WHERE tenant_id = ${tenantId} AND seq > ${afterId}
      ${hiddenFamilies.length ? sql`AND split_part(type, '.', 1) <> ALL(${hiddenFamilies}::text[])` : sql``}
    ORDER BY seq LIMIT ${limit}`.execute(db);
  return rows.map((r) => ({ id: r.seq, type: r.type, payload: eventPayload(r.type, r.created_at, r.payload), createdAt: r.created_at }));
}

/** The payload readers get: `type` and `at` (from the row's columns) first, then the stored fields. */
export function eventPayload(type: string, at: Date, stored: Record<string, unknown>): Record<string, unknown> {
  return { type, at: at.toISOString(), ...stored };
}

/** The last event id given out (any tenant): where a new subscriber starts. */
export async function lastEventId(db: Kysely<Database>): Promise<number> {
  const { rows } = await sql<{ last_seq: number }>`SELECT last_seq FROM outbox_sequencer`.execute(db);
  return rows[0]?.last_seq ?? 0;
}

/** The tenant's last event id (0 when it has none). */
export async function lastTenantEventId(db: Kysely<Database>, tenantId: number): Promise<number> {
  const { rows } = await sql<{ seq: number | null }>`SELECT max(seq) AS seq FROM outbox_events WHERE tenant_id = ${tenantId}`.execute(db);
  return rows[0]?.seq ?? 0;
}
