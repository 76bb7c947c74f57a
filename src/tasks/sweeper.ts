/**
 * Background housekeeping in every server process, coordinated through the database (SKIP LOCKED
 * and idempotent statements): recover expired task leases, close idle runs, drop expired
 * idempotency records.
 */
import { sql } from 'kysely';
import type { FastifyBaseLogger } from 'fastify';
import type { Store } from '../db/store.js';
import type { Clock } from '../lib/clock.js';
import { sweepExpiredLocks } from './service.js';

export async function sweepOnce(store: Store, now: Date): Promise<{ recovered: number; runsClosed: number }> {
  let recovered = 0;
  // batches of 500 keep each transaction short; loop until nothing is due
  for (;;) {
    const n = await sweepExpiredLocks(store.db, now, 500);
    recovered += n;
    if (n < 500) break;
  }
  const closed = await sql`UPDATE runs r SET finished_at = ${now}, finish_reason = 'timeout'
    FROM processes p
    WHERE r.finished_at IS NULL AND p.tenant_id = r.tenant_id AND p.id = r.process_id
      AND r.last_activity_at < ${now}::timestamptz - make_interval(secs => p.run_timeout_seconds)`.execute(store.db);
  await sql`DELETE FROM idempotency_keys WHERE expires_at <= ${now}`.execute(store.db);
  return { recovered, runsClosed: Number(closed.numAffectedRows ?? 0) };
}

/** Runs sweepOnce, then `housekeeping` (e.g. pruning ended sign-in throttle windows), every interval. */
export function startSweeper(store: Store, clock: Clock, intervalSeconds: number, log: FastifyBaseLogger, housekeeping: () => Promise<unknown> = async () => {}): () => Promise<void> {
  let running: Promise<unknown> | null = null;
  const timer = setInterval(() => {
    if (running) return; // a slow sweep is never overlapped by the next one
    running = sweepOnce(store, clock.now())
      .then(async (r) => {
        if (r.recovered || r.runsClosed) log.info(r, 'sweeper recovered expired locks / closed idle runs');
        await housekeeping();
      })
      .catch((err) => log.warn({ err }, 'sweep failed; retrying at the next interval'))
      .finally(() => {
        running = null;
      });
  }, intervalSeconds * 1000);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
