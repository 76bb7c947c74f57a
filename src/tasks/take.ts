/**
 * Taking tasks (docs/product.md §5.2): TakeNext and TakeMany. Any number of concurrent take
 * requests on one process are served by one statement that picks, locks, opens or resumes the
 * run and writes everything the task funnel derives from a change (history and the rest).
 */
import { sql } from 'kysely';
import { PREPARED } from '../db/store.js';
import type { Tx, Units } from '../db/tx.js';
import type { Caller } from '../lib/caller.js';
import { clearFailure, type ProcessDef } from '../processes/store.js';
import { activitySlack, closeIdleRun, closeOpenRun, newRunId } from '../runs/store.js';
import { withDerivedWrites, publishChanges } from './funnel.js';
import { takeOrder, taskColumns, TASK_ROW_COLUMNS, type TaskRow } from './store.js';
import type { Outcome } from '../lib/errors.js';
import { closedReason, isBlockedDay, type DummyReason } from './gate.js';
import { handBackBatch, prepareHandBacks, withSkipped, type HandBackItem, type HandedBack } from './hand-back.js';
import { handBackAndTake, type CombinedSlot } from './combined.js';
import type { RecentTakes } from './recent-takes.js';

export interface TakeRequest {
  /** a Mate (takes lock tasks for Mates only) */
  caller: Caller;
  count: number;
}

/** The tasks taken, or why there were none (the dummy task's reason, docs/mate-api.md §6.2). */
/** A taken task, with its row version as the take wrote it (funnel.ts: optimistic changes). */
export type TakenRow = TaskRow & { version: string };

export type TakeResult = { tasks: TakenRow[]; runId: number } | { empty: DummyReason; message: string };

/**
 * A combined call's answer: its hand-back's, and the next task when the hand-back was done (null
 * when it was refused; `failed` when the hand-back committed and the take after it failed).
 */
/** One request of a process's batch: a take, or a combined call's hand-back (its `takeNext` is the process). */
export type ProcessWork = { take: TakeRequest } | { handBack: HandBackItem };

export interface CombinedAnswer {
  handBack: Outcome<HandedBack>;
  next: TakeResult | { failed: unknown } | null;
}

interface TakeSlot {
  mateId: number;
  mateName: string;
  requestId: string | null;
}

/**
 * Takes up to one task per slot in ONE statement: picks free Ready tasks in take order with
 * FOR UPDATE SKIP LOCKED (concurrent takers never wait for or get the same row; the ORDER BY is
 * exactly tasks_take_idx / tasks_take_deadline_idx), opens or resumes the process's run and adds
 * the takers to it, locks each task for its slot's Mate, and writes the funnel's derived rows
 * (history). Slot i gets the i-th task picked. Returns the locked rows with their slot
 * (1-based); none when nothing was free (then no run is opened).
 */
