/**
 * Bulk jobs (src/bulk/jobs.ts): every server process's sweep claims the unfinished jobs no live
 * process holds and resumes them, and purges jobs that ended more than KEEP_JOBS_MS ago.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import { KEEP_JOBS_MS, type BulkJobs } from '../bulk/jobs.js';
import { purgeBulkJobs } from '../bulk/store.js';

/** Claims and resumes orphaned jobs; returns how many this process took over. */
export function resumeBulkJobs(jobs: BulkJobs): Promise<number> {
  return jobs.resume();
}

export function purgeEndedBulkJobs(db: Kysely<Database>, now: Date): Promise<number> {
  return purgeBulkJobs(db, new Date(now.getTime() - KEEP_JOBS_MS));
}
