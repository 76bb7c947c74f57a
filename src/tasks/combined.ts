/**
 * The combined call (a hand-back with `takeNext`, docs/mate-api.md "Queuemate extensions") as ONE
 * statement: the hand-backs' optimistic write (funnel.ts APPLY), then, for each hand-back that was
 * written, the next task of the process taken as TakeNext takes it (take.ts), and every derived
 * write of both, once, over both change relations. One round trip and one commit per batch instead
 * of two of each; the hand-back commits with it when there is nothing to take.
 */
import { sql, type CompiledQuery } from 'kysely';
import type { Tx } from '../db/tx.js';
import type { ProcessDef } from '../processes/store.js';
import { runActivityFromChanges, activitySlack, newRunId } from '../runs/store.js';
import { APPLY, APPLY_PARAMETERS, applyParameters, derivedWrites, publishChanges, type TaskChange } from './funnel.js';
import { takeOrder, TASK_ROW_COLUMNS, type TaskRow } from './store.js';

/** A taken task with its row version (take.ts TakenRow). */
type TakenRow = TaskRow & { version: string };

export interface CombinedSlot {
  /** the hand-back this take follows: taken only if that hand-back is written (null: a take of its own) */
  afterTaskId: number | null;
  mateId: number;
  mateName: string;
  requestId: string | null;
}

const texts = new Map<boolean, CompiledQuery>();

/** The statement for a process with or without deadlines (the take order differs). */
function statement(tx: Tx, deadlines: boolean): CompiledQuery {
  let q = texts.get(deadlines);
  if (q) return q;
  const n = APPLY_PARAMETERS;
  const p = (i: number) => sql.raw(`$${n + i}`);
  const [slotTasks, slotMates, slotNames, slotRequests, tenant, proc, now, until, slack, untilText] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(
    p,
  );
  const order = takeOrder(deadlines);
  const writes = derivedWrites('all_changes').map(([name, query]) =>
    // the last activity of the run the take's upsert rewrote is that upsert's (a row changes once per statement)
    name === 'run_activity' ? ([name, runActivityFromChanges('uncounted')] as const) : ([name, query] as const),
  );
  q = sql`${APPLY}
  -- the takers: the takes' slots and one per hand-back that was written, numbered in their order
  hb_slots AS (
    SELECT s.mate_id, s.mate_name, s.request_id, row_number() OVER (ORDER BY s.ord) AS rn
    FROM unnest(${slotTasks}::bigint[], ${slotMates}::bigint[], ${slotNames}::text[], ${slotRequests}::text[])
      WITH ORDINALITY AS s(task_id, mate_id, mate_name, request_id, ord)
    WHERE s.task_id IS NULL OR s.task_id IN (SELECT id FROM updated)
  ),
  picked AS (
    SELECT id, urgent, deadline, queue_position, seq, updated_at FROM tasks
    WHERE tenant_id = ${tenant}::bigint AND process_id = ${proc}::bigint AND queue = 'Ready' AND locked_until IS NULL
      AND deleted_at IS NULL AND activation_date <= ${now}::timestamptz
    ORDER BY ${order}
    LIMIT (SELECT count(*) FROM hb_slots)
    FOR UPDATE SKIP LOCKED
  ),
  numbered AS (SELECT id, row_number() OVER (ORDER BY ${order}) AS rn FROM picked),
  -- the open run, share-locked: it stays open until this commits (a FinishRun or a timeout waits),
  -- while the takes of other server processes share the lock instead of queueing for it
  open_run AS (
    SELECT id, mate_ids, last_activity_at FROM runs
    WHERE tenant_id = ${tenant}::bigint AND process_id = ${proc}::bigint AND finished_at IS NULL FOR SHARE
  ),
  hb_mates AS (SELECT ARRAY(SELECT DISTINCT s.mate_id FROM hb_slots s JOIN numbered n ON n.rn = s.rn) AS ids),
  -- take.ts's upsert of the open run, written only when it gains a Mate or its last activity is
  -- older than the slack
  run AS (
    INSERT INTO runs (tenant_id, id, process_id, started_at, last_activity_at, mate_ids)
    SELECT ${tenant}::bigint, ${newRunId(tenant)}, ${proc}::bigint, ${now}::timestamptz, ${now}::timestamptz, (SELECT ids FROM hb_mates)
    WHERE EXISTS (SELECT 1 FROM picked)
      AND NOT EXISTS (SELECT 1 FROM open_run o WHERE o.mate_ids @> (SELECT ids FROM hb_mates)
        AND o.last_activity_at >= ${now}::timestamptz - ${slack}::interval)
    ON CONFLICT (tenant_id, process_id) WHERE finished_at IS NULL
    DO UPDATE SET
      last_activity_at = CASE WHEN runs.last_activity_at >= EXCLUDED.last_activity_at - ${slack}::interval THEN runs.last_activity_at
        ELSE EXCLUDED.last_activity_at END,
      mate_ids = ARRAY(SELECT DISTINCT m FROM unnest(runs.mate_ids || EXCLUDED.mate_ids) AS m)
    WHERE NOT (runs.mate_ids @> EXCLUDED.mate_ids AND runs.last_activity_at >= EXCLUDED.last_activity_at - ${slack}::interval
      AND runs.id IN (SELECT id FROM open_run))
    RETURNING id
  ),
  locked AS (
    UPDATE tasks t SET locked_by_mate_id = s.mate_id, locked_until = ${until}::timestamptz,
      run_id = COALESCE((SELECT id FROM run), (SELECT id FROM open_run)),
      expired_lock_mate_id = NULL, updated_at = ${now}::timestamptz
    FROM numbered n JOIN hb_slots s ON s.rn = n.rn
    WHERE t.tenant_id = ${tenant}::bigint AND t.id = n.id AND t.id = ANY(ARRAY(SELECT id FROM picked))
    RETURNING ${sql.raw(TASK_ROW_COLUMNS.map((c) => `t.${c}`).join(', '))}, t.xmin::text AS version, s.rn AS slot, s.mate_name, s.request_id
  ),
  take_changes AS (
    SELECT l.tenant_id, l.id AS task_id, l.process_id, ${now}::timestamptz AS at, 'mate'::text AS actor_type, l.locked_by_mate_id AS actor_id,
      l.mate_name AS actor_name, l.request_id, 'Taken'::text AS action, 'Ready'::text AS from_queue, false AS from_error, l.queue, l.error,
      NULL::text AS reason, NULL::text AS comment, l.retry_count,
      jsonb_build_object('runId', l.run_id, 'lockedUntil', ${untilText}::text) AS details,
      NULL::text AS kpi_outcome, NULL::integer AS kpi_entries, NULL::bigint AS kpi_seconds, NULL::bigint AS run_id, NULL::bigint AS mate_id,
      false AS clears_failure,
      false AS deleted, l.urgent, true AS locked, l.activation_date, l.deadline,
      false AS from_deleted, l.urgent AS from_urgent, false AS from_locked, l.activation_date AS from_activation_date,
      l.deadline AS from_deadline, p.updated_at AS from_updated_at
    FROM locked l JOIN picked p ON p.id = l.id
  ),
  all_changes AS (SELECT * FROM changes UNION ALL SELECT * FROM take_changes),
  uncounted AS (SELECT * FROM all_changes a WHERE NOT EXISTS (SELECT 1 FROM run WHERE run.id = a.run_id)),
  ${sql.join(
    writes.map(([name, query]) => sql`${sql.raw(name)} AS (${query})`),
    sql`,\n`,
  )}
  SELECT ${sql.raw(TASK_ROW_COLUMNS.map((c) => `l.${c}`).join(', '))}, l.version, l.slot, h.handed_back, h.cleared
  FROM (SELECT ARRAY(SELECT id FROM updated) AS handed_back,
      (SELECT json_agg(json_build_object('tenant_id', tenant_id, 'process_id', process_id)) FROM failures_cleared) AS cleared) h
  LEFT JOIN locked l ON true`.compile(tx.db);
  texts.set(deadlines, q);
  return q;
}

