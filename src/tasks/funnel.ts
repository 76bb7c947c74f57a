/**
 * The one path for every task change (creates, takes, hand-backs, updates, lock recoveries,
 * people's moves). Whatever the caller, a batch of changes is written by ONE statement: the task
 * rows, and everything derived from the changes: history rows, comments, KPI events, run
 * counters, Failure-state clears. New behaviour that follows task changes (counters, events)
 * plugs in here, as one more derived write, never beside it.
 *
 * Every derived write reads the *change relation*, a relation with one row per changed task and
 * these columns (the contract between the funnel and the derived writes):
 *
 *   tenant_id, task_id, process_id, at                  which task, when
 *   actor_type, actor_id, actor_name, request_id        who (docs/product.md §8)
 *   action                                              the history action ('Solved', 'Taken', …)
 *   from_queue, from_error, queue, error                before → after (from_queue null: created)
 *   reason, comment, retry_count, details (jsonb)       as the history row records them
 *   kpi_outcome, kpi_entries, kpi_seconds               the KPI event, when the change logs one
 *   run_id, mate_id                                     the run and Mate the KPI event counts for
 *   clears_failure                                      a Mate acted on the process (docs/product.md §7)
 *   deleted, urgent, locked, activation_date, deadline  after, as the queue counters key them
 *   from_deleted, from_urgent, from_locked,             before (processes/counters.ts)
 *     from_activation_date, from_deadline, from_updated_at
 *
 * Changes whose new state is computed in code (applyChanges) pass it as arrays; the take, whose
 * rows are picked by the database, builds the relation in SQL (take.ts). Both end in
 * `derivedWrites`, and after commit the funnel publishes what changed to the in-process notifier.
 */
import { sql, type CompiledQuery, type RawBuilder } from 'kysely';
import { PREPARED } from '../db/store.js';
import type { Tx } from '../db/tx.js';
import { callerMateId, type Caller } from '../lib/caller.js';
import { historyFromChanges, commentsFromChanges } from '../history/store.js';
import { kpiEventsFromChanges, type KpiOutcomeName } from '../kpis/rules.js';
import { runActivityFromChanges } from '../runs/store.js';
import { failureClearFromChanges } from '../processes/store.js';
import { eventsFromChanges } from '../events/outbox.js';
import { countDeltasFromChanges } from '../processes/counters.js';
import type { TaskRow } from './store.js';

export interface KpiEntry {
  outcome: KpiOutcomeName;
  entries: number;
  secondsSaved: number;
}

/** One change of one task. */
export interface TaskChange {
  caller: Caller;
  /** the task as read (locked) before the change; null when the change creates it */
  before: TaskRow | null;
  /** the task's whole state afterwards; a created task's id is drawn beforehand (drawTaskIds) */
  after: TaskRow;
  /** the history action */
  action: string;
  /** appended as a comment and kept in the history row */
  comment?: string | null;
  details?: Record<string, unknown> | null;
  /** the KPI event of a hand-back (counted for the run the task was taken in) */
  kpi?: KpiEntry | null;
  /** a Mate's action clears the process's Failure state (docs/product.md §7) */
  clearsFailure?: boolean;
  /**
   * Optimistic changes, computed from a row read without a lock: the row's version (`xmin`) as
   * read. The change is written only if the row still has that version and no one holds its lock
   * (SKIP LOCKED); otherwise it is skipped, with everything derived from it (applyChanges says
   * which). Without it the caller holds the row's lock (read FOR UPDATE).
   */
  expectedVersion?: string | null;
}

/**
 * The writes derived from a change relation named `source`, as CTEs of one statement.
 * `failures_cleared` returns the processes whose Failure state was cleared.
 */
export function derivedWrites(source: string): [name: string, query: RawBuilder<unknown>][] {
  return [
    ['history', historyFromChanges(source)],
    ['comments', commentsFromChanges(source)],
    ['kpi_events', kpiEventsFromChanges(source)],
    ['run_activity', runActivityFromChanges(source)],
    ['failures_cleared', failureClearFromChanges(source)],
    ['outbox', eventsFromChanges(source, 'history')],
    ['count_deltas', countDeltasFromChanges(source)],
  ];
}

export function withDerivedWrites(source: string): RawBuilder<unknown> {
  return sql.join(
    derivedWrites(source).map(([name, q]) => sql`${sql.raw(name)} AS (${q})`),
    sql`,\n`,
  );
}

