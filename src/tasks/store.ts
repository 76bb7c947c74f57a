/**
 * SQL of the task hot paths. Every function is tenant-scoped and batch-shaped: one statement
 * serves any number of tasks or callers, so concurrent calls can share database work.
 */
import { sql, type Kysely } from 'kysely';
import { insertRowsQuery, type Column, type Write } from '../db/bulk.js';
import { PREPARED } from '../db/store.js';

const prepared = sql.raw(PREPARED);

/**
 * The columns of TaskRow, named: prepared statements must not use `*`, or adding a column in a
 * migration would break the statements a running server has prepared ("cached plan must not
 * change result type").
 */
const TASK_ROW_COLUMNS = ['tenant_id', 'id', 'process_id', 'queue', 'error', 'reason', 'data', 'unique_key', 'activation_date', 'deadline', 'urgent',
  'queue_position', 'retry_count', 'locked_by_mate_id', 'locked_by_user_id', 'locked_until', 'expired_lock_mate_id', 'run_id', 'created_at', 'updated_at'] as const;
const taskColumns = (alias: string) => sql.raw(TASK_ROW_COLUMNS.map((c) => `${alias}.${c}`).join(', '));
import type { Queue } from './state-machine.js';

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
}

export interface NewTask {
  processId: number;
  queue: Queue;
  data: Record<string, unknown>;
  uniqueKey: string | null;
  activationDate: Date;
  deadline: Date | null;
  urgent: boolean;
  createdByType: 'mate' | 'user' | 'system';
  createdById: number | null;
  lock?: { mateId: number; until: Date; runId: number };
}

const TASK_COLUMNS: Column[] = [
  ['tenant_id', 'bigint'], ['id', 'bigint'], ['process_id', 'bigint'], ['queue', 'text'], ['data', 'jsonb'], ['unique_key', 'text'],
  ['activation_date', 'timestamptz'], ['deadline', 'timestamptz'], ['urgent', 'boolean'], ['queue_position', 'timestamptz'],
  ['locked_by_mate_id', 'bigint'], ['locked_until', 'timestamptz'], ['run_id', 'bigint'],
  ['created_at', 'timestamptz'], ['created_by_type', 'text'], ['created_by_id', 'bigint'], ['updated_at', 'timestamptz'],
];

/** Inserts tasks; ids are drawn first so they follow the input order. */
export async function insertTasks(db: Kysely<any>, tenantId: number, tasks: NewTask[], now: Date): Promise<TaskRow[]> {
  if (tasks.length === 0) return [];
  const { rows: idRows } = await sql<{ id: number }>`SELECT nextval(pg_get_serial_sequence('tasks', 'id')) AS id FROM generate_series(1, ${tasks.length})`.execute(db);
  const ids = idRows.map((r) => r.id).sort((a, b) => a - b);
  const rows = tasks.map((t, i) => [
    tenantId, ids[i], t.processId, t.queue, t.data, t.uniqueKey, t.activationDate, t.deadline, t.urgent, t.activationDate,
    t.lock?.mateId ?? null, t.lock?.until ?? null, t.lock?.runId ?? null, now, t.createdByType, t.createdById, now,
  ]);
  const result = await insertRowsQuery('tasks', TASK_COLUMNS, rows, sql`RETURNING *`, true).execute(db);
  const byId = new Map((result.rows as TaskRow[]).map((r) => [r.id, r]));
  return ids.map((id) => byId.get(id)!);
}

/** Existing not-Solved tasks holding any of these unique key values. */
export async function findUniqueKeyOwners(db: Kysely<any>, tenantId: number, processId: number, keys: string[]): Promise<Map<string, number>> {
  if (keys.length === 0) return new Map();
  const { rows } = await sql<{ unique_key: string; id: number }>`SELECT unique_key, id FROM tasks
    WHERE tenant_id = ${tenantId} AND process_id = ${processId} AND unique_key = ANY(${keys}::text[])
      AND queue <> 'Solved' AND deleted_at IS NULL`.execute(db);
  return new Map(rows.map((r) => [r.unique_key, r.id]));
}

const takeOrder = (deadlines: boolean) => (deadlines ? sql`urgent DESC, deadline ASC NULLS LAST, queue_position, id` : sql`urgent DESC, queue_position, id`);

/** Orders task rows as the take query does (urgent, deadline when enabled, queue position, id). */
export function compareTakeOrder(deadlines: boolean): (a: TaskRow, b: TaskRow) => number {
  return (a, b) =>
    Number(b.urgent) - Number(a.urgent) ||
    (deadlines ? (a.deadline?.getTime() ?? Infinity) - (b.deadline?.getTime() ?? Infinity) : 0) ||
    a.queue_position.getTime() - b.queue_position.getTime() ||
    a.id - b.id;
}