export interface CombinedResult {
  /** the ids of the changes written (an optimistic change not among them was skipped) */
  written: Set<number>;
  /** the tasks taken, with the 1-based index (among `slots`) of the slot each was taken for */
  taken: (TakenRow & { slotIndex: number })[];
}

/**
 * Writes optimistic hand-back changes of one tenant and takes, on `proc`, one task per slot whose
 * hand-back was written, in one statement (autocommitted by the caller). Publishes what changed.
 */
export async function handBackAndTake(
  tx: Tx,
  proc: Pick<ProcessDef, 'tenantId' | 'id' | 'deadlinesEnabled' | 'runTimeoutSeconds'>,
  changes: readonly TaskChange[],
  slots: CombinedSlot[],
  now: Date,
  until: Date,
): Promise<CombinedResult> {
  const q = statement(tx, proc.deadlinesEnabled);
  const parameters = [
    ...applyParameters(changes),
    slots.map((s) => s.afterTaskId),
    slots.map((s) => s.mateId),
    slots.map((s) => s.mateName),
    slots.map((s) => s.requestId),
    proc.tenantId,
    proc.id,
    now.toISOString(),
    until.toISOString(),
    activitySlack(proc.runTimeoutSeconds),
    until.toISOString(),
  ];
  type Out = TakenRow & { slot: number | null; handed_back: number[]; cleared: { tenant_id: number; process_id: number }[] | null };
  const { rows } = await tx.db.executeQuery<Out>({ ...q, parameters } as CompiledQuery<Out>);
  const written = new Set(rows[0].handed_back.map(Number));
  const taken = rows
    .filter((r) => r.slot !== null)
    .map(({ slot, handed_back: _h, cleared: _c, ...row }) => ({ ...(row as TakenRow), slotIndex: 0, rn: Number(slot) }));
  // the slot numbers count the slots taken for (the takes' and the written hand-backs'): back to the index among `slots`
  const writtenSlots = slots.map((s, i) => ({ s, i })).filter(({ s }) => s.afterTaskId === null || written.has(s.afterTaskId));
  for (const t of taken) t.slotIndex = writtenSlots[t.rn - 1].i + 1;
  publishChanges(
    tx,
    [
      ...changes.filter((c) => written.has(c.after.id)).map((c) => ({ tenantId: c.after.tenant_id, processId: c.after.process_id })),
      ...taken.map(() => ({ tenantId: proc.tenantId, processId: proc.id })),
    ],
    rows[0].cleared ?? [],
  );
  return { written, taken: taken.map(({ rn: _rn, ...t }) => t) };
}