/** Tells this server process what committed: the processes whose tasks changed (one entry per task), and cleared Failure states. */
export function publishChanges(
  tx: Tx,
  changed: Iterable<{ tenantId: number; processId: number }>,
  failuresCleared: { tenant_id: number; process_id: number }[],
): void {
  const byTenant = new Map<number, { ids: Set<number>; rows: number }>();
  for (const c of changed) {
    let s = byTenant.get(c.tenantId);
    if (!s) byTenant.set(c.tenantId, (s = { ids: new Set(), rows: 0 }));
    s.ids.add(c.processId);
    s.rows++;
  }
  for (const [tenantId, s] of byTenant) tx.publish({ kind: 'tasks', tenantId, processIds: [...s.ids], rows: s.rows });
  for (const f of failuresCleared) tx.publish({ kind: 'process', tenantId: f.tenant_id, processId: f.process_id });
}

// The columns passed as arrays, with their PostgreSQL types. jsonb travels as text.
const INPUT_COLUMNS = [
  ['is_new', 'boolean'],
  ['tenant_id', 'bigint'],
  ['task_id', 'bigint'],
  ['process_id', 'bigint'],
  ['queue', 'text'],
  ['error', 'boolean'],
  ['reason', 'text'],
  ['data', 'text'],
  ['data_changed', 'boolean'],
  ['unique_key', 'text'],
  ['unique_key_changed', 'boolean'],
  ['activation_date', 'timestamptz'],
  ['deadline', 'timestamptz'],
  ['urgent', 'boolean'],
  ['queue_position', 'timestamptz'],
  ['retry_count', 'integer'],
  ['locked_by_mate_id', 'bigint'],
  ['locked_by_user_id', 'bigint'],
  ['locked_until', 'timestamptz'],
  ['expired_lock_mate_id', 'bigint'],
  ['task_run_id', 'bigint'],
  ['deleted_at', 'timestamptz'],
  ['at', 'timestamptz'],
  ['actor_type', 'text'],
  ['actor_id', 'bigint'],
  ['actor_name', 'text'],
  ['request_id', 'text'],
  ['action', 'text'],
  ['from_queue', 'text'],
  ['from_error', 'boolean'],
  ['comment', 'text'],
  ['details', 'text'],
  ['kpi_outcome', 'text'],
  ['kpi_entries', 'integer'],
  ['kpi_seconds', 'bigint'],
  ['run_id', 'bigint'],
  ['mate_id', 'bigint'],
  ['clears_failure', 'boolean'],
  ['expected_version', 'text'],
  ['from_deleted', 'boolean'],
  ['from_urgent', 'boolean'],
  ['from_locked', 'boolean'],
  ['from_activation_date', 'timestamptz'],
  ['from_deadline', 'timestamptz'],
  ['from_updated_at', 'timestamptz'],
] as const;

const iso = (d: Date | null) => (d ? d.toISOString() : null);

function inputRow(c: TaskChange): unknown[] {
  const a = c.after;
  const b = c.before;
  const dataChanged = b === null || a.data !== b.data;
  const uniqueKeyChanged = b === null || a.unique_key !== b.unique_key;
  return [
    b === null,
    a.tenant_id,
    a.id,
    a.process_id,
    a.queue,
    a.error,
    a.reason,
    dataChanged ? JSON.stringify(a.data) : null,
    dataChanged,
    a.unique_key,
    uniqueKeyChanged,
    iso(a.activation_date),
    iso(a.deadline),
    a.urgent,
    iso(a.queue_position),
    a.retry_count,
    a.locked_by_mate_id,
    a.locked_by_user_id,
    iso(a.locked_until),
    a.expired_lock_mate_id,
    a.run_id,
    iso(a.deleted_at),
    iso(c.caller.now),
    c.caller.actor.type,
    c.caller.actor.id,
    c.caller.actor.name,
    c.caller.requestId,
    c.action,
    b?.queue ?? null,
    b?.error ?? false,
    c.comment ?? null,
    c.details ? JSON.stringify(c.details) : null,
    c.kpi?.outcome ?? null,
    c.kpi?.entries ?? null,
    c.kpi?.secondsSaved ?? null,
    c.kpi ? (b?.run_id ?? null) : null,
    c.kpi ? callerMateId(c.caller) : null,
    c.clearsFailure ?? false,
    c.expectedVersion ?? null,
    b !== null && b.deleted_at !== null,
    b?.urgent ?? false,
    b !== null && b.locked_until !== null,
    iso(b?.activation_date ?? null),
    iso(b?.deadline ?? null),
    iso(b?.updated_at ?? null),
  ];
}