export async function takeTasks(
  tx: Tx,
  proc: Pick<ProcessDef, 'tenantId' | 'id' | 'deadlinesEnabled' | 'runTimeoutSeconds'>,
  now: Date,
  until: Date,
  slots: TakeSlot[],
): Promise<(TakenRow & { slot: number })[]> {
  const { tenantId, id: processId } = proc;
  const { rows } = await sql<TakenRow & { slot: number }>`${sql.raw(PREPARED)}
    WITH picked AS (
      SELECT id, urgent, deadline, queue_position, seq, updated_at FROM tasks
      WHERE tenant_id = ${tenantId} AND process_id = ${processId} AND queue = 'Ready' AND locked_until IS NULL
        AND deleted_at IS NULL AND activation_date <= ${now}
      ORDER BY ${takeOrder(proc.deadlinesEnabled)}
      LIMIT ${slots.length}
      FOR UPDATE SKIP LOCKED
    ),
    numbered AS (SELECT id, row_number() OVER (ORDER BY ${takeOrder(proc.deadlinesEnabled)}) AS rn FROM picked),
    slots AS (
      SELECT * FROM unnest(${slots.map((s) => s.mateId)}::bigint[], ${slots.map((s) => s.mateName)}::text[], ${slots.map((s) => s.requestId)}::text[])
        WITH ORDINALITY AS s(mate_id, mate_name, request_id, rn)
    ),
    -- the open run, share-locked: it stays open until this commits (a FinishRun or a timeout waits
    -- for it), while the takes of other server processes share the lock instead of queueing for it
    open_run AS (
      SELECT id, mate_ids, last_activity_at FROM runs
      WHERE tenant_id = ${tenantId} AND process_id = ${processId} AND finished_at IS NULL FOR SHARE
    ),
    mates AS (SELECT ARRAY(SELECT DISTINCT s.mate_id FROM slots s JOIN numbered n ON n.rn = s.rn) AS ids),
    -- the open run is written only when it gains a Mate or its last activity is older than the
    -- slack (runs.ts ACTIVITY_SLACK): most takes neither rewrite nor lock it for update
    run AS (
      INSERT INTO runs (tenant_id, id, process_id, started_at, last_activity_at, mate_ids)
      SELECT ${tenantId}, ${newRunId(tenantId)}, ${processId}, ${now}, ${now}, (SELECT ids FROM mates)
      WHERE EXISTS (SELECT 1 FROM picked)
        AND NOT EXISTS (SELECT 1 FROM open_run o WHERE o.mate_ids @> (SELECT ids FROM mates)
          AND o.last_activity_at >= ${now}::timestamptz - ${activitySlack(proc.runTimeoutSeconds)}::interval)
      ON CONFLICT (tenant_id, process_id) WHERE finished_at IS NULL
      DO UPDATE SET last_activity_at = GREATEST(runs.last_activity_at, EXCLUDED.last_activity_at),
        mate_ids = ARRAY(SELECT DISTINCT m FROM unnest(runs.mate_ids || EXCLUDED.mate_ids) AS m)
      WHERE NOT (runs.mate_ids @> EXCLUDED.mate_ids AND runs.last_activity_at >= EXCLUDED.last_activity_at - ${activitySlack(proc.runTimeoutSeconds)}::interval
        -- the run this statement's snapshot saw (else its id must come from RETURNING)
        AND runs.id IN (SELECT id FROM open_run))
      RETURNING id
    ),
    locked AS (
      UPDATE tasks t SET locked_by_mate_id = s.mate_id, locked_until = ${until},
        run_id = COALESCE((SELECT id FROM run), (SELECT id FROM open_run)),
        expired_lock_mate_id = NULL, updated_at = ${now}
      FROM numbered n JOIN slots s ON s.rn = n.rn
      -- the picked ids as an index condition too: with the join alone, stale statistics (a new
      -- store filling fast) let the planner scan all the tenant's tasks for the few picked
      WHERE t.tenant_id = ${tenantId} AND t.id = n.id AND t.id = ANY(ARRAY(SELECT id FROM picked))
      RETURNING ${taskColumns('t')}, t.xmin::text AS version, s.rn AS slot, s.mate_name, s.request_id
    ),
    changes AS (
      SELECT l.tenant_id, l.id AS task_id, l.process_id, ${now}::timestamptz AS at, 'mate'::text AS actor_type, l.locked_by_mate_id AS actor_id,
        l.mate_name AS actor_name, l.request_id, 'Taken'::text AS action, 'Ready'::text AS from_queue, false AS from_error, l.queue, l.error,
        NULL::text AS reason, NULL::text AS comment, l.retry_count,
        jsonb_build_object('runId', l.run_id, 'lockedUntil', ${until.toISOString()}::text) AS details,
        NULL::text AS kpi_outcome, NULL::integer AS kpi_entries, NULL::bigint AS kpi_seconds, NULL::bigint AS run_id, NULL::bigint AS mate_id,
        false AS clears_failure,
        false AS deleted, l.urgent, true AS locked, l.activation_date, l.deadline,
        false AS from_deleted, l.urgent AS from_urgent, false AS from_locked, l.activation_date AS from_activation_date,
        l.deadline AS from_deadline, p.updated_at AS from_updated_at
      FROM locked l JOIN picked p ON p.id = l.id
    ),
    ${withDerivedWrites('changes')}
    SELECT ${sql.raw(TASK_ROW_COLUMNS.join(', '))}, version, slot FROM locked`.execute(tx.db);
  return rows.map((r) => ({ ...r, slot: Number(r.slot) }));
}

/**
 * Take requests of one server process. Concurrent requests on one process are combined by the
 * batchers (batching.ts) and served here together.
 */
export class Takes {
  /**
   * When this server process last resumed each process's run (tenant:process → ms). An open run
   * idle past runTimeoutSeconds ends before a take starts a new one; when this process itself
   * resumed the run within that time, no open run can be idle that long (there is one open run
   * at most), and the statement that would close it is saved (bench: one statement of three).
   */
  private readonly runsTouched = new Map<string, number>();

  constructor(private readonly units: Units) {}

