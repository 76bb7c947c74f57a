/**
 * The events watermark (docs/events.md §3): tells this server process's readers when events of a
 * tenant became visible, and counts them.
 *
 * Events need no numbering after they are written: a reader sees an event once its writing
 * transaction is below the events horizon of the reader's snapshot (store.ts). What changes that set is a
 * transaction ending, here or elsewhere; so after this process's units of work end (coalesced:
 * one read in flight, one queued, and a short window) and on a timer, one read-only statement
 * takes the current horizon and counts, by tenant and type, the events whose xid lies between the
 * previous horizon and this one: exactly the events that became visible meanwhile, each once. It
 * wakes this process's readers of those tenants; on PostgreSQL, when this process wrote, a
 * NOTIFY wakes the other processes' readers too.
 *
 * The look walks every tenant with one horizon, the database's: on one PostgreSQL that is every
 * tenant's horizon (qm_events_horizon(tenant), migration 0013). Readers compare with their
 * tenant's horizon themselves (store.ts), so the look only decides when they are woken
 * (docs/deployment.md, "Beyond one PostgreSQL: Citus", says what changes on several nodes).
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import { PREPARED } from '../db/store.js';
import { eventType, expandedEvents } from './store.js';

export const EVENTS_CHANNEL = 'queuemate_events';

/**
 * The tenants of a NOTIFY payload (the tenants' ids, then `;` and the sending process's origin
 * mark: visibleSince writes it), or null when this process (`origin`) sent it.
 */
export function readNotifyPayload(payload: string, origin?: string): number[] | null {
  const [ids, from] = payload.split(';');
  if (origin && from === origin) return null;
  return ids
    .split(',')
    .map(Number)
    .filter((x) => Number.isSafeInteger(x) && x > 0);
}

export interface VisibleBatch {
  /** events that became visible, by tenant */
  tenants: Map<number, number>;
  /** events that became visible, by type */
  types: Map<string, number>;
}

/**
 * One look: the events that became visible since the horizon `from` (null: none, only take the
 * horizon), and the horizon now. The tenants are walked with the (tenant_id, xid, id) index each;
 * a row of task events counts as its events, each by its type (read from its history row, store.ts).
 * With `notify` (PostgreSQL), the same statement NOTIFYs the other server processes of the
 * tenants whose events became visible, if any (one round trip per look, not two).
 */
export async function visibleSince(
  db: Kysely<Database>,
  from: string | null,
  notify: { origin?: string } | null = null,
): Promise<{ batch: VisibleBatch; upto: string }> {
  // prepared: one text whatever the arguments, run up to 20 times a second under load (parsing
  // and planning it each time was half of a look's PostgreSQL time)
  const { rows } = await sql<{ tenant_id: number | null; type: string | null; n: number; upto: string }>`${sql.raw(PREPARED)}
    WITH w AS (SELECT qm_events_horizon() AS upto),
    c AS (
      SELECT t.id AS tenant_id, e.type, count(*)::int AS n
      FROM tenants t CROSS JOIN LATERAL (
        SELECT ${eventType(sql`o`, sql`h`)} AS type FROM outbox_events o
          CROSS JOIN LATERAL ${expandedEvents(sql`o`)}
          LEFT JOIN task_history h ON h.tenant_id = o.tenant_id AND h.id = u.history_id
        WHERE o.tenant_id = t.id AND o.xid >= ${from}::xid8 AND o.xid < (SELECT upto FROM w)) e
      GROUP BY t.id, e.type),
    told AS (
      SELECT CASE WHEN ${notify !== null} AND ids IS NOT NULL
        THEN pg_notify(${EVENTS_CHANNEL}, ids || ${notify?.origin ? `;${notify.origin}` : ''}::text) END AS sent
      FROM (SELECT string_agg(DISTINCT tenant_id::text, ',') AS ids FROM c) x)
    SELECT tenant_id, type, n, (SELECT upto::text FROM w) AS upto FROM c
    UNION ALL SELECT NULL, NULL, 0, (SELECT upto::text FROM w) FROM told`.execute(db);
  const batch: VisibleBatch = { tenants: new Map(), types: new Map() };
  let upto = from ?? '0';
  for (const r of rows) {
    if (BigInt(r.upto) > BigInt(upto)) upto = r.upto;
    if (r.tenant_id === null || r.type === null) continue;
    batch.tenants.set(r.tenant_id, (batch.tenants.get(r.tenant_id) ?? 0) + r.n);
    batch.types.set(r.type, (batch.types.get(r.type) ?? 0) + r.n);
  }
  return { batch, upto };
}