// One statement text for every batch (only the arrays vary), so it is prepared once per connection.
// Its parameters are $1…$n, one array per INPUT_COLUMNS entry; it ends inside the WITH list, after
// the change relation `changes` (and `updated`, the ids of the rows updated), so a statement can
// go on with more CTEs (combined.ts: the next take in the same statement).
export const APPLY_PARAMETERS = INPUT_COLUMNS.length + 1;
export const APPLY = (() => {
  const names = INPUT_COLUMNS.map(([n]) => n).join(', ');
  const unnest = INPUT_COLUMNS.map(([, t], i) => `$${i + 1}::${t}[]`).join(', ');
  return sql.raw(`${PREPARED}
  WITH v AS (SELECT * FROM unnest(${unnest}) AS v(${names})),
  -- the changed rows' keys as index conditions (tasks_pkey): joined with v alone, stale statistics
  -- (a new store filling fast) let the planner scan the whole table for a batch of a few rows. The
  -- update then reads by key; the version check (guarded) may still scan until they are fresh
  -- the batch's tenants are the last parameter: a value the statement names, not one it computes,
  -- which is what routes it to the tenant's node under Citus (docs/deployment.md)
  keys AS (SELECT ARRAY(SELECT task_id FROM v) AS ids),
  created AS (
    INSERT INTO tasks (tenant_id, id, process_id, queue, error, reason, data, unique_key, activation_date, deadline, urgent, queue_position,
      retry_count, locked_by_mate_id, locked_by_user_id, locked_until, expired_lock_mate_id, run_id, created_at, created_by_type, created_by_id, updated_at, deleted_at)
    OVERRIDING SYSTEM VALUE
    SELECT tenant_id, task_id, process_id, queue, error, reason, data::jsonb, unique_key, activation_date, deadline, urgent, queue_position,
      retry_count, locked_by_mate_id, locked_by_user_id, locked_until, expired_lock_mate_id, task_run_id, at, actor_type, actor_id, at, deleted_at
    FROM v WHERE is_new
  ),
  -- optimistic changes: the rows that still have the version read and are free; a row another
  -- transaction holds is skipped, never waited for (the other rows' locks the caller holds)
  guarded AS (
    SELECT t.tenant_id, t.id FROM tasks t JOIN v ON v.expected_version IS NOT NULL AND t.tenant_id = v.tenant_id AND t.id = v.task_id
    WHERE t.xmin::text = v.expected_version
      AND t.tenant_id = ANY($${INPUT_COLUMNS.length + 1}::bigint[]) AND t.id = ANY((SELECT ids FROM keys)::bigint[])
    FOR UPDATE OF t SKIP LOCKED
  ),
  updated AS (
    UPDATE tasks t SET queue = v.queue, error = v.error, reason = v.reason,
      data = CASE WHEN v.data_changed THEN v.data::jsonb ELSE t.data END,
      unique_key = CASE WHEN v.unique_key_changed THEN v.unique_key ELSE t.unique_key END,
      activation_date = v.activation_date, deadline = v.deadline, urgent = v.urgent, queue_position = v.queue_position,
      retry_count = v.retry_count, locked_by_mate_id = v.locked_by_mate_id, locked_by_user_id = v.locked_by_user_id,
      locked_until = v.locked_until, expired_lock_mate_id = v.expired_lock_mate_id, run_id = v.task_run_id,
      deleted_at = v.deleted_at, updated_at = v.at
    FROM v WHERE NOT v.is_new AND t.tenant_id = v.tenant_id AND t.id = v.task_id
      AND t.tenant_id = ANY($${INPUT_COLUMNS.length + 1}::bigint[]) AND t.id = ANY((SELECT ids FROM keys)::bigint[])
      AND (v.expected_version IS NULL OR (v.tenant_id, v.task_id) IN (SELECT tenant_id, id FROM guarded))
    RETURNING t.id
  ),
  changes AS (
    SELECT tenant_id, task_id, process_id, at, actor_type, actor_id, actor_name, request_id, action, from_queue, from_error, queue, error,
      reason, comment, retry_count, details::jsonb AS details, kpi_outcome, kpi_entries, kpi_seconds, run_id, mate_id, clears_failure,
      deleted_at IS NOT NULL AS deleted, urgent, locked_until IS NOT NULL AS locked, activation_date, deadline,
      from_deleted, from_urgent, from_locked, from_activation_date, from_deadline, from_updated_at
    FROM v WHERE v.is_new OR v.task_id IN (SELECT id FROM updated)
  ),`);
})();

