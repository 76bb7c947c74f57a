/**
 * The sequencer (docs/events.md, "Ordering"): gives outbox events their visible number `seq`.
 *
 * Identity ids are drawn when a row is inserted, not when its transaction commits, so a reader
 * ordering by them could read id 12 and later see id 11 commit: a consumer resuming "after 12"
 * would miss 11. Instead events are written without a number, and the sequencer numbers the
 * events that have committed (the only ones its snapshot sees) from one counter whose row lock it
 * holds until it commits. Runs are therefore one at a time, across server processes, and commit
 * in the order of their numbers: whenever a reader sees number N, every smaller number has
 * already committed, and an event that commits later gets a larger number. Within a run, events
 * are numbered in (writing transaction id, row id) order, which keeps each transaction's events
 * together and in the order they were written.
 *
 * No condition on running transactions is needed (nor wanted: the oldest running transaction of
 * the whole cluster, in any database, would hold every event back). Each server process runs it
 * after its own units of work end (coalesced: one run in flight, one queued) and on a timer (for
 * events of other processes and of writes outside a unit of work); it wakes this process's
 * readers, and on PostgreSQL the others through NOTIFY.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/types.js';

export const EVENTS_CHANNEL = 'queuemate_events';

// One run numbers at most this many events, so that its transaction stays short; a backlog is
// worked off by consecutive runs.
const BATCH = 5000;

export interface SequencedBatch {
  /** events numbered, by tenant */
  tenants: Map<number, number>;
  /** events numbered, by type */
  types: Map<string, number>;
  /** committed events left for the next run (more than one batch) */
  waiting: number;
}

/** One sequencer run: numbers what is safe to number, in one short transaction. */
export async function sequenceOnce(db: Kysely<Database>, notify: boolean): Promise<SequencedBatch> {
  return db.transaction().execute(async (trx) => {
    // one run at a time across processes; the next waits here and then takes a fresh snapshot
    await sql`SELECT last_seq FROM outbox_sequencer FOR UPDATE`.execute(trx);
    const { rows } = await sql<{ tenant_id: number | null; type: string | null; n: number; waiting: number }>`
      WITH base AS (SELECT last_seq FROM outbox_sequencer),
      due AS (
        SELECT tenant_id, id, row_number() OVER (ORDER BY xid, id) AS n FROM outbox_events
        WHERE seq IS NULL
        ORDER BY xid, id LIMIT ${BATCH}
      ),
      numbered AS (
        UPDATE outbox_events o SET seq = (SELECT last_seq FROM base) + d.n
        FROM due d WHERE o.tenant_id = d.tenant_id AND o.id = d.id
        RETURNING o.tenant_id, o.type
      ),
      bump AS (
        UPDATE outbox_sequencer SET last_seq = last_seq + (SELECT count(*) FROM due), ran_at = now()
      )
      SELECT tenant_id, type, count(*)::int AS n,
        ((SELECT count(*) FROM outbox_events WHERE seq IS NULL) - (SELECT count(*) FROM due))::int AS waiting
      FROM numbered GROUP BY tenant_id, type
      UNION ALL
      SELECT NULL, NULL, 0, ((SELECT count(*) FROM outbox_events WHERE seq IS NULL) - (SELECT count(*) FROM due))::int`.execute(trx);
    const batch: SequencedBatch = { tenants: new Map(), types: new Map(), waiting: 0 };
    for (const r of rows) {
      batch.waiting = r.waiting;
      if (r.tenant_id === null || r.type === null) continue;
      batch.tenants.set(r.tenant_id, (batch.tenants.get(r.tenant_id) ?? 0) + r.n);
      batch.types.set(r.type, (batch.types.get(r.type) ?? 0) + r.n);
    }
    // delivered at commit, after the numbers are visible
    if (notify && batch.tenants.size) await sql`SELECT pg_notify(${EVENTS_CHANNEL}, ${[...batch.tenants.keys()].join(',')})`.execute(trx);
    return batch;
  });
}

export interface SequencerOptions {
  /** also NOTIFY other server processes (PostgreSQL) */
  notify: boolean;
  /** ms between runs when nothing asked for one (events of other processes, long transactions) */
  pollMs: number;
  /**
   * ms a requested run waits so that the events of the units of work committing meanwhile are
   * numbered by the same run: one sequencer transaction per window instead of one per request
   * (default 5; 0 runs at once)
   */
  coalesceMs?: number;
  onSequenced(batch: SequencedBatch): void;
  onError(err: unknown): void;
}

/** Runs the sequencer for one server process: on demand (coalesced) and on a timer. */
export class Sequencer {
  private running: Promise<void> | null = null;
  private pending: NodeJS.Timeout | null = null;
  private again = false;
  private stopped = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly opts: SequencerOptions,
  ) {
    this.timer = setInterval(() => this.kick(), opts.pollMs);
    this.timer.unref();
  }

  /** Asks for a run soon (after the coalescing window); a run in flight is followed by one more. */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    const wait = this.opts.coalesceMs ?? 5;
    if (wait <= 0) return this.start();
    this.pending ??= setTimeout(() => this.start(), wait);
  }

  private start(): void {
    if (this.pending) clearTimeout(this.pending);
    this.pending = null;
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.loop().finally(() => {
      this.running = null;
    });
  }

  /** Runs now, until nothing is left to number; resolves when done (for tests and shutdown). */
  async flush(): Promise<void> {
    this.start();
    while (this.running) await this.running;
  }

  private async loop(): Promise<void> {
    do {
      this.again = false;
      try {
        const batch = await sequenceOnce(this.db, this.opts.notify);
        if (batch.tenants.size) this.opts.onSequenced(batch);
        if (batch.waiting > 0) this.again = true;
      } catch (err) {
        if (!this.stopped) this.opts.onError(err);
        return;
      }
    } while (this.again && !this.stopped);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    if (this.pending) clearTimeout(this.pending);
    this.pending = null;
    while (this.running) await this.running;
  }
}
