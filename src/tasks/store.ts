/**
 * Reading and locking tasks. Every function is tenant-scoped and batch-shaped: one statement
 * serves any number of tasks or callers. Writes go through the funnel (funnel.ts).
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import { PREPARED } from '../db/store.js';
import type { Database, KpiSettings } from '../db/types.js';
import type { Queue } from './state-machine.js';
import type { Caller } from '../lib/caller.js';
import { hasValue } from '../processes/editing.js';

const prepared = sql.raw(PREPARED);

/**
 * The columns of TaskRow, named: prepared statements must not use `*`, or adding a column in a
 * migration would break the statements a running server has prepared ("cached plan must not
 * change result type").
 */
export const TASK_ROW_COLUMNS = [
  'tenant_id',
  'id',
  'process_id',
  'queue',
  'error',
  'reason',
  'data',
  'unique_key',
  'activation_date',
  'deadline',
  'urgent',
  'queue_position',
  'retry_count',
  'locked_by_mate_id',
  'locked_by_user_id',
  'locked_until',
  'expired_lock_mate_id',
  'run_id',
  'created_at',
  'updated_at',
  'deleted_at',
] as const;
export const taskColumns = (alias: string) => sql.raw(TASK_ROW_COLUMNS.map((c) => `${alias}.${c}`).join(', '));