/**
 * The least time between the starts of two looks, in ms: under load, events reach readers at most
 * this much later. A look is one short read, but one per 10 ms was 0.8 of the 2.8 PostgreSQL round
 * trips of a life cycle at M = 1 (bench: wire accounting); back to back, a busy process woke its
 * readers and the webhook dispatcher after every look (0.7 of the rate at M = 64).
 */
export const LOOK_GAP_MS = 50;

export interface WatermarkOptions {
  /** also NOTIFY other server processes (PostgreSQL) */
  notify: boolean;
  /** this process's mark in its NOTIFY payloads, so that its own listener can skip them */
  origin?: string;
  /** ms between looks when nothing asked for one (transactions of other processes, or outside Queuemate) */
  pollMs: number;
  /**
   * ms between the starts of two looks, so that the units of work ending meanwhile share one
   * (default LOOK_GAP_MS; 0: no gap). A look after a quiet spell starts at once.
   */
  coalesceMs?: number;
  onVisible(batch: VisibleBatch): void;
  onError(err: unknown): void;
}

/** Looks for newly visible events for one server process: on demand (coalesced) and on a timer. */
export class EventWatermark {
  private running: Promise<void> | null = null;
  private pending: NodeJS.Timeout | null = null;
  private again = false;
  /** this process wrote since its last NOTIFY: the others should look */
  private wrote = false;
  private stopped = false;
  /** the horizon of the last look (null before the first) */
  private upto: string | null = null;
  private lastStart = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly opts: WatermarkOptions,
  ) {
    this.timer = setInterval(() => this.kick(false), opts.pollMs);
    this.timer.unref();
  }

  /** Asks for a look soon; `wrote`: this process's own work ended (the others are told). */
  kick(wrote = true): void {
    if (this.stopped) return;
    if (wrote) this.wrote = true;
    if (this.running || this.pending) {
      this.again = true;
      return;
    }
    this.schedule();
  }

  private schedule(): void {
    const gap = this.opts.coalesceMs ?? LOOK_GAP_MS;
    const wait = Math.min(gap, gap - (Date.now() - this.lastStart));
    if (wait <= 0) return this.start();
    this.pending = setTimeout(() => this.start(), wait);
  }

  private start(): void {
    if (this.pending) clearTimeout(this.pending);
    this.pending = null;
    if (this.stopped || this.running) return;
    this.again = false;
    this.lastStart = Date.now();
    this.running = this.lookOnce().finally(() => {
      this.running = null;
      // asked again meanwhile: the next look waits out the gap
      if (this.again && !this.stopped) {
        this.again = false;
        this.schedule();
      }
    });
  }

  /** Looks now, after any look in flight; resolves when done (for tests and shutdown). */
  async flush(): Promise<void> {
    while (this.running) await this.running;
    if (this.stopped) return;
    this.start();
    while (this.running) await this.running;
  }

  private async lookOnce(): Promise<void> {
    const wrote = this.wrote;
    this.wrote = false;
    try {
      const { batch, upto } = await visibleSince(this.db, this.upto, wrote && this.opts.notify ? { origin: this.opts.origin } : null);
      this.upto = upto;
      if (batch.tenants.size) {
        this.opts.onVisible(batch);
      } else if (wrote) {
        // what this process wrote is not visible yet (an older transaction still runs): tell
        // the others once it is
        this.wrote = true;
      }
    } catch (err) {
      if (!this.stopped) this.opts.onError(err);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    if (this.pending) clearTimeout(this.pending);
    this.pending = null;
    while (this.running) await this.running;
  }
}