  /**
   * Serves take requests on one process, in order; each caller's tasks come back in take order.
   * Each statement commits on its own: a take is one statement, and the run-closing statements
   * around it are idempotent.
   */
  forCallers(proc: ProcessDef, requests: TakeRequest[]): Promise<TakeResult[]> {
    return this.units.autocommit(async (tx) => {
      const { now, timeZone } = requests[0].caller;
      // any Mate call on the process clears its Failure state (docs/mate-api.md §7)
      if (proc.failureAt) await clearFailure(tx, proc.tenantId, proc.id);
      const closed = await closedReason(tx.db, proc, now, timeZone);
      if (closed) return requests.map(() => ({ empty: closed.code, message: closed.message }));
      const key = `${proc.tenantId}:${proc.id}`;
      const last = this.runsTouched.get(key);
      if (last === undefined || now.getTime() - last >= proc.runTimeoutSeconds * 1000) {
        await closeIdleRun(tx.db, proc.tenantId, proc.id, now, proc.runTimeoutSeconds);
      }
      const slots: TakeSlot[] = requests.flatMap((r) =>
        Array.from({ length: r.count }, () => ({
          mateId: r.caller.actor.id!,
          mateName: r.caller.actor.name,
          requestId: r.caller.requestId,
        })),
      );
      const until = new Date(now.getTime() + proc.lockTimeoutSeconds * 1000);
      const rows = await takeTasks(tx, proc, now, until, slots);
      if (rows.length) {
        this.runsTouched.set(key, now.getTime());
        publishChanges(
          tx,
          rows.map(() => ({ tenantId: proc.tenantId, processId: proc.id })),
          [],
        );
      }
      // slots are numbered in the take order, so each request's tasks come in that order
      const bySlot = new Map(rows.map((r) => [r.slot, r]));
      let slot = 0;
      const results: TakeResult[] = requests.map((r) => {
        const mine: TakenRow[] = [];
        for (let i = 0; i < r.count; i++) {
          const row = bySlot.get(++slot);
          if (row) mine.push(row);
        }
        return mine.length ? { tasks: mine, runId: mine[0].run_id! } : { empty: 'queue_empty' as const, message: 'No task is ready' };
      });
      // a caller left without a task: the queue is empty, so the run closes (as it would had the
      // callers come one by one)
      if (results.some((r) => 'empty' in r)) await closeOpenRun(tx.db, proc.tenantId, proc.id, now, 'emptyQueue');
      return results;
    });
  }

