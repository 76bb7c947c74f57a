/**
 * Exports for people (docs/product.md §6, docs/product.md §5.6): every task of a process matching a filter, and
 * KPI events, as CSV text produced chunk by chunk (a keyset over the id, 1000 rows a query), so an
 * export of any size holds one chunk in memory and no long transaction. Before each query the
 * export awaits `between` (the routes pass Turns.background, src/db/turns.ts): on the embedded
 * store's one connection, robots' calls go first.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import type { Caller } from '../lib/caller.js';
import { csvLine } from '../lib/csv.js';
import type { ProcessDef } from '../processes/store.js';
import { filterCondition, type TaskFilter } from './filter.js';
import { taskView, type TaskViewRow } from './view.js';
import { taskColumns } from '../tasks/store.js';

const CHUNK = 1000;

/** Awaited before each chunk's query. */
export type Between = () => Promise<void>;
const noWait: Between = async () => {};

/** CSV of the process's tasks matching `filter`, in id order: system attributes, then one column per field. */
export async function* exportTasksCsv(
  db: Kysely<Database>,
  caller: Caller,
  proc: ProcessDef,
  filter: TaskFilter,
  between: Between = noWait,
): AsyncGenerator<string> {
  const fieldNames = proc.fields.map((f) => f.name);
  yield csvLine([
    'id',
    'queue',
    'error',
    'reason',
    'urgent',
    'retryCount',
    'activationDate',
    'deadline',
    'lockedUntil',
    'createdAt',
    'updatedAt',
    ...fieldNames,
  ]);
  let last = 0;
  for (;;) {
    await between();
    const { rows } = await sql<TaskViewRow>`SELECT ${taskColumns('t')}, NULL::text AS locked_by_name FROM tasks t
      WHERE ${filterCondition(caller.tenantId, proc.id, filter, caller.now)} AND t.id > ${last}
      ORDER BY t.id LIMIT ${CHUNK}`.execute(db);
    if (rows.length === 0) return;
    let out = '';
    for (const r of rows) {
      const t = taskView(r, proc.fields, caller.timeZone);
      const data = fieldNames.length ? fieldNames.map((n) => t.data[n]) : [];
      out += csvLine([
        t.id,
        t.queue,
        t.error,
        t.reason,
        t.urgent,
        t.retryCount,
        t.activationDate,
        t.deadline,
        t.lockedUntil,
        t.createdAt,
        t.updatedAt,
        ...data,
      ]);
    }
    yield out;
    last = Number(rows[rows.length - 1].id);
  }
}

/** CSV of the tenant's KPI events in [from, to), optionally of one process, in id order. */
export async function* exportKpiEventsCsv(
  db: Kysely<Database>,
  tenantId: number,
  range: { from: Date; to: Date; processId?: number },
  between: Between = noWait,
): AsyncGenerator<string> {
  yield csvLine(['id', 'at', 'processId', 'processKey', 'taskId', 'runId', 'mateId', 'outcome', 'entries', 'secondsSaved']);
  let last = 0;
  for (;;) {
    await between();
    const { rows } = await sql<
      Record<string, any>
    >`SELECT k.id, k.at, k.process_id, p.process_key, k.task_id, k.run_id, k.mate_id, k.outcome, k.entries, k.seconds_saved
      FROM kpi_events k JOIN processes p ON p.tenant_id = k.tenant_id AND p.id = k.process_id
      WHERE k.tenant_id = ${tenantId} AND k.at >= ${range.from} AND k.at < ${range.to} AND k.id > ${last}
        ${range.processId !== undefined ? sql`AND k.process_id = ${range.processId}` : sql``}
      ORDER BY k.id LIMIT ${CHUNK}`.execute(db);
    if (rows.length === 0) return;
    yield rows
      .map((r) => csvLine([r.id, r.at, r.process_id, r.process_key, r.task_id, r.run_id, r.mate_id, r.outcome, r.entries, r.seconds_saved]))
      .join('');
    last = Number(rows[rows.length - 1].id);
  }
}
