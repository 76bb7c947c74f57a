/**
 * The webhook dispatcher (docs/events.md, "Webhooks"): delivers outbox events to the tenants'
 * subscriptions.
 *
 * Delivery: each endpoint gets its events one at a time in event-id order (per-endpoint order): the
 * next event becomes a delivery only when the previous one was delivered or failed for good. A
 * dispatcher claims endpoints that have work with FOR UPDATE SKIP LOCKED and a lease
 * (claimed_until), so any number of server processes share the endpoints and never deliver to one
 * endpoint concurrently; a crashed process's lease runs out and another takes over, so an event
 * committed before a crash is delivered after it (at least once: receivers dedupe by webhook-id).
 *
 * Lanes: each claimed endpoint is worked through in its own lane, on its own. A pass only claims
 * and starts lanes; it does not wait for them, so an endpoint that answers slowly occupies its own
 * lane and nothing else: the next wake-up or tick claims the other endpoints at once. At most
 * MAX_LANES lanes run in one process; a pass claims no more than the free lanes, and a lane that
 * ends while endpoints waited for one makes a pass.
 */
import crypto from 'node:crypto';
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../db/types.js';
import { PREPARED } from '../db/store.js';
import type { Clock } from '../lib/clock.js';
import { postSigned, type AttemptResult } from './webhook-http.js';
import { eventPayload, eventsAfter, eventType, eventXid, storedPayload } from './store.js';

/** Retries go on for this long after the first attempt; then the delivery fails for good. */
export const RETRY_WINDOW_MS = 24 * 3600 * 1000;
// back-off: 5 s, doubling, at most 1 h between attempts (≈ 30 attempts in 24 h), each delay
// drawn in [½, 1] of its step (jitter) so endpoints that failed together do not retry together
const FIRST_RETRY_MS = 5000;
const MAX_RETRY_MS = 3600 * 1000;
// deliveries one claim works through before letting go (other endpoints get a turn)
const PER_CLAIM = 10;
// outbox rows one read of an endpoint's next events looks through (docs/events.md §4.3), and the
// most events it returns (a row of task events holds a whole batch's: an import's may be thousands)
const READ_ROWS = 64;
const READ_EVENTS = 256;
// time a claim outlives its attempt's timeout (the writes before and after the attempt)
const LEASE_MARGIN_MS = 5000;
/**
 * Endpoints one process delivers to at once (its lanes). Each holds at most one outgoing request
 * and, between requests, a statement or two; endpoints beyond it wait for a lane to end (at most
 * PER_CLAIM attempts).
 */
export const MAX_LANES = 32;

export function backoffMs(attempts: number, random: () => number = Math.random): number {
  const step = Math.min(FIRST_RETRY_MS * 2 ** Math.max(0, attempts - 1), MAX_RETRY_MS);
  return Math.round(step / 2 + (random() * step) / 2);
}

// ---------------------------------------------------------------------------------------------
// The dispatcher

interface Claimed {
  tenant_id: number;
  id: number;
  url: string;
  secret: string;
  event_types: string[];
  cursor_seq: number;
  allow_private: boolean;
}

/** An event read ahead for an endpoint's lane, made a delivery when its turn comes. */
interface Ahead {
  seq: number;
  row_id: number;
  history_id: number | null;
  type: string;
  payload: Record<string, unknown>;
  event_at: Date;
}

/** What a lane knows of its endpoint between deliveries: its cursor, and its next events read ahead. */
interface LaneState {
  cursor: number;
  ahead: Ahead[];
}

interface DueDelivery {
  id: number;
  event_id: number;
  attempts: number;
  created_at: Date;
  type: string;
  payload: Record<string, unknown>;
  event_at: Date;
}

export interface DispatcherOptions {
  timeoutMs: number;
  disableAfterFailures: number;
  random?: () => number;
  /** called once per attempt, for metrics */
  onAttempt?: (outcome: 'delivered' | 'retry' | 'failed' | 'refused', seconds: number) => void;
  /** tells this process's readers that the outbox changed (a webhook.disabled event) */
  onEventWritten?: () => void;
  /** where a lane's failure is told (a pass's own failure rejects its promise) */
  onError?: (err: unknown) => void;
}

