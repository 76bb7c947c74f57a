/**
 * Queue counters (docs/operations.md "Queue counters"): per process, how many tasks are in each queue, urgent,
 * locked, with a deadline, kept by the task funnel in the same statement as the task changes.
 *
 * Writes are append-only: each funnel statement inserts its net deltas (grouped by process, key
 * and bucket, zeros skipped) into queue_count_deltas, and the fold job (src/maintenance/
 * queue-counters.ts) moves them into queue_counts. A count is queue_counts + SUM(deltas), read in
 * one statement, so it is exact at any moment, folded or not. Updating one counter row per
 * process instead would make every take and hand-back of a process wait for the previous one's
 * commit on that row (docs/operations.md "Queue counters").
 *
 * The keys of a task and their buckets are defined once, by qm_count_keys (migration 0006), which
 * both the backfill and the derived write call.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../db/types.js';

/**
 * Every counter row as it stands, the one definition of a count: the folded rows and the deltas
 * not folded yet, to be summed per key. `where` filters both (unqualified tenant_id/process_id).
 */
export function counterRows(where: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`(SELECT tenant_id, process_id, kind, bucket, n FROM queue_counts WHERE ${where}
    UNION ALL SELECT tenant_id, process_id, kind, bucket, n FROM queue_count_deltas WHERE ${where})`;
}

/**
 * The counter deltas of a change relation (funnel.ts): minus the keys of each task's state before
 * (none for a created task), plus the keys after, netted per process, key and bucket. A change
 * that moves no key (a comment, an edit of data) writes nothing.
 */
export function countDeltasFromChanges(source: string): RawBuilder<unknown> {
  const s = sql.raw(source);
  return sql`INSERT INTO queue_count_deltas (tenant_id, process_id, kind, bucket, n)
    SELECT c.tenant_id, c.process_id, k.kind, k.bucket, sum(k.n)
    FROM ${s} c CROSS JOIN LATERAL (
      SELECT b.kind, b.bucket, -1 AS n FROM qm_count_keys(c.from_queue, c.from_error, c.from_deleted, c.from_urgent, c.from_locked,
        c.from_activation_date, c.from_deadline, c.from_updated_at) b
      UNION ALL
      SELECT a.kind, a.bucket, 1 FROM qm_count_keys(c.queue, c.error, c.deleted, c.urgent, c.locked, c.activation_date, c.deadline, c.at) a
    ) k
    GROUP BY 1, 2, 3, 4 HAVING sum(k.n) <> 0`;
}

/** The counts of one process at a moment (the overview's QueueCounts, and whether a task is takeable). */
export interface CounterValues {
  ready: number;
  needsData: number;
  needsApproval: number;
  manual: number;
  error: number;
  solved: number;
  locked: number;
  urgent: number;
  overdue: number;
  notActiveYet: number;
  /** a Ready, active, free task exists (OkToRun's tasksAvailable) */
  takeable: boolean;
}

/**
 * The counts of every process of the tenant (or of one), in ONE statement, so folded counts,
 * deltas and the time-dependent parts come from one snapshot:
 * - ready / notActiveYet: the Ready counts of past bins (and '-infinity': activation reached when
 *   written) are active; of the current 15-minute bin only the tasks activated by now
 *   (tasks_activation_idx, the current bin's scheduled tasks only); later bins are not active yet;
 * - overdue: likewise from the deadline counts and tasks_deadline_idx;
 * - solved: Solved counts of the bins since `startOfToday` (local midnight is a bin boundary);
 * - locked: tasks holding a lock minus those whose lease has run out but the sweeper has not
 *   recovered yet (tasks_locked_until_idx; the sweeper keeps that set small);
 * - takeable: an EXISTS over tasks_take_idx per process (it stops at the first active task).
 */