/** A task as the services see it: every column of TASK_ROW_COLUMNS. */
export interface TaskRow {
  tenant_id: number;
  id: number;
  process_id: number;
  queue: Queue;
  error: boolean;
  reason: string | null;
  data: Record<string, unknown>;
  unique_key: string | null;
  activation_date: Date;
  deadline: Date | null;
  urgent: boolean;
  queue_position: Date;
  retry_count: number;
  locked_by_mate_id: number | null;
  locked_by_user_id: number | null;
  locked_until: Date | null;
  expired_lock_mate_id: number | null;
  run_id: number | null;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

/** Existing not-Solved tasks holding any of these unique key values. */
export async function findUniqueKeyOwners(
  db: Kysely<Database>,
  tenantId: number,
  processId: number,
  keys: string[],
): Promise<Map<string, number>> {
  if (keys.length === 0) return new Map();
  const { rows } = await sql<{ unique_key: string; id: number }>`SELECT unique_key, id FROM tasks
    WHERE tenant_id = ${tenantId} AND process_id = ${processId} AND unique_key = ANY(${keys}::text[])
      AND queue <> 'Solved' AND deleted_at IS NULL`.execute(db);
  return new Map(rows.map((r) => [r.unique_key, r.id]));
}

/**
 * The take order (docs/product.md §5.2): exactly the ORDER BY of tasks_take_idx /
 * tasks_take_deadline_idx. The last tie-break is `seq`, the order of creation (ids reveal no
 * order, migration 0002).
 */
export const takeOrder = (deadlines: boolean) =>
  deadlines ? sql`urgent DESC, deadline ASC NULLS LAST, queue_position, seq` : sql`urgent DESC, queue_position, seq`;

/** A task with the settings of its process that a hand-back needs. */
export interface LockedTaskRow extends TaskRow {
  process_key: string;
  retry_allowed: boolean;
  max_retries: number;
  kpi: KpiSettings;
  lock_timeout_seconds: number;
}

/** How a hand-back reads its tasks (hand-back.ts). */
export type ReadMode =
  /** lock the rows for this transaction, waiting for other holders */
  | 'lock'
  /** lock the rows that are free; rows another transaction holds are left out (busy) */
  | 'lock-free'
  /** no lock: each row with its version (`xmin`), for an optimistic change (funnel.ts) */
  | 'version';

export interface ReadTaskRow extends LockedTaskRow {
  /** the row's version as read ('version' mode) */
  version?: string;
}

const READS = {
  lock: sql`FOR UPDATE OF t`,
  'lock-free': sql`FOR UPDATE OF t SKIP LOCKED`,
  version: sql``,
};

/** Reads tasks with their process settings and locks the rows for this transaction. */
export async function selectTasksForUpdate(db: Kysely<Database>, tenantId: number, ids: number[]): Promise<Map<number, LockedTaskRow>> {
  return selectTasks(db, tenantId, ids, 'lock');
}

/** Reads tasks with their process settings, locked or with their versions (ReadMode). */
export async function selectTasks(
  db: Kysely<Database>,
  tenantId: number,
  ids: number[],
  mode: ReadMode,
): Promise<Map<number, ReadTaskRow>> {
  if (ids.length === 0) return new Map();
  const { rows } = await sql<ReadTaskRow>`${prepared} SELECT ${taskColumns('t')}, p.process_key, p.retry_allowed, p.max_retries, p.kpi,
      p.lock_timeout_seconds${mode === 'version' ? sql`, t.xmin::text AS version` : sql``}
    FROM tasks t JOIN processes p ON p.tenant_id = t.tenant_id AND p.id = t.process_id
    WHERE t.tenant_id = ${tenantId} AND t.id = ANY(${ids}::bigint[]) AND t.deleted_at IS NULL
    ORDER BY t.id
    ${READS[mode]}`.execute(db);
  return new Map(rows.map((r) => [r.id, r]));
}

/**
 * Reads one task and locks it only when `lockIf` (a condition on `t`: "this Mate holds it", say)
 * holds of it. A task it does not hold of is read without its lock (`locked: false`): a call
 * that will be refused never takes the row, even for an instant, from the one who holds it. A
 * row that changes between the locking read and the plain one is read again; one that keeps
 * changing is locked as any change locks it.
 */
export async function lockTaskIf(
  db: Kysely<Database>,
  tenantId: number,
  taskId: number,
  lockIf: RawBuilder<unknown>,
): Promise<{ row: LockedTaskRow; locked: boolean } | undefined> {
  if (!(taskId > 0 && Number.isSafeInteger(taskId))) return undefined;
  const cols = sql`${taskColumns('t')}, p.process_key, p.retry_allowed, p.max_retries, p.kpi, p.lock_timeout_seconds`;
  const from = sql`FROM tasks t JOIN processes p ON p.tenant_id = t.tenant_id AND p.id = t.process_id
    WHERE t.tenant_id = ${tenantId} AND t.id = ${taskId} AND t.deleted_at IS NULL`;
  for (let attempt = 0; attempt < 3; attempt++) {
    const { rows: locked } = await sql<LockedTaskRow>`${prepared} SELECT ${cols} ${from} AND (${lockIf}) FOR UPDATE OF t`.execute(db);
    if (locked.length) return { row: locked[0], locked: true };
    const { rows: read } = await sql<
      LockedTaskRow & { lockable: boolean }
    >`${prepared} SELECT ${cols}, coalesce((${lockIf}), false) AS lockable
      ${from}`.execute(db);
    if (read.length === 0) return undefined;
    const { lockable, ...row } = read[0];
    if (!lockable) return { row, locked: false };
  }
  const row = (await selectTasks(db, tenantId, [taskId], 'lock')).get(taskId);
  return row && { row, locked: true };
}

const LOCK_NOT_AVAILABLE = '55P03';
const DEADLOCK = '40P01';

/**
 * Waits up to `ms` in all for task rows another transaction holds, locking each (in id order) as
 * it is freed: a row held for an instant (a statement in flight) is then served, a row held
 * longer is not. Answers the rows locked, read as they are now. Each wait runs in a savepoint,
 * so one that times out undoes only itself; the transaction's lock_timeout is as before after.
 */
export async function lockTasksWithin(
  db: Kysely<Database>,
  tenantId: number,
  ids: number[],
  ms: number,
): Promise<Map<number, ReadTaskRow>> {
  const out = new Map<number, ReadTaskRow>();
  if (ids.length === 0 || ms <= 0) return out;
  const deadline = performance.now() + ms;
  const { rows } = await sql<{ v: string }>`SELECT current_setting('lock_timeout') AS v`.execute(db);
  const before = rows[0].v;
  for (const id of [...ids].sort((a, b) => a - b)) {
    const left = Math.floor(deadline - performance.now());
    if (left < 1) break;
    await sql`SAVEPOINT qm_row_wait`.execute(db);
    try {
      await sql`SELECT set_config('lock_timeout', ${`${left}ms`}, true)`.execute(db);
      const row = (await selectTasks(db, tenantId, [id], 'lock')).get(id);
      await sql`RELEASE SAVEPOINT qm_row_wait`.execute(db);
      if (row) out.set(id, row);
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code !== LOCK_NOT_AVAILABLE && code !== DEADLOCK) throw err;
      await sql`ROLLBACK TO SAVEPOINT qm_row_wait`.execute(db);
    }
  }
  await sql`SELECT set_config('lock_timeout', ${before}, true)`.execute(db);
  return out;
}