// an event matches a subscription when its type is listed, its family is listed as `family.*`,
// or the subscription lists no types
const matches = (types: RawBuilder<unknown>) =>
  sql`(cardinality(${types}) = 0 OR e.type = ANY(${types}) OR split_part(e.type, '.', 1) || '.*' = ANY(${types}))`;

export class Dispatcher {
  readonly owner = crypto.randomUUID();
  private running: Promise<number> | null = null;
  private again = false;
  /** the lanes at work, by endpoint (`tenant:id`) */
  private readonly lanes = new Map<string, Promise<void>>();
  /** a pass found no free lane: the next lane to end makes a pass */
  private starved = false;
  private stopped = false;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly opts: DispatcherOptions,
  ) {}

  /**
   * The tenants with an enabled endpoint, as the last pass that looked found them; null until then.
   * A wake-up for other tenants makes no pass (with no endpoint, events cost no dispatcher
   * statement). An endpoint enabled through another process is seen at the next tick (1 s).
   */
  private withEndpoints: Set<number> | null = null;
  private lookAgain = true;

  /**
   * One pass now, or after the one in flight (coalesced), that also looks again which tenants
   * have endpoints: for the tick, and after endpoints changed. Resolves with the lanes it started.
   */
  kick(): Promise<number> {
    this.lookAgain = true;
    return this.pass();
  }

  /** Events of these tenants became visible: a pass, unless none of them has an enabled endpoint. */
  wake(tenantIds: readonly number[]): Promise<number> | null {
    return this.wants(tenantIds) ? this.pass() : null;
  }

  /** Whether events of these tenants call for a pass: one of them has an enabled endpoint, or it is not known yet. */
  wants(tenantIds: readonly number[]): boolean {
    const known = this.withEndpoints;
    return this.lookAgain || !known || tenantIds.some((t) => known.has(t));
  }

  /**
   * One pass now, or after the one in flight (coalesced): claims the endpoints with work due (as
   * many as there are free lanes) and starts a lane for each. Resolves, once they are started, with
   * the number of lanes started; the lanes go on on their own (idle() awaits them).
   */
  pass(): Promise<number> {
    if (this.stopped) return Promise.resolve(0);
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      let total = 0;
      do {
        this.again = false;
        if (this.lookAgain) {
          this.lookAgain = false;
          const { rows } = await sql<{ tenant_id: number }>`SELECT DISTINCT tenant_id FROM webhook_subscriptions WHERE enabled`.execute(
            this.db,
          );
          this.withEndpoints = new Set(rows.map((r) => Number(r.tenant_id)));
        }
        // no enabled endpoint in any tenant (as just looked): nothing to claim, no claim statement
        if (this.withEndpoints?.size !== 0) total += await this.claim();
      } while (this.again && !this.stopped);
      return total;
    })().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  /** The lanes at work now. */
  get busyLanes(): number {
    return this.lanes.size;
  }

  /** Resolves when no pass and no lane is running (a lane that ends may make another pass: awaited too). */
  async idle(): Promise<void> {
    while (this.running || this.lanes.size > 0) {
      await Promise.all([this.running?.catch(() => 0), ...this.lanes.values()]);
    }
  }

  /** Makes no more passes; each lane stops after its attempt in flight. Resolves when all have ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.idle();
  }

  /** Claims endpoints with work due, up to the free lanes, and starts their lanes; returns how many. */
  private async claim(): Promise<number> {
    const free = MAX_LANES - this.lanes.size;
    if (free <= 0) {
      this.starved = true;
      return 0;
    }
    const now = this.clock.now();
    const lease = this.leaseFrom(now);
    // prepared: planning it (the events' visibility and the subscriptions' filters inlined) took
    // about 10 ms, once a second on the tick
    const { rows } = await sql<Claimed>`${sql.raw(PREPARED)}
      UPDATE webhook_subscriptions s SET claimed_until = ${lease}
      FROM (
        SELECT w.tenant_id, w.id FROM webhook_subscriptions w
        WHERE w.enabled AND (w.claimed_until IS NULL OR w.claimed_until < ${now})
          AND (EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.tenant_id = w.tenant_id AND d.subscription_id = w.id
                       AND d.status = 'pending' AND d.next_attempt_at <= ${now})
            OR (NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.tenant_id = w.tenant_id AND d.subscription_id = w.id AND d.status = 'pending')
                AND EXISTS (SELECT 1 FROM ${eventsAfter(sql.raw('w.tenant_id'), sql.raw('w.cursor_seq'))} e WHERE ${matches(sql.raw('w.event_types'))})))
        ORDER BY w.claimed_until NULLS FIRST, w.id
        LIMIT ${free}
        FOR UPDATE SKIP LOCKED
      ) c, tenants t
      WHERE s.tenant_id = c.tenant_id AND s.id = c.id AND t.id = s.tenant_id
      RETURNING s.tenant_id, s.id, s.url, s.secret, s.event_types, s.cursor_seq, t.webhooks_allow_private AS allow_private`.execute(
      this.db,
    );
    // a full claim may have left endpoints out: the next lane to end looks again
    if (rows.length === free) this.starved = true;
    let started = 0;
    for (const s of rows) {
      const key = `${s.tenant_id}:${s.id}`;
      // this process's lane still holds it (its lease ran out mid-statement and was taken again here): one lane per endpoint
      if (this.lanes.has(key)) continue;
      this.lanes.set(key, this.lane(key, s));
      started++;
    }
    return started;
  }

  /** One endpoint's lane: its deliveries in order, then the claim let go; another pass if more may be due. */
  private async lane(key: string, s: Claimed): Promise<void> {
    let more = false;
    try {
      more = await this.work(s);
    } catch (err) {
      this.opts.onError?.(err);
    } finally {
      this.lanes.delete(key);
    }
    if (this.stopped || !(more || this.starved)) return;
    this.starved = false;
    this.pass().catch((err: unknown) => this.opts.onError?.(err));
  }

  /**
   * A claim lasts one attempt (bounded by the timeout) and 5 s for the bookkeeping around it, and is
   * renewed before each further attempt: a crashed process's endpoints are taken over that soon.
   */
  private leaseFrom(now: Date): Date {
    return new Date(now.getTime() + this.opts.timeoutMs + LEASE_MARGIN_MS);
  }

  /**
   * Works through an endpoint's due deliveries, at most PER_CLAIM; resolves with whether it stopped
   * with more perhaps due. The next delivery goes out as soon as the previous one succeeded: a
   * successful delivery costs the POST and two statements (the delivery made, with the lease
   * renewed; its outcome written), and the endpoint's next events are read ahead in one statement.
   */
  private async work(s: Claimed): Promise<boolean> {
    const lane: LaneState = { cursor: Number(s.cursor_seq), ahead: [] };
    try {
      for (let i = 0; i < PER_CLAIM; i++) {
        if (this.stopped) return false;
        const due = await this.next(s, lane, i > 0);
        if (!due) return false;
        const ok = await this.attempt(s, due);
        if (!ok) return false; // a failed attempt blocks the endpoint's later events until its retry
      }
      return true;
    } finally {
      await sql`UPDATE webhook_subscriptions SET claimed_until = NULL WHERE tenant_id = ${s.tenant_id} AND id = ${s.id}`.execute(this.db);
    }
  }

  /**
   * The endpoint's next delivery: the next event read ahead made one (when no delivery is pending);
   * else the head pending delivery if due; else, when none is pending, the next matching events read
   * ahead and the first made one. `renew`: the claim is renewed for this attempt.
   */
  private async next(s: Claimed, lane: LaneState, renew: boolean): Promise<DueDelivery | null> {
    if (lane.ahead.length > 0) {
      const made = await this.make(s, lane);
      if (made) return made;
      // a delivery was queued again (redelivery) or the cursor moved: look again from the database
      lane.ahead = [];
    }
    const now = this.clock.now();
    if (renew)
      await sql`UPDATE webhook_subscriptions SET claimed_until = ${this.leaseFrom(now)}
        WHERE tenant_id = ${s.tenant_id} AND id = ${s.id}`.execute(this.db);
    const head = await sql<DueDelivery & { next_attempt_at: Date }>`
      SELECT d.id, d.event_id, d.attempts, d.created_at, d.next_attempt_at, ${eventType(sql`e`, sql`h`)} AS type,
        ${storedPayload(sql`e`, sql`h`)} AS payload, COALESCE(h.at, e.created_at) AS event_at
      FROM webhook_deliveries d JOIN outbox_events e ON e.tenant_id = d.tenant_id AND e.xid = ${eventXid(sql`d.event_id`)} AND e.id = d.event_row_id
        LEFT JOIN task_history h ON h.tenant_id = d.tenant_id AND h.id = d.event_history_id
      WHERE d.tenant_id = ${s.tenant_id} AND d.subscription_id = ${s.id} AND d.status = 'pending'
      ORDER BY d.id LIMIT 1`.execute(this.db);
    if (head.rows[0]) return head.rows[0].next_attempt_at <= now ? head.rows[0] : null;
    if (!(await this.readAhead(s, lane))) return null;
    return this.make(s, lane);
  }

  /**
   * Reads the endpoint's next matching events after its cursor into the lane, READ_ROWS outbox rows
   * (at most READ_EVENTS events) at a time (a stretch with no matching event: the next); false when
   * there is none.
   * A read bounded by rows costs the same however long the backlog behind it is.
   */
  private async readAhead(s: Claimed, lane: LaneState): Promise<boolean> {
    let after: number | null = null;
    for (;;) {
      const cursor = sql`(SELECT cursor_seq FROM webhook_subscriptions WHERE tenant_id = ${s.tenant_id} AND id = ${s.id})`;
      const { rows } = await sql<Ahead & { wanted: boolean; cursor: number }>`
        SELECT e.seq, e.row_id, e.history_id, e.type, e.payload, e.created_at AS event_at, ${matches(sql`${s.event_types}::text[]`)} AS wanted,
          ${cursor} AS cursor
        FROM ${eventsAfter(s.tenant_id, after ?? cursor, READ_ROWS)} e
        ORDER BY e.xid, e.row_id, e.pos LIMIT ${READ_EVENTS}`.execute(this.db);
      if (rows.length === 0) return false;
      if (after === null) lane.cursor = Number(rows[0].cursor);
      lane.ahead = rows
        .filter((r) => r.wanted)
        .map((r) => ({
          seq: Number(r.seq),
          row_id: r.row_id,
          history_id: r.history_id,
          type: r.type,
          payload: r.payload,
          event_at: r.event_at,
        }));
      if (lane.ahead.length > 0) return true;
      // a full read with none for this endpoint: the events after it (a read short of both bounds: the end of the visible events)
      if (rows.length < READ_EVENTS && new Set(rows.map((r) => r.row_id)).size < READ_ROWS) return false;
      after = Number(rows.at(-1)!.seq);
    }
  }

  /**
   * The lane's next event read ahead made a delivery, the cursor moved past it and the claim renewed,
   * in one statement; null (nothing written) if a delivery is pending (queued again by a person:
   * it goes first) or the cursor is not where the lane left it.
   */
  private async make(s: Claimed, lane: LaneState): Promise<DueDelivery | null> {
    const ev = lane.ahead[0];
    const now = this.clock.now();
    const { rows } = await sql<{ id: number; event_id: number; attempts: number; created_at: Date }>`
      WITH moved AS (
        UPDATE webhook_subscriptions SET cursor_seq = ${ev.seq}, claimed_until = ${this.leaseFrom(now)}
        WHERE tenant_id = ${s.tenant_id} AND id = ${s.id} AND cursor_seq = ${lane.cursor}
          AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.tenant_id = ${s.tenant_id} AND d.subscription_id = ${s.id} AND d.status = 'pending')
        RETURNING tenant_id
      )
      INSERT INTO webhook_deliveries (tenant_id, subscription_id, event_id, event_row_id, event_history_id, status, attempts, next_attempt_at,
        created_at)
      SELECT ${s.tenant_id}, ${s.id}, ${ev.seq}, ${ev.row_id}, ${ev.history_id}, 'pending', 0, ${now}, ${now} FROM moved
      RETURNING id, event_id, attempts, created_at`.execute(this.db);
    if (!rows[0]) return null;
    lane.ahead.shift();
    lane.cursor = ev.seq;
    return { ...rows[0], type: ev.type, payload: ev.payload, event_at: ev.event_at };
  }

  private async attempt(s: Claimed, d: DueDelivery): Promise<boolean> {
    const now = this.clock.now();
    const data: Record<string, unknown> = { id: d.event_id, ...eventPayload(d.type, d.event_at, d.payload) };
    const body = JSON.stringify({ type: d.type, timestamp: data.at as string, data });
    const result: AttemptResult = await postSigned(
      s.url,
      s.secret,
      { id: `evt_${d.event_id}`, timestamp: now, body },
      {
        timeoutMs: this.opts.timeoutMs,
        allowNonPublic: s.allow_private,
      },
    );
    const attempts = d.attempts + 1;
    const after = this.clock.now();
    const giveUp = !result.ok && after.getTime() - d.created_at.getTime() >= RETRY_WINDOW_MS;
    const outcome = result.ok ? 'delivered' : result.refused ? 'refused' : giveUp ? 'failed' : 'retry';
    this.opts.onAttempt?.(outcome, result.durationMs / 1000);
    const status = result.ok ? 'delivered' : giveUp ? 'failed' : 'pending';
    const nextAt = status === 'pending' ? new Date(after.getTime() + backoffMs(attempts, this.opts.random)) : null;
    const error = result.error?.slice(0, 500) ?? null;
    // the delivery's latest state, the attempt's log row and (delivered) the endpoint's failures in a row reset, in one statement
    await sql`WITH ok AS (
        UPDATE webhook_subscriptions SET failed_in_a_row = 0
        WHERE ${result.ok} AND tenant_id = ${s.tenant_id} AND id = ${s.id} AND failed_in_a_row <> 0
      ),
      d AS (
        UPDATE webhook_deliveries SET status = ${status}, attempts = ${attempts}, next_attempt_at = ${nextAt},
          last_attempt_at = ${now}, last_status_code = ${result.status}, last_error = ${error},
          duration_ms = ${result.durationMs}, response_excerpt = ${result.excerpt},
          delivered_at = ${result.ok ? after : null}
        WHERE tenant_id = ${s.tenant_id} AND id = ${d.id} RETURNING tenant_id, id
      )
      INSERT INTO webhook_attempts (tenant_id, delivery_id, at, status_code, duration_ms, response_excerpt, error)
      SELECT tenant_id, id, ${now}, ${result.status}, ${Math.round(result.durationMs)}, ${result.excerpt}, ${error} FROM d`.execute(
      this.db,
    );
    if (giveUp) {
      await this.failedForGood(s, after);
    }
    return result.ok;
  }

  /** Counts a delivery that failed for good; the limit reached disables the endpoint, notifies admins and writes webhook.disabled. */
  private async failedForGood(s: Claimed, now: Date): Promise<void> {
    const reason = `disabled after ${this.opts.disableAfterFailures} deliveries in a row failed for 24 h`;
    const { rows } = await sql<{ disabled: boolean }>`
      WITH s AS (
        UPDATE webhook_subscriptions SET failed_in_a_row = failed_in_a_row + 1,
          enabled = failed_in_a_row + 1 < ${this.opts.disableAfterFailures},
          disabled_reason = CASE WHEN failed_in_a_row + 1 >= ${this.opts.disableAfterFailures} THEN ${reason} ELSE disabled_reason END
        WHERE tenant_id = ${s.tenant_id} AND id = ${s.id} RETURNING NOT enabled AS disabled, url
      ),
      note AS (
        INSERT INTO notifications (tenant_id, process_id, kind, message, created_at)
        SELECT ${s.tenant_id}, NULL, 'webhookDisabled', 'Webhook ' || url || ' ' || ${reason}, ${now} FROM s WHERE disabled
      ),
      ev AS (
        INSERT INTO outbox_events (tenant_id, type, payload, created_at)
        SELECT ${s.tenant_id}, 'webhook.disabled',
          jsonb_build_object('type', 'webhook.disabled', 'at', qm_utc(${now}::timestamptz), 'webhookId', ${s.id}::bigint, 'url', url, 'reason', ${reason}::text),
          ${now} FROM s WHERE disabled
      )
      SELECT disabled FROM s`.execute(this.db);
    if (rows[0]?.disabled) this.opts.onEventWritten?.();
  }
}
