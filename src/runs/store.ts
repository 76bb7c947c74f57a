/** Runs: at most one open run per process (a partial unique index enforces it). */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../db/types.js';
import { PREPARED } from '../db/store.js';

export interface RunRow {
  id: number;
  process_id: number;
  started_at: Date;
  finished_at: Date | null;
  last_activity_at: Date;
  mate_ids: number[];
}

/**
 * The id of a new run of the tenant: random (qm_random_id(), migration 0013), the first of three
 * candidates the tenant has not used. Three taken at once would take a tenant holding a sizeable
 * share of the 2^52 ids; the insert would then fail on its NOT NULL id rather than reuse one.
 */
export function newRunId(tenantId: number | RawBuilder<unknown>): RawBuilder<number> {
  return sql<number>`(SELECT c.id FROM (VALUES (1, qm_random_id()), (2, qm_random_id()), (3, qm_random_id())) AS c(n, id)
    WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.tenant_id = ${tenantId} AND r.id = c.id) ORDER BY c.n LIMIT 1)`;
}

/**
 * Opens the process's run, or resumes the open one and adds the Mate to it. A run idle for longer
 * than the process's runTimeoutSeconds is closed first, so a new one starts.
 */
export async function openOrResumeRun(
  db: Kysely<Database>,
  tenantId: number,
  processId: number,
  mateIds: number[],
  now: Date,
  runTimeoutSeconds: number,
): Promise<number> {
  await closeIdleRun(db, tenantId, processId, now, runTimeoutSeconds);
  const { rows } = await sql<{ id: number }>`
    INSERT INTO runs (tenant_id, id, process_id, started_at, last_activity_at, mate_ids)
    VALUES (${tenantId}, ${newRunId(tenantId)}, ${processId}, ${now}, ${now}, ${mateIds}::bigint[])
    ON CONFLICT (tenant_id, process_id) WHERE finished_at IS NULL
    DO UPDATE SET last_activity_at = GREATEST(runs.last_activity_at, EXCLUDED.last_activity_at),
      mate_ids = ARRAY(SELECT DISTINCT unnest(runs.mate_ids || EXCLUDED.mate_ids) ORDER BY 1)
    RETURNING id`.execute(db);
  return rows[0].id;
}

/** Closes the process's open run if it has been idle longer than runTimeoutSeconds. */
export async function closeIdleRun(
  db: Kysely<Database>,
  tenantId: number,
  processId: number,
  now: Date,
  runTimeoutSeconds: number,
): Promise<void> {
  await sql`${sql.raw(PREPARED)} UPDATE runs SET finished_at = ${now}, finish_reason = 'timeout'
    WHERE tenant_id = ${tenantId} AND process_id = ${processId} AND finished_at IS NULL
      AND last_activity_at < ${new Date(now.getTime() - runTimeoutSeconds * 1000)}`.execute(db);
}

/** Closes the open run of a process (an empty TakeNext); no-op when none is open. */
export async function closeOpenRun(db: Kysely<Database>, tenantId: number, processId: number, now: Date, reason: string): Promise<void> {
  await sql`UPDATE runs SET finished_at = ${now}, finish_reason = ${reason}
    WHERE tenant_id = ${tenantId} AND process_id = ${processId} AND finished_at IS NULL`.execute(db);
}

export async function lockRun(db: Kysely<Database>, tenantId: number, runId: number): Promise<RunRow | null> {
  const { rows } = await sql<RunRow>`SELECT id, process_id, started_at, finished_at, last_activity_at, mate_ids
    FROM runs WHERE tenant_id = ${tenantId} AND id = ${runId} FOR UPDATE`.execute(db);
  return rows[0] ?? null;
}

export async function finishRun(db: Kysely<Database>, tenantId: number, runId: number, now: Date): Promise<void> {
  await sql`UPDATE runs SET finished_at = ${now}, finish_reason = 'finished', last_activity_at = ${now}
    WHERE tenant_id = ${tenantId} AND id = ${runId}`.execute(db);
}

/**
 * Moves the last activity of the runs of the hand-backs among the changes in `source` (the task
 * funnel's change relation), for a run whose last activity is older than the slack: one write for
 * any number of runs. A run's counts by outcome are its KPI events' (migration 0018, the view
 * run_outcomes), so the run row is written at most once a second; every other hand-back leaves it
 * unlocked, and the takes and hand-backs of other server processes do not queue behind it.
 */
export function runActivityFromChanges(source: string): RawBuilder<unknown> {
  const s = sql.raw(source);
  return sql`UPDATE runs r SET last_activity_at = c.at
    FROM (SELECT tenant_id, run_id, max(at) AS at
      FROM ${s} WHERE kpi_outcome IS NOT NULL AND run_id IS NOT NULL GROUP BY tenant_id, run_id) c, processes p
    WHERE r.tenant_id = c.tenant_id AND r.id = c.run_id AND r.finished_at IS NULL AND p.tenant_id = r.tenant_id AND p.id = r.process_id
      AND c.at - r.last_activity_at >= LEAST(${sql.lit(ACTIVITY_SLACK_SECONDS)}, p.run_timeout_seconds / 10.0) * interval '1 second'`;
}

/**
 * A run's last activity is recorded when it moves by at least this many seconds (a tenth of the
 * process's run timeout when that is shorter), so that takes and hand-backs seconds apart need not
 * rewrite the run row: an idle run closes at most this much earlier than its timeout says.
 */
export const ACTIVITY_SLACK_SECONDS = 1;

/** The slack for a process's run timeout, as an interval literal. */
export function activitySlack(runTimeoutSeconds: number): string {
  return `${Math.min(ACTIVITY_SLACK_SECONDS, runTimeoutSeconds / 10)} seconds`;
}
