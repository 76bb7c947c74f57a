/**
 * The delivery log of a webhook subscription (docs/events.md, "Webhooks"): each delivery's latest
 * state with every attempt, and deliveries queued again by a person.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import { Refusal } from '../lib/errors.js';
import { eventType, eventXid } from './store.js';
import { getSubscription } from './webhook-subscriptions.js';

export interface Delivery {
  id: number;
  subscriptionId: number;
  eventId: number;
  eventType: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  nextAttemptAt: Date | null;
  lastAttemptAt: Date | null;
  lastStatusCode: number | null;
  lastError: string | null;
  durationMs: number | null;
  responseExcerpt: string | null;
  createdAt: Date;
  deliveredAt: Date | null;
  /** every attempt, oldest first (kept until the retention job purges it) */
  attemptLog: DeliveryAttempt[];
}

/** One attempt of a delivery: when, the receiver's status (null: no answer), how long, what it answered or why it failed. */
export interface DeliveryAttempt {
  at: Date;
  statusCode: number | null;
  durationMs: number;
  responseExcerpt: string | null;
  error: string | null;
}

/** The delivery log of one subscription, newest first. */
export async function listDeliveries(
  db: Kysely<Database>,
  tenantId: number,
  subscriptionId: number,
  opts: { status?: Delivery['status']; limit?: number; beforeId?: number } = {},
): Promise<Delivery[]> {
  await getSubscription(db, tenantId, subscriptionId);
  const { rows } =
    await sql<any>`SELECT d.id, d.subscription_id, d.event_id, ${eventType(sql`e`, sql`h`)} AS type, d.status, d.attempts, d.next_attempt_at,
      d.last_attempt_at, d.last_status_code, d.last_error, d.duration_ms, d.response_excerpt, d.created_at, d.delivered_at
    FROM webhook_deliveries d LEFT JOIN outbox_events e ON e.tenant_id = d.tenant_id AND e.xid = ${eventXid(sql`d.event_id`)} AND e.id = d.event_row_id
      LEFT JOIN task_history h ON h.tenant_id = d.tenant_id AND h.id = d.event_history_id
    WHERE d.tenant_id = ${tenantId} AND d.subscription_id = ${subscriptionId}
      ${opts.status ? sql`AND d.status = ${opts.status}` : sql``} ${opts.beforeId ? sql`AND d.id < ${opts.beforeId}` : sql``}
    ORDER BY d.id DESC LIMIT ${Math.min(Math.max(opts.limit ?? 50, 1), 200)}`.execute(db);
  const attempts = await listAttempts(
    db,
    tenantId,
    rows.map((r) => r.id as number),
  );
  return rows.map((r) => ({
    attemptLog: attempts.get(r.id) ?? [],
    id: r.id,
    subscriptionId: r.subscription_id,
    eventId: r.event_id,
    eventType: r.type ?? 'unknown',
    status: r.status,
    attempts: r.attempts,
    nextAttemptAt: r.next_attempt_at,
    lastAttemptAt: r.last_attempt_at,
    lastStatusCode: r.last_status_code,
    lastError: r.last_error,
    durationMs: r.duration_ms,
    responseExcerpt: r.response_excerpt,
    createdAt: r.created_at,
    deliveredAt: r.delivered_at,
  }));
}

/** The attempts of these deliveries, oldest first. */
async function listAttempts(db: Kysely<Database>, tenantId: number, deliveryIds: number[]): Promise<Map<number, DeliveryAttempt[]>> {
  const out = new Map<number, DeliveryAttempt[]>();
  if (deliveryIds.length === 0) return out;
  const rows = await db
    .selectFrom('webhook_attempts')
    .select(['delivery_id', 'at', 'status_code', 'duration_ms', 'response_excerpt', 'error'])
    .where('tenant_id', '=', tenantId)
    .where('delivery_id', 'in', deliveryIds)
    .orderBy('delivery_id')
    .orderBy('id')
    .execute();
  for (const r of rows) {
    const list = out.get(r.delivery_id) ?? [];
    list.push({ at: r.at, statusCode: r.status_code, durationMs: r.duration_ms, responseExcerpt: r.response_excerpt, error: r.error });
    out.set(r.delivery_id, list);
  }
  return out;
}

/**
 * Delivers again: one delivery (any status) or every failed delivery of a subscription. The
 * delivery goes back to pending with a fresh 24 h window and is tried next (before newer events).
 * Returns how many deliveries were queued again.
 */
export async function redeliver(
  db: Kysely<Database>,
  tenantId: number,
  target: { subscriptionId: number; deliveryId: number } | { subscriptionId: number; failed: true },
  now: Date,
): Promise<number> {
  await getSubscription(db, tenantId, target.subscriptionId);
  const where =
    'deliveryId' in target
      ? sql`subscription_id = ${target.subscriptionId} AND id = ${target.deliveryId}`
      : sql`subscription_id = ${target.subscriptionId} AND status = 'failed'`;
  const r = await sql`UPDATE webhook_deliveries SET status = 'pending', attempts = 0, next_attempt_at = ${now}, created_at = ${now},
      delivered_at = NULL
    WHERE tenant_id = ${tenantId} AND ${where}`.execute(db);
  const n = Number(r.numAffectedRows ?? 0);
  if ('deliveryId' in target && n === 0) throw new Refusal('not_found', `delivery ${target.deliveryId} not found`);
  return n;
}