export interface TakeSlot {
  mateId: number;
  mateName: string;
  requestId: string | null;
}

/**
 * Takes up to one task per slot in ONE statement: picks free Ready tasks in take order with
 * FOR UPDATE SKIP LOCKED (concurrent takers never wait for or get the same row; the ORDER BY is
 * exactly tasks_take_idx / tasks_take_deadline_idx), opens or resumes the process's run and adds
 * the takers to it, locks each task for its slot's Mate, and writes the history rows. Slot i gets
 * the i-th task picked. Returns the locked rows with their slot (1-based); none when nothing was
 * free (then no run is opened).
 */
export async function takeTasks(
  db: Kysely<any>, tenantId: number, processId: number, deadlines: boolean, now: Date, until: Date, slots: TakeSlot[],
): Promise<(TaskRow & { slot: number })[]> {
  const { rows } = await sql<TaskRow & { slot: number }>`${prepared}
    WITH picked AS (
      SELECT id FROM tasks
      WHERE tenant_id = ${tenantId} AND process_id = ${processId} AND queue = 'Ready' AND locked_until IS NULL
        AND deleted_at IS NULL AND activation_date <= ${now}
      ORDER BY ${takeOrder(deadlines)}
      LIMIT ${slots.length}
      FOR UPDATE SKIP LOCKED
    ),
    numbered AS (SELECT id, row_number() OVER () AS rn FROM picked),
    slots AS (
      SELECT * FROM unnest(${slots.map((s) => s.mateId)}::bigint[], ${slots.map((s) => s.mateName)}::text[], ${slots.map((s) => s.requestId)}::text[])
        WITH ORDINALITY AS s(mate_id, mate_name, request_id, rn)
    ),
    run AS (
      INSERT INTO runs (tenant_id, process_id, started_at, last_activity_at, mate_ids)
      SELECT ${tenantId}, ${processId}, ${now}, ${now}, ARRAY(SELECT DISTINCT s.mate_id FROM slots s JOIN numbered n ON n.rn = s.rn)
      WHERE EXISTS (SELECT 1 FROM picked)
      ON CONFLICT (tenant_id, process_id) WHERE finished_at IS NULL
      DO UPDATE SET last_activity_at = GREATEST(runs.last_activity_at, EXCLUDED.last_activity_at),
        mate_ids = ARRAY(SELECT DISTINCT m FROM unnest(runs.mate_ids || EXCLUDED.mate_ids) AS m)
      RETURNING id
    ),
    locked AS (
      UPDATE tasks t SET locked_by_mate_id = s.mate_id, locked_until = ${until}, run_id = (SELECT id FROM run),
        expired_lock_mate_id = NULL, updated_at = ${now}
      FROM numbered n JOIN slots s ON s.rn = n.rn
      WHERE t.tenant_id = ${tenantId} AND t.id = n.id
      RETURNING ${taskColumns('t')}, s.rn AS slot, s.mate_name, s.request_id
    ),
    history AS (
      INSERT INTO task_history (tenant_id, task_id, process_id, at, actor_type, actor_id, actor_name, action, from_queue, to_queue, error, retry_count, request_id, details)
      SELECT l.tenant_id, l.id, l.process_id, ${now}, 'mate', l.locked_by_mate_id, l.mate_name, 'Taken', 'Ready', 'Ready', false, l.retry_count, l.request_id,
        jsonb_build_object('runId', l.run_id, 'lockedUntil', ${until.toISOString()}::text)
      FROM locked l
    )
    SELECT ${sql.raw(TASK_ROW_COLUMNS.join(', '))}, slot FROM locked`.execute(db);
  return rows.map((r) => ({ ...r, slot: Number(r.slot) }));
}

export interface LockedTaskRow extends TaskRow {
  process_key: string;
  retry_allowed: boolean;
  max_retries: number;
  kpi: import('../db/types.js').KpiSettings;
  lock_timeout_seconds: number;
  failure_at: Date | null;
}

/** Reads tasks with their process settings and locks the rows for this transaction. */
export async function selectTasksForUpdate(db: Kysely<any>, tenantId: number, ids: number[]): Promise<Map<number, LockedTaskRow>> {
  if (ids.length === 0) return new Map();
  const { rows } = await sql<LockedTaskRow>`${prepared} SELECT ${taskColumns('t')}, p.process_key, p.retry_allowed, p.max_retries, p.kpi, p.lock_timeout_seconds, p.failure_at
    FROM tasks t JOIN processes p ON p.tenant_id = t.tenant_id AND p.id = t.process_id
    WHERE t.tenant_id = ${tenantId} AND t.id = ANY(${ids}::bigint[]) AND t.deleted_at IS NULL
    ORDER BY t.id
    FOR UPDATE OF t`.execute(db);
  return new Map(rows.map((r) => [r.id, r]));
}

