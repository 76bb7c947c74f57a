/**
 * The bulk jobs job (src/bulk/jobs.ts): every server process purges the jobs that ended more than
 * KEEP_JOBS_MS ago, then claims the unfinished jobs no live process holds (FOR UPDATE SKIP LOCKED:
 * one process claims each) and resumes them. The claimed jobs then run in BulkJobs, not here: the
 * run of this job ends once they are launched, and a shutdown lets them finish their chunk
 * (BulkJobs.close and drain).
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import { KEEP_JOBS_MS, type BulkJobs } from '../bulk/jobs.js';
import { purgeBulkJobs } from '../bulk/store.js';
import type { Job } from './runner.js';

/** Claims and resumes orphaned jobs; returns how many this process took over. */
export function resumeBulkJobs(jobs: BulkJobs): Promise<number> {
  return jobs.resume();
}

export function purgeEndedBulkJobs(db: Kysely<Database>, now: Date): Promise<number> {
  return purgeBulkJobs(db, new Date(now.getTime() - KEEP_JOBS_MS));
}

/** The job; without `bulkJobs` it only purges (nothing in this process runs them). */
export function bulkJobsJob(
  db: Kysely<Database>,
  bulkJobs: BulkJobs | undefined,
  everyMs: number,
): Job<{ bulkJobsPurged: number; bulkJobsResumed: number }> {
  return {
    name: 'bulk-jobs',
    everyMs,
    async run(now) {
      const bulkJobsPurged = await purgeEndedBulkJobs(db, now);
      const bulkJobsResumed = bulkJobs ? await resumeBulkJobs(bulkJobs) : 0;
      return { bulkJobsPurged, bulkJobsResumed };
    },
    report: (r) => (r.bulkJobsResumed ? { msg: 'resumed bulk jobs no live server process held' } : null),
  };
}