/** Which of these tasks exist (not deleted), without waiting for any lock. */
export async function existingTaskIds(db: Kysely<Database>, tenantId: number, ids: number[]): Promise<Set<number>> {
  if (ids.length === 0) return new Set();
  const { rows } = await sql<{ id: number }>`${prepared} SELECT id FROM tasks
    WHERE tenant_id = ${tenantId} AND id = ANY(${ids}::bigint[]) AND deleted_at IS NULL`.execute(db);
  return new Set(rows.map((r) => r.id));
}

export async function countUnresolvedErrors(db: Kysely<Database>, tenantId: number, processId: number): Promise<number> {
  const { rows } = await sql<{ n: number }>`${prepared} SELECT count(*)::int AS n FROM tasks
    WHERE tenant_id = ${tenantId} AND process_id = ${processId} AND queue = 'Manual' AND error AND deleted_at IS NULL`.execute(db);
  return rows[0].n;
}

export async function hasTakeableTask(db: Kysely<Database>, tenantId: number, processId: number, now: Date): Promise<boolean> {
  const { rows } = await sql<{ x: number }>`${prepared} SELECT 1 AS x FROM tasks
    WHERE tenant_id = ${tenantId} AND process_id = ${processId} AND queue = 'Ready' AND locked_until IS NULL
      AND deleted_at IS NULL AND activation_date <= ${now} LIMIT 1`.execute(db);
  return rows.length > 0;
}

/** Expired Mate leases across all tenants, locked for the sweeper (SKIP LOCKED: several sweepers share). */
export async function pickExpiredLocks(db: Kysely<Database>, now: Date, limit: number): Promise<{ tenant_id: number; id: number }[]> {
  const { rows } = await sql<{ tenant_id: number; id: number }>`SELECT tenant_id, id FROM tasks
    WHERE locked_until IS NOT NULL AND locked_until <= ${now} AND locked_by_mate_id IS NOT NULL AND deleted_at IS NULL
    ORDER BY locked_until LIMIT ${limit} FOR UPDATE SKIP LOCKED`.execute(db);
  return rows;
}

/**
 * A renamed field's values follow it (src/tasks/fields.ts): the key `from` of every task of the
 * process becomes `to`, in one statement, with one history row per task by the acting person.
 * Returns how many tasks held the key.
 */
export async function renameDataKey(db: Kysely<Database>, caller: Caller, processId: number, from: string, to: string): Promise<number> {
  const details = JSON.stringify({ field: { from, to } });
  const { rows } = await sql<{ n: number }>`WITH renamed AS (
      UPDATE tasks t SET data = (t.data - ${from}::text) || jsonb_build_object(${to}::text, t.data -> ${from}::text)
      WHERE t.tenant_id = ${caller.tenantId} AND t.process_id = ${processId} AND t.data ? ${from}::text
      RETURNING t.id, t.queue, t.error, t.retry_count
    ), logged AS (
      INSERT INTO task_history (tenant_id, task_id, process_id, at, actor_type, actor_id, actor_name, action, from_queue, to_queue, error,
        retry_count, request_id, details)
      SELECT ${caller.tenantId}, r.id, ${processId}, ${caller.now}, ${caller.actor.type}, ${caller.actor.id}, ${caller.actor.name},
        'Field renamed', r.queue, r.queue, r.error, r.retry_count, ${caller.requestId}, ${details}::jsonb
      FROM renamed r
    )
    SELECT count(*)::int AS n FROM renamed`.execute(db);
  return rows[0].n;
}

/**
 * Ids of the process's NeedsData tasks nobody holds that hold a value for every one of
 * `required` (field names): complete under the process's fields as they are now. Locks them.
 */
export async function completeNeedsDataIds(
  db: Kysely<Database>,
  tenantId: number,
  processId: number,
  required: string[],
  now: Date,
): Promise<number[]> {
  const filled = required.length
    ? sql.join(
        required.map((name) => sql`(${hasValue(name)})`),
        sql` AND `,
      )
    : sql`true`;
  const { rows } = await sql<{ id: number }>`SELECT t.id FROM tasks t
    WHERE t.tenant_id = ${tenantId} AND t.process_id = ${processId} AND t.queue = 'NeedsData' AND t.deleted_at IS NULL
      AND (t.locked_until IS NULL OR t.locked_until <= ${now}) AND ${filled}
    ORDER BY t.id FOR UPDATE`.execute(db);
  return rows.map((r) => r.id);
}
