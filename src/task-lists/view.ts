/**
 * How people see a task (docs/people-api.md): the Task answer of a row, tasks loaded by id, and a
 * task's detail with its history, comments and KPI events. Every query is scoped to the caller's
 * tenant: another tenant's task is simply not found.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import { Refusal } from '../lib/errors.js';
import type { Caller } from '../lib/caller.js';
import { formatTaskValues, type TaskField } from '../processes/task-data.js';
import { loadProcessById } from '../processes/store.js';
import type { Queue } from '../tasks/state-machine.js';
import { taskColumns, type TaskRow } from '../tasks/store.js';

/** A task as the people's API answers it (docs/people-api.md). */
export interface Task {
  id: number;
  processId: number;
  queue: Queue;
  error: boolean;
  reason: string | null;
  urgent: boolean;
  retryCount: number;
  activationDate: string;
  deadline: string | null;
  lockedBy: null | { type: 'mate' | 'user'; id: number; name: string };
  lockedUntil: string | null;
  createdAt: string;
  updatedAt: string;
  data: Record<string, unknown>;
}

/** A task row with the display name of its lock holder. */
export interface TaskViewRow extends TaskRow {
  locked_by_name: string | null;
}

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

/** The Task answer for a row; `fields` are its process's, `timeZone` the tenant's (datetime values). */
export function taskView(row: TaskViewRow, fields: readonly TaskField[], timeZone: string): Task {
  const holder =
    row.locked_by_mate_id !== null
      ? { type: 'mate' as const, id: row.locked_by_mate_id }
      : row.locked_by_user_id !== null
        ? { type: 'user' as const, id: row.locked_by_user_id }
        : null;
  return {
    id: row.id,
    processId: row.process_id,
    queue: row.queue,
    error: row.error,
    reason: row.reason,
    urgent: row.urgent,
    retryCount: row.retry_count,
    activationDate: row.activation_date.toISOString(),
    deadline: iso(row.deadline),
    lockedBy: holder ? { ...holder, name: row.locked_by_name ?? `${holder.type} ${holder.id}` } : null,
    lockedUntil: iso(row.locked_until),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    data: formatTaskValues(fields, row.data, timeZone),
  };
}

export const HOLDER_JOINS = sql`LEFT JOIN mates m ON m.tenant_id = t.tenant_id AND m.id = t.locked_by_mate_id
  LEFT JOIN users u ON u.tenant_id = t.tenant_id AND u.id = t.locked_by_user_id`;
export const HOLDER_NAME = sql`COALESCE(NULLIF(m.display_name, ''), m.username, NULLIF(u.display_name, ''), u.username) AS locked_by_name`;

/** Tasks by id as Task answers, in the order asked (missing ones left out). */
export async function loadTaskViews(
  db: Kysely<Database>,
  caller: Caller,
  ids: readonly number[],
  opts: { includeDeleted?: boolean } = {},
): Promise<Task[]> {
  if (ids.length === 0) return [];
  const { rows } = await sql<TaskViewRow>`SELECT ${taskColumns('t')}, ${HOLDER_NAME} FROM tasks t ${HOLDER_JOINS}
    WHERE t.tenant_id = ${caller.tenantId} AND t.id = ANY(${[...ids]}::bigint[])
      ${opts.includeDeleted ? sql`` : sql`AND t.deleted_at IS NULL`}`.execute(db);
  const fields = new Map<number, readonly TaskField[]>();
  for (const r of rows) {
    if (!fields.has(r.process_id)) fields.set(r.process_id, (await loadProcessById(db, caller.tenantId, r.process_id))?.fields ?? []);
  }
  const byId = new Map(rows.map((r) => [r.id, taskView(r, fields.get(r.process_id)!, caller.timeZone)]));
  return ids.flatMap((id) => byId.get(id) ?? []);
}

export interface HistoryRow {
  id: number;
  at: string;
  actor: { type: 'mate' | 'user' | 'system'; id: number | null; name: string };
  action: string;
  fromQueue: string | null;
  toQueue: string | null;
  error: boolean;
  reason: string | null;
  comment: string | null;
  retryCount: number;
  requestId: string | null;
  details: Record<string, unknown> | null;
}

export interface Comment {
  id: number;
  at: string;
  author: { type: 'mate' | 'user' | 'system'; id: number | null; name: string };
  text: string;
}

export interface KpiEventView {
  id: number;
  at: string;
  outcome: string;
  entries: number;
  secondsSaved: number;
  runId: number | null;
  mateId: number | null;
}

export interface TaskDetail extends Task {
  history: HistoryRow[];
  comments: Comment[];
  kpiEvents: KpiEventView[];
}

/** A task with its whole history, comments and KPI events; `task_not_found` for a missing, deleted or other tenant's id. */
export async function getTaskDetail(db: Kysely<Database>, caller: Caller, taskId: number): Promise<TaskDetail> {
  const [task] = Number.isSafeInteger(taskId) && taskId > 0 ? await loadTaskViews(db, caller, [taskId]) : [];
  if (!task) throw new Refusal('task_not_found', `Task ${taskId} was not found`);
  const t = caller.tenantId;
  const [history, comments, kpi] = await Promise.all([
    db.selectFrom('task_history').selectAll().where('tenant_id', '=', t).where('task_id', '=', taskId).orderBy('id').execute(),
    db.selectFrom('task_comments').selectAll().where('tenant_id', '=', t).where('task_id', '=', taskId).orderBy('id').execute(),
    db.selectFrom('kpi_events').selectAll().where('tenant_id', '=', t).where('task_id', '=', taskId).orderBy('id').execute(),
  ]);
  return {
    ...task,
    history: history.map((h) => ({
      id: h.id,
      at: h.at.toISOString(),
      actor: { type: h.actor_type, id: h.actor_id, name: h.actor_name },
      action: h.action,
      fromQueue: h.from_queue,
      toQueue: h.to_queue,
      error: h.error,
      reason: h.reason,
      comment: h.comment,
      retryCount: h.retry_count,
      requestId: h.request_id,
      details: (h.details as Record<string, unknown> | null) ?? null,
    })),
    comments: comments.map((c) => ({
      id: c.id,
      at: c.created_at.toISOString(),
      author: { type: c.author_type, id: c.author_id, name: c.author_name },
      text: c.body,
    })),
    kpiEvents: kpi.map((k) => ({
      id: k.id,
      at: k.at.toISOString(),
      outcome: k.outcome,
      entries: k.entries,
      secondsSaved: Number(k.seconds_saved),
      runId: k.run_id,
      mateId: k.mate_id,
    })),
  };
}