export async function readQueueCounters(
  db: Kysely<Database>,
  tenantId: number,
  now: Date,
  startOfToday: Date,
  processId?: number,
): Promise<Map<number, CounterValues>> {
  const only = (alias: string) => (processId === undefined ? sql`` : sql`AND ${sql.ref(`${alias}.process_id`)} = ${processId}`);
  const { rows } = await sql<{
    process_id: number;
    ready_past: string | null;
    ready_all: string | null;
    ready_now: string | null;
    needs_data: string | null;
    needs_approval: string | null;
    manual: string | null;
    error: string | null;
    solved: string | null;
    locked: string | null;
    expired: string | null;
    urgent: string | null;
    overdue_past: string | null;
    overdue_now: string | null;
    takeable: boolean;
  }>`
    WITH bin AS (SELECT qm_count_bucket(${now}::timestamptz) AS start),
    c AS (
      SELECT process_id, kind, bucket, n FROM ${counterRows(
        processId === undefined ? sql`tenant_id = ${tenantId}` : sql`tenant_id = ${tenantId} AND process_id = ${processId}`,
      )} u
    ),
    sums AS (
      SELECT c.process_id,
        sum(n) FILTER (WHERE kind = 'Ready' AND bucket < bin.start) AS ready_past,
        sum(n) FILTER (WHERE kind = 'Ready') AS ready_all,
        sum(n) FILTER (WHERE kind = 'NeedsData') AS needs_data,
        sum(n) FILTER (WHERE kind = 'NeedsApproval') AS needs_approval,
        sum(n) FILTER (WHERE kind = 'Manual') AS manual,
        sum(n) FILTER (WHERE kind = 'ManualError') AS error,
        sum(n) FILTER (WHERE kind = 'Solved' AND bucket >= ${startOfToday}::timestamptz) AS solved,
        sum(n) FILTER (WHERE kind = 'locked') AS locked,
        sum(n) FILTER (WHERE kind = 'urgent') AS urgent,
        sum(n) FILTER (WHERE kind = 'deadline' AND bucket < bin.start) AS overdue_past
      FROM c, bin GROUP BY c.process_id
    ),
    ready_now AS (
      SELECT t.process_id, count(*) AS n FROM tasks t, bin
      WHERE t.tenant_id = ${tenantId} AND t.queue = 'Ready' AND t.deleted_at IS NULL AND t.activation_date > t.updated_at
        AND t.activation_date >= bin.start AND t.activation_date <= ${now}::timestamptz ${only('t')}
      GROUP BY t.process_id
    ),
    overdue_now AS (
      SELECT t.process_id, count(*) AS n FROM tasks t, bin
      WHERE t.tenant_id = ${tenantId} AND t.queue <> 'Solved' AND t.deleted_at IS NULL AND t.deadline >= t.updated_at
        AND t.deadline >= bin.start AND t.deadline < ${now}::timestamptz ${only('t')}
      GROUP BY t.process_id
    ),
    expired AS (
      SELECT t.process_id, count(*) AS n FROM tasks t
      WHERE t.locked_until <= ${now}::timestamptz AND t.tenant_id = ${tenantId} AND t.queue <> 'Solved' AND t.deleted_at IS NULL ${only('t')}
      GROUP BY t.process_id
    )
    SELECT p.id AS process_id, s.ready_past, s.ready_all, rn.n AS ready_now, s.needs_data, s.needs_approval, s.manual, s.error,
      s.solved, s.locked, e.n AS expired, s.urgent, s.overdue_past, o.n AS overdue_now,
      EXISTS (SELECT 1 FROM tasks t WHERE t.tenant_id = p.tenant_id AND t.process_id = p.id AND t.queue = 'Ready'
        AND t.locked_until IS NULL AND t.deleted_at IS NULL AND t.activation_date <= ${now}::timestamptz) AS takeable
    FROM processes p
    LEFT JOIN sums s ON s.process_id = p.id
    LEFT JOIN ready_now rn ON rn.process_id = p.id
    LEFT JOIN overdue_now o ON o.process_id = p.id
    LEFT JOIN expired e ON e.process_id = p.id
    WHERE p.tenant_id = ${tenantId} ${processId === undefined ? sql`` : sql`AND p.id = ${processId}`}`.execute(db);
  const num = (v: string | number | null) => Number(v ?? 0);
  const out = new Map<number, CounterValues>();
  for (const r of rows) {
    const active = num(r.ready_past) + num(r.ready_now);
    out.set(Number(r.process_id), {
      ready: active,
      needsData: num(r.needs_data),
      needsApproval: num(r.needs_approval),
      manual: num(r.manual),
      error: num(r.error),
      solved: num(r.solved),
      locked: num(r.locked) - num(r.expired),
      urgent: num(r.urgent),
      overdue: num(r.overdue_past) + num(r.overdue_now),
      notActiveYet: num(r.ready_all) - active,
      takeable: r.takeable,
    });
  }
  return out;
}
