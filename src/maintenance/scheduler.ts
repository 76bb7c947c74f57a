/**
 * Background jobs, one file each, run by every server process and coordinated through the
 * database (SKIP LOCKED and idempotent statements), so any number of processes may run them.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import type { Units } from '../db/tx.js';
import type { Clock } from '../lib/clock.js';
import type { SignInThrottle } from '../auth/throttle.js';
import { recoverExpiredLeases } from './leases.js';
import { closeIdleRuns } from './idle-runs.js';
import { purgeExpiredIdempotencyKeys } from './idempotency-expiry.js';
import { pruneSignInFailures } from './signin-pruning.js';
import { purgeEndedBulkJobs, resumeBulkJobs } from './bulk-jobs.js';
import type { BulkJobs } from '../bulk/jobs.js';
import { foldQueueCounts } from './queue-counters.js';

export interface MaintenanceDeps {
  db: Kysely<Database>;
  units: Units;
  clock: Clock;
  throttle: SignInThrottle;
  /** unfinished bulk jobs no live process holds are resumed by the sweep */
  bulkJobs?: BulkJobs;
  /** when the last sweep finished (shown by /readyz) */
  state?: { lastRunAt: Date | null };
}

/** What the jobs log through: any pino-style logger (the app passes Fastify's), so this layer needs no HTTP import. */
export interface MaintenanceLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

// Batches of 500 keep each recovery transaction short; the sweep loops until nothing is due.
const LEASE_BATCH = 500;

/** Runs every job once at `now`. */
export async function sweepOnce(
  deps: Pick<MaintenanceDeps, 'db' | 'units' | 'bulkJobs'>,
  now: Date,
): Promise<{ recovered: number; runsClosed: number; countsFolded: number; bulkJobsResumed: number }> {
  let recovered = 0;
  for (;;) {
    const n = await recoverExpiredLeases(deps.units, now, LEASE_BATCH);
    recovered += n;
    if (n < LEASE_BATCH) break;
  }
  const runsClosed = await closeIdleRuns(deps.db, now);
  await purgeExpiredIdempotencyKeys(deps.db, now);
  await purgeEndedBulkJobs(deps.db, now);
  const bulkJobsResumed = deps.bulkJobs ? await resumeBulkJobs(deps.bulkJobs) : 0;
  // after the lease recovery and the bulk jobs, so that the deltas of both fold in the same sweep
  const countsFolded = await foldQueueCounts(deps.db, now);
  return { recovered, runsClosed, countsFolded, bulkJobsResumed };
}

/** Runs the jobs every interval; returns the function that stops them (awaiting a sweep in progress). */
export function startMaintenance(deps: MaintenanceDeps, intervalSeconds: number, log: MaintenanceLog): () => Promise<void> {
  let running: Promise<unknown> | null = null;
  const timer = setInterval(() => {
    if (running) return; // a slow sweep is never overlapped by the next one
    running = sweepOnce(deps, deps.clock.now())
      .then(async (r) => {
        if (r.recovered || r.runsClosed || r.bulkJobsResumed)
          log.info(r, 'sweeper recovered expired locks / closed idle runs / resumed bulk jobs');
        if (deps.state) deps.state.lastRunAt = deps.clock.now();
        await pruneSignInFailures(deps.throttle);
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
