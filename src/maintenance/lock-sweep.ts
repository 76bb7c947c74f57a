/**
 * The lock sweep job: recovers the Mate locks whose lease ran out (leases.ts), in batches of
 * LEASE_BATCH, until a batch comes back short. Runs in every server process: SKIP LOCKED lets the
 * sweeps of several processes share the expired locks without recovering a task twice.
 */
import type { Units } from '../db/tx.js';
import { recoverExpiredLeases } from './leases.js';
import type { Job } from './runner.js';

// Batches of 500 keep each recovery transaction short; the sweep loops until nothing is due.
const LEASE_BATCH = 500;

export const LOCK_SWEEP = 'lock-sweep';

export function lockSweepJob(units: Units, everyMs: number): Job<{ recovered: number }> {
  return {
    name: LOCK_SWEEP,
    everyMs,
    async run(now) {
      let recovered = 0;
      for (;;) {
        const n = await recoverExpiredLeases(units, now, LEASE_BATCH);
        recovered += n;
        if (n < LEASE_BATCH) return { recovered };
      }
    },
    report: (r) => (r.recovered ? { msg: 'recovered expired task locks' } : null),
  };
}
