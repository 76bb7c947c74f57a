/**
 * The fold of the queue counters (docs/operations.md "Queue counters"): moves the deltas the task funnel appended
 * into queue_counts, and merges bins whose time has passed into the '-infinity' bin, so that a read
 * sums a few hundred rows per process, however many changes there were.
 *
 * A fold is one statement (DELETE … RETURNING feeding an upsert) in a transaction that first takes
 * a transaction advisory lock with pg_try_advisory_xact_lock: when several server processes sweep
 * at once, one folds and the others skip the round (no two folds ever wait on each other's rows
 * or deadlock). Readers see the deltas or their sum in queue_counts, never both and never neither:
 * the rows move in one statement, and a read is one statement too.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import { inTransaction } from '../db/tx.js';
import type { Job } from './runner.js';

// pg_advisory_xact_lock key of the fold, shared by every server process.
const FOLD_LOCK = 720_451_996;
// Rows per statement: 20,000 delta rows fold in ~100 ms on PostgreSQL, short enough not to hold the
// sweep; the job loops until a batch comes back short.
const BATCH = 20_000;
// Ready and deadline bins end up in '-infinity' (active, overdue) an hour after they closed: the
// margin covers server processes whose clocks disagree by less than that. Solved bins are read
// from local midnight only; three days cover every zone offset.
const PAST_MARGIN = "interval '1 hour'";
const SOLVED_KEPT = "interval '3 days'";

/** Folds the deltas into queue_counts; returns how many delta rows moved (0 when another process held the fold). */
export async function foldQueueCounts(db: Kysely<Database>, now: Date): Promise<number> {
  let moved = 0;
  for (;;) {
    const n = await inTransaction(db, async (trx) => {
      const { rows: lock } = await sql<{ ok: boolean }>`SELECT pg_try_advisory_xact_lock(${FOLD_LOCK}) AS ok`.execute(trx);
      if (!lock[0].ok) return -1;
      const { rows } = await sql<{ moved: number }>`
        WITH cut AS (
          SELECT qm_count_bucket(${now}::timestamptz) - ${sql.raw(PAST_MARGIN)} AS past, ${now}::timestamptz - ${sql.raw(SOLVED_KEPT)} AS solved
        ),
        moved AS (
          DELETE FROM queue_count_deltas WHERE (tenant_id, id) IN (SELECT tenant_id, id FROM queue_count_deltas LIMIT ${BATCH})
          RETURNING tenant_id, process_id, kind, bucket, n
        ),
        aged AS (
          DELETE FROM queue_counts q USING cut
          WHERE q.bucket > '-infinity' AND q.bucket < CASE WHEN q.kind = 'Solved' THEN cut.solved ELSE cut.past END
          RETURNING q.tenant_id, q.process_id, q.kind, q.bucket, q.n
        ),
        sums AS (
          SELECT m.tenant_id, m.process_id, m.kind,
            CASE WHEN m.bucket < CASE WHEN m.kind = 'Solved' THEN cut.solved ELSE cut.past END THEN '-infinity'::timestamptz ELSE m.bucket END AS bucket,
            sum(m.n) AS n
          FROM (SELECT * FROM moved UNION ALL SELECT * FROM aged) m, cut
          -- deltas of a process deleted since (its counters went with it) are dropped
          WHERE EXISTS (SELECT 1 FROM processes p WHERE p.tenant_id = m.tenant_id AND p.id = m.process_id)
          GROUP BY 1, 2, 3, 4
        ),
        upserted AS (
          INSERT INTO queue_counts AS q (tenant_id, process_id, kind, bucket, n)
          SELECT tenant_id, process_id, kind, bucket, n FROM sums
          ON CONFLICT (tenant_id, process_id, kind, bucket) DO UPDATE SET n = q.n + EXCLUDED.n
        )
        SELECT count(*)::int AS moved FROM moved`.execute(trx);
      // rows that fell to zero (a queue emptied, a bin's tasks all moved on) carry nothing
      await sql`DELETE FROM queue_counts WHERE n = 0`.execute(trx);
      return rows[0].moved;
    });
    if (n < 0) return moved;
    moved += n;
    if (n < BATCH) return moved;
  }
}

/**
 * The job. It runs in the sweep's round after the lease recovery and the bulk jobs
 * (maintenance/sweep.ts), so that it takes in their deltas in the same sweep.
 */
export function queueCountsJob(db: Kysely<Database>, everyMs: number): Job<{ countsFolded: number }> {
  return {
    name: 'queue-counts',
    everyMs,
    run: async (now) => ({ countsFolded: await foldQueueCounts(db, now) }),
  };
}