/** The parameters of APPLY for a batch of changes: one array per input column, then the batch's tenants. */
export function applyParameters(changes: readonly TaskChange[]): unknown[][] {
  const seen = new Set<string>();
  for (const c of changes) {
    const k = `${c.after.tenant_id}:${c.after.id}`;
    if (seen.has(k)) throw new Error(`task ${c.after.id} changes twice in one batch`);
    seen.add(k);
  }
  const rows = changes.map(inputRow);
  return [...INPUT_COLUMNS.map((_, i) => rows.map((r) => r[i])), [...new Set(changes.map((c) => c.after.tenant_id))]];
}

// The statement's text, compiled once (it has no parameters but the arrays).
let applyCompiled: CompiledQuery | null = null;

/**
 * Writes a batch of changes with one statement: task rows (inserted or updated) and every derived
 * write. Each task may change at most once per batch. The caller holds the changed rows' locks
 * (read FOR UPDATE) or, for creates, owns the new ids; optimistic changes (`expectedVersion`)
 * need no lock. Returns the ids of the optimistic changes that were skipped (the row changed since
 * it was read, or another transaction holds it): nothing of theirs was written.
 */
export async function applyChanges(tx: Tx, changes: readonly TaskChange[]): Promise<{ skipped: number[] }> {
  if (changes.length === 0) return { skipped: [] };
  const arrays = applyParameters(changes);
  applyCompiled ??= sql`${APPLY}
  ${withDerivedWrites('changes')}
  SELECT tenant_id, process_id, NULL::bigint AS updated_id FROM failures_cleared
  UNION ALL SELECT NULL, NULL, id FROM updated`.compile(tx.db);
  // the statement's text has the arrays as $1…$n and the tenants as $n+1; Kysely's compile would
  // number its own parameters, and this statement has none but those
  const { rows: out } = await tx.db.executeQuery<{ tenant_id: number | null; process_id: number | null; updated_id: number | null }>({
    ...applyCompiled,
    parameters: arrays,
  } as CompiledQuery<{ tenant_id: number | null; process_id: number | null; updated_id: number | null }>);
  const updated = new Set(out.filter((r) => r.updated_id !== null).map((r) => r.updated_id!));
  const skipped = changes.filter((c) => c.expectedVersion != null && !updated.has(c.after.id)).map((c) => c.after.id);
  const skip = new Set(skipped);
  publishChanges(
    tx,
    changes.filter((c) => !skip.has(c.after.id)).map((c) => ({ tenantId: c.after.tenant_id, processId: c.after.process_id })),
    out.filter((r) => r.tenant_id !== null) as { tenant_id: number; process_id: number }[],
  );
  return { skipped };
}

/**
 * Draws ids for tasks of the tenant about to be created, in ascending order (a batch's ids follow
 * its input order): random (qm_random_id(), migration 0013), so an id reveals nothing of other
 * tenants' creates and needs no counter shared between tenants or nodes. One statement draws a
 * few more candidates than needed and keeps, in the order drawn, those the tenant has not used,
 * each once (OFFSET 0 keeps each candidate one draw, compared and answered alike); in the rare
 * case that too many of them were taken (a tenant holds millions of the 2^52 ids), it draws again
 * for the rest.
 */
export async function drawTaskIds(tx: Tx, tenantId: number, count: number): Promise<number[]> {
  const ids = new Set<number>();
  while (ids.size < count) {
    const want = count - ids.size;
    const { rows } = await sql<{ ids: number[] }>`${sql.raw(PREPARED)}
      SELECT ARRAY(SELECT c.id FROM (SELECT n, qm_random_id() AS id FROM generate_series(1, ${want}::int + 2) AS n OFFSET 0) c
        WHERE NOT EXISTS (SELECT 1 FROM tasks t WHERE t.tenant_id = ${tenantId} AND t.id = c.id) ORDER BY c.n) AS ids`.execute(tx.db);
    for (const id of rows[0].ids) if (ids.size < count) ids.add(Number(id));
  }
  return [...ids].sort((a, b) => a - b);
}
