/** Closing runs idle past their process's runTimeoutSeconds (docs/product.md §7), in every tenant. */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import type { Job } from './runner.js';

export async function closeIdleRuns(db: Kysely<Database>, now: Date): Promise<number> {
  const r = await sql`UPDATE runs r SET finished_at = ${now}, finish_reason = 'timeout'
    FROM processes p
    WHERE r.finished_at IS NULL AND p.tenant_id = r.tenant_id AND p.id = r.process_id
      AND r.last_activity_at < ${now}::timestamptz - make_interval(secs => p.run_timeout_seconds)`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

/** The job; one statement, idempotent: several server processes may run it at once. */
export function idleRunsJob(db: Kysely<Database>, everyMs: number): Job<{ runsClosed: number }> {
  return {
    name: 'idle-runs',
    everyMs,
    run: async (now) => ({ runsClosed: await closeIdleRuns(db, now) }),
    report: (r) => (r.runsClosed ? { msg: 'closed runs idle past their timeout' } : null),
  };
}
