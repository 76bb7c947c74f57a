/** Closing runs idle past their process's runTimeoutSeconds (docs/product.md §7), in every tenant. */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import type { Job } from './runner.js';

/**
 * One statement. SKIP LOCKED: a run another server process's sweep is closing, or a Mate's call
 * is touching, is left for the next sweep rather than waited for.
 */
export async function closeIdleRuns(db: Kysely<Database>, now: Date): Promise<number> {
  const r = await sql`UPDATE runs SET finished_at = ${now}, finish_reason = 'timeout'
    WHERE (tenant_id, id) IN (
      SELECT r.tenant_id, r.id FROM runs r JOIN processes p ON p.tenant_id = r.tenant_id AND p.id = r.process_id
      WHERE r.finished_at IS NULL AND r.last_activity_at < ${now}::timestamptz - make_interval(secs => p.run_timeout_seconds)
      FOR UPDATE OF r SKIP LOCKED)`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

/** The job; several server processes may run it at once (SKIP LOCKED). */
export function idleRunsJob(db: Kysely<Database>, everyMs: number): Job<{ runsClosed: number }> {
  return {
    name: 'idle-runs',
    everyMs,
    run: async (now) => ({ runsClosed: await closeIdleRuns(db, now) }),
    report: (r) => (r.runsClosed ? { msg: 'closed runs idle past their timeout' } : null),
  };
}