  /**
   * The work of one process's batch: takes (TakeNext, TakeMany) and combined calls (a hand-back of
   * the tenant whose `takeNext` names `proc`: the hand-back, then, if it was done, the next task
   * as TakeNext takes it). Written by one statement (combined.ts) when the takes need nothing that
   * depends on the hand-backs' outcome or on another statement: no Retry among the hand-backs, a
   * process that is open by its settings, not in the Failure state and not stopped by errors. Otherwise, and for a hand-back
   * whose row changed since this server process took it, the hand-backs commit first and the takes
   * follow them, as separate calls would. Answers in the order of `work`.
   */
  async forWork(units: Units, proc: ProcessDef, work: ProcessWork[], recent: RecentTakes): Promise<(TakeResult | CombinedAnswer)[]> {
    if (work.every((w) => 'take' in w)) {
      const results = await this.forCallers(
        proc,
        work.map((w) => (w as { take: TakeRequest }).take),
      );
      for (const r of results) if ('tasks' in r) recent.remember(proc, r.tasks);
      return results;
    }
    const first = work[0];
    const { now, timeZone } = ('take' in first ? first.take : first.handBack).caller;
    // a Retry puts its task back in Ready, which a take in the same statement would not see
    const retries = work.some((w) => 'handBack' in w && w.handBack.action === 'Retry');
    if (retries || proc.failureAt || proc.stopOnErrors || !proc.tasksEnabled || !proc.gateOpen || isBlockedDay(proc, now, timeZone)) {
      return this.oneAfterTheOther(units, proc, work, recent);
    }
    const items = work.flatMap((w) => ('handBack' in w ? [w.handBack] : []));
    const key = `${proc.tenantId}:${proc.id}`;
    const answers: (TakeResult | CombinedAnswer | null)[] = await this.units.autocommit(async (tx) => {
      const last = this.runsTouched.get(key);
      if (last === undefined || now.getTime() - last >= proc.runTimeoutSeconds * 1000) {
        await closeIdleRun(tx.db, proc.tenantId, proc.id, now, proc.runTimeoutSeconds);
      }
      const known = recent.take(items.map((i) => i.taskId));
      const { results, changes } = await prepareHandBacks(tx, items, 'version', known);
      // the slots, in the order of the work: a take's count of them, a hand-back's one if it may be done
      const slots: CombinedSlot[] = [];
      const slotsOf: number[][] = [];
      const resultOf: ((typeof results)[number] | undefined)[] = [];
      let k = 0;
      for (const w of work) {
        const mine: number[] = [];
        slotsOf.push(mine);
        const caller = 'take' in w ? w.take.caller : w.handBack.caller;
        const slot = (afterTaskId: number | null) => {
          slots.push({ afterTaskId, mateId: caller.actor.id!, mateName: caller.actor.name, requestId: caller.requestId });
          mine.push(slots.length);
        };
        if ('take' in w) {
          for (let c = 0; c < w.take.count; c++) slot(null);
          resultOf.push(undefined);
        } else {
          const r = results[k++];
          resultOf.push(r);
          if (r?.ok) slot(w.handBack.taskId);
        }
      }
      const until = new Date(now.getTime() + proc.lockTimeoutSeconds * 1000);
      const { written, taken } = await handBackAndTake(tx, proc, changes, slots, now, until);
      const final = withSkipped(
        items,
        results,
        changes.filter((c) => !written.has(c.after.id)).map((c) => c.after.id),
      );
      if (taken.length) {
        this.runsTouched.set(key, now.getTime());
        recent.remember(
          proc,
          taken.map(({ slotIndex: _slot, ...row }) => row),
        );
      }
      const bySlot = new Map(taken.map(({ slotIndex, ...row }) => [slotIndex, row]));
      const emptyQueue: TakeResult = { empty: 'queue_empty', message: 'No task is ready' };
      let empty = false;
      k = 0;
      const out = work.map((w, i): TakeResult | CombinedAnswer | null => {
        const tasks = slotsOf[i].flatMap((s) => (bySlot.has(s) ? [bySlot.get(s)!] : []));
        const next: TakeResult = tasks.length ? { tasks, runId: tasks[0].run_id! } : emptyQueue;
        if ('take' in w) {
          if (!tasks.length) empty = true;
          return next;
        }
        const r = final[k++];
        if (r === null) return null;
        if (!r.ok) return { handBack: r, next: null };
        if (!tasks.length) empty = true;
        return { handBack: r, next };
      });
      // a caller left without a task: the queue is empty, so the run closes (the hand-backs committed)
      if (empty) await closeOpenRun(tx.db, proc.tenantId, proc.id, now, 'emptyQueue');
      return out;
    });
    const again = work.filter((_, i) => answers[i] === null);
    if (again.length === 0) return answers as (TakeResult | CombinedAnswer)[];
    const second = await this.oneAfterTheOther(units, proc, again, recent);
    let j = 0;
    return answers.map((a) => a ?? second[j++]);
  }

  /** The hand-backs committed first (hand-back.ts handBackBatch), then the takes, and one for each hand-back done. */
  private async oneAfterTheOther(
    units: Units,
    proc: ProcessDef,
    work: ProcessWork[],
    recent: RecentTakes,
  ): Promise<(TakeResult | CombinedAnswer)[]> {
    const items = work.flatMap((w) => ('handBack' in w ? [w.handBack] : []));
    const handed = items.length ? await handBackBatch(units, items, recent) : [];
    let k = 0;
    const requests: TakeRequest[] = [];
    const plan = work.map((w) => {
      if ('take' in w) {
        requests.push(w.take);
        return { handed: null, take: requests.length - 1 };
      }
      const h = handed[k++];
      if (!h.ok) return { handed: h, take: -1 };
      requests.push({ caller: w.handBack.caller, count: 1 });
      return { handed: h, take: requests.length - 1 };
    });
    let takes: (TakeResult | { failed: unknown })[];
    try {
      takes = requests.length ? await this.forCallers(proc, requests) : [];
      recent.remember(
        proc,
        takes.flatMap((t) => ('tasks' in t ? t.tasks : [])),
      );
    } catch (err) {
      // only takes: the error is theirs
      if (!items.length) throw err;
      // the hand-backs committed: their answers stand, the take is answered as failed
      takes = requests.map(() => ({ failed: err }));
    }
    return plan.map((p): TakeResult | CombinedAnswer => {
      if (p.handed === null) {
        const t = takes[p.take];
        if ('failed' in t) throw t.failed;
        return t;
      }
      return { handBack: p.handed, next: p.take < 0 ? null : takes[p.take] };
    });
  }
}
