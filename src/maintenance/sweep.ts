/**
 * The sweep: the jobs that run one after another every QUEUEMATE_LOCK_SWEEP_INTERVAL seconds, as
 * one round of the runner (runner.ts), in this order. The queue counters' fold comes after the
 * lease recovery and the bulk jobs, so that it takes in the deltas of both in the same sweep.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import type { Units } from '../db/tx.js';
import type { SignInThrottle } from '../auth/throttle.js';
import type { BulkJobs } from '../bulk/jobs.js';
import type { Job } from './runner.js';
import { lockSweepJob } from './lock-sweep.js';
import { idleRunsJob } from './idle-runs.js';
import { idempotencyExpiryJob } from './idempotency-expiry.js';
import { bulkJobsJob } from './bulk-jobs.js';
import { queueCountsJob } from './queue-counters.js';
import { signInPruningJob } from './signin-pruning.js';

export interface SweepDeps {
  db: Kysely<Database>;
  units: Units;
  /** unfinished bulk jobs no live process holds are resumed by the sweep */
  bulkJobs?: BulkJobs;
  /** sign-in throttle rows past their window are pruned by the sweep */
  throttle?: SignInThrottle;
}

export function sweepJobs(deps: SweepDeps, everyMs: number): Job<Record<string, number>>[] {
  return [
    lockSweepJob(deps.units, everyMs),
    idleRunsJob(deps.db, everyMs),
    idempotencyExpiryJob(deps.db, everyMs),
    bulkJobsJob(deps.db, deps.bulkJobs, everyMs),
    queueCountsJob(deps.db, everyMs),
    ...(deps.throttle ? [signInPruningJob(deps.throttle, everyMs)] : []),
  ];
}

/**
 * One sweep at `now`, its jobs in the sweep's order, without the runner (tests, with an injected
 * clock); throws the first failure.
 */
export async function sweepOnce(
  deps: SweepDeps,
  now: Date,
): Promise<{ recovered: number; runsClosed: number; countsFolded: number; bulkJobsResumed: number }> {
  const done: Record<string, number> = {};
  const ctx = { early: false, signal: new AbortController().signal };
  for (const job of sweepJobs(deps, 1)) Object.assign(done, await job.run(now, ctx));
  return { recovered: done.recovered, runsClosed: done.runsClosed, countsFolded: done.countsFolded, bulkJobsResumed: done.bulkJobsResumed };
}