export interface TaskChange {
  id: number;
  queue: Queue;
  error: boolean;
  reason: string | null;
  retryCount: number;
  activationDate: Date;
  queuePosition: Date;
  data: Record<string, unknown>;
  uniqueKey: string | null;
  lockedByMateId: number | null;
  lockedUntil: Date | null;
  runId: number | null;
  expiredLockMateId: number | null;
}

/** Writes the new state of any number of tasks in one statement. */
export function taskChangesWrite(tenantId: number, changes: TaskChange[], now: Date): Write | null {
  if (changes.length === 0) return null;
  const col = <T>(f: (c: TaskChange) => T) => changes.map(f);
  const iso = (d: Date | null) => (d ? d.toISOString() : null);
  return sql`UPDATE tasks t SET queue = v.queue, error = v.error, reason = v.reason, retry_count = v.retry_count,
      activation_date = v.activation_date, queue_position = v.queue_position, data = v.data::jsonb, unique_key = v.unique_key,
      locked_by_mate_id = v.locked_by_mate_id, locked_until = v.locked_until, run_id = v.run_id,
      expired_lock_mate_id = v.expired_lock_mate_id, updated_at = ${now}
    FROM unnest(${col((c) => c.id)}::bigint[], ${col((c) => c.queue)}::text[], ${col((c) => c.error)}::boolean[],
      ${col((c) => c.reason)}::text[], ${col((c) => c.retryCount)}::int[], ${col((c) => iso(c.activationDate))}::timestamptz[],
      ${col((c) => iso(c.queuePosition))}::timestamptz[], ${col((c) => JSON.stringify(c.data))}::text[], ${col((c) => c.uniqueKey)}::text[],
      ${col((c) => c.lockedByMateId)}::bigint[], ${col((c) => iso(c.lockedUntil))}::timestamptz[], ${col((c) => c.runId)}::bigint[],
      ${col((c) => c.expiredLockMateId)}::bigint[])
      AS v(id, queue, error, reason, retry_count, activation_date, queue_position, data, unique_key, locked_by_mate_id, locked_until, run_id, expired_lock_mate_id)
    WHERE t.tenant_id = ${tenantId} AND t.id = v.id`;
}

export function toChange(r: TaskRow): TaskChange {
  return {
    id: r.id, queue: r.queue, error: r.error, reason: r.reason, retryCount: r.retry_count, activationDate: r.activation_date,
    queuePosition: r.queue_position, data: r.data, uniqueKey: r.unique_key, lockedByMateId: r.locked_by_mate_id,
    lockedUntil: r.locked_until, runId: r.run_id, expiredLockMateId: r.expired_lock_mate_id,
  };
}

export async function countUnresolvedErrors(db: Kysely<any>, tenantId: number, processId: number): Promise<number> {
  const { rows } = await sql<{ n: number }>`${prepared} SELECT count(*)::int AS n FROM tasks
    WHERE tenant_id = ${tenantId} AND process_id = ${processId} AND queue = 'Manual' AND error AND deleted_at IS NULL`.execute(db);
  return rows[0].n;
}

export async function hasTakeableTask(db: Kysely<any>, tenantId: number, processId: number, now: Date): Promise<boolean> {
  const { rows } = await sql<{ x: number }>`${prepared} SELECT 1 AS x FROM tasks
    WHERE tenant_id = ${tenantId} AND process_id = ${processId} AND queue = 'Ready' AND locked_until IS NULL
      AND deleted_at IS NULL AND activation_date <= ${now} LIMIT 1`.execute(db);
  return rows.length > 0;
}

/** Expired Mate leases across all tenants, locked for the sweeper (SKIP LOCKED: several sweepers share). */
export async function pickExpiredLocks(db: Kysely<any>, now: Date, limit: number): Promise<{ tenant_id: number; id: number }[]> {
  const { rows } = await sql<{ tenant_id: number; id: number }>`SELECT tenant_id, id FROM tasks
    WHERE locked_until IS NOT NULL AND locked_until <= ${now} AND locked_by_mate_id IS NOT NULL AND deleted_at IS NULL
    ORDER BY locked_until LIMIT ${limit} FOR UPDATE SKIP LOCKED`.execute(db);
  return rows;
}
