/**
 * Creating tasks (docs/product.md §5.1): validate the values first (400s before any state is
 * looked at), then check unique keys, then write through the funnel. Creates of one request are
 * all or nothing.
 */
import { sql } from 'kysely';
import type { Tx } from '../db/tx.js';
import { Refusal, problemsRefusal, type FieldProblem } from '../lib/errors.js';
import { callerMateId, type Caller } from '../lib/caller.js';
import { validateTaskData } from '../processes/task-data.js';
import type { ProcessDef } from '../processes/store.js';
import { openOrResumeRun } from '../runs/store.js';
import { closedReason } from './gate.js';
import { applyChanges, drawTaskIds } from './funnel.js';
import { created, createdQueue, type PreparedTask } from './changes.js';
import { findUniqueKeyOwners, type TaskRow } from './store.js';

export type { PreparedTask } from './changes.js';

/**
 * Validates raw task data items against the process's fields (docs/product.md §3) and decides
 * each task's first queue. `batch`: items are numbered in problems (CreateTasks). Refuses with
 * every problem found.
 */
export function prepareTasks(caller: Caller, proc: ProcessDef, items: unknown[], batch: boolean): PreparedTask[] {
  const problems: FieldProblem[] = [];
  const prepared: PreparedTask[] = [];
  items.forEach((item, index) => {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      problems.push({
        ...(batch ? { index } : {}),
        code: 'invalid_body',
        message: batch ? `Item ${index} must be an object` : 'The body must be a JSON object',
      });
      return;
    }
    const r = validateTaskData({
      fields: proc.fields,
      body: item as Record<string, unknown>,
      mode: 'create',
      timeZone: caller.timeZone,
      numberFormat: caller.numberFormat,
    });
    if (!r.ok) {
      for (const p of r.problems) problems.push(batch ? { ...p, index, message: `Item ${index}: ${p.message}` } : p);
      return;
    }
    const { values, reserved, missingRequired, uniqueKey } = r;
    const activationDate = reserved.activationDate ?? new Date(caller.now.getTime() + proc.defaultActivationOffsetSeconds * 1000);
    let deadline: Date | null = null;
    if (proc.deadlinesEnabled) {
      deadline =
        reserved.deadline ?? (proc.defaultDeadlineSeconds ? new Date(caller.now.getTime() + proc.defaultDeadlineSeconds * 1000) : null);
    }
    prepared.push({
      processId: proc.id,
      queue: createdQueue(caller, proc, missingRequired),
      data: values,
      uniqueKey,
      activationDate,
      deadline,
      urgent: reserved.urgent ?? false,
      comment: reserved.comment ?? null,
      missingRequired,
    });
  });
  if (problems.length) throw problemsRefusal(problems);
  return prepared;
}

/** Refuses a batch whose unique key values collide with each other or with open tasks. */
async function checkUniqueKeys(tx: Tx, caller: Caller, proc: ProcessDef, tasks: PreparedTask[], batch: boolean): Promise<void> {
  const seen = new Map<string, number>();
  tasks.forEach((p, index) => {
    const k = p.uniqueKey;
    if (k === null) return;
    if (seen.has(k))
      throw new Refusal('duplicate_key', `Item ${index} has the same key as item ${seen.get(k)}: ${k}`, [], {
        index,
        existingTaskId: null,
      });
    seen.set(k, index);
  });
  const owners = await findUniqueKeyOwners(tx.db, caller.tenantId, proc.id, [...seen.keys()]);
  for (const [k, index] of seen) {
    const existing = owners.get(k);
    if (existing !== undefined) {
      throw new Refusal('duplicate_key', `${batch ? `Item ${index}: a` : 'A'} task with key ${k} already exists (task ${existing})`, [], {
        existingTaskId: existing,
        ...(batch ? { index } : {}),
      });
    }
  }
}

function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: string })?.code === '23505';
}

/**
 * Runs `write` inside a savepoint, so that a unique key taken by a concurrent create or update
 * between our check and our write is answered as `duplicate_key` (`recheck` runs the check again
 * and throws the refusal) and the caller's transaction stays usable.
 */
export async function guardedWrite(tx: Tx, write: () => Promise<unknown>, recheck: () => Promise<void>): Promise<void> {
  await sql`SAVEPOINT create_tasks`.execute(tx.db);
  try {
    await write();
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    await sql`ROLLBACK TO SAVEPOINT create_tasks`.execute(tx.db);
    await recheck();
    throw err;
  }
  await sql`RELEASE SAVEPOINT create_tasks`.execute(tx.db);
}

/**
 * Creates tasks all-or-nothing inside the caller's transaction (so that an idempotency record
 * can commit with them). Returns the new rows in input order.
 */
export async function createTasks(tx: Tx, caller: Caller, proc: ProcessDef, prepared: PreparedTask[], batch: boolean): Promise<TaskRow[]> {
  if (!proc.tasksEnabled) throw new Refusal('tasks_disabled', `Process ${proc.processKey} has no tasks`);
  await checkUniqueKeys(tx, caller, proc, prepared, batch);
  const ids = await drawTaskIds(tx, caller.tenantId, prepared.length);
  const changes = prepared.map((p, i) => created(caller, ids[i], p, null));
  // without a unique key no concurrent write can make this one fail (tasks_unique_key is the only
  // unique index it can meet), so it needs no savepoint: two round trips fewer per batch
  if (prepared.every((p) => p.uniqueKey === null)) await applyChanges(tx, changes);
  else
    await guardedWrite(
      tx,
      () => applyChanges(tx, changes),
      () => checkUniqueKeys(tx, caller, proc, prepared, batch),
    );
  return changes.map((c) => c.after);
}

/**
 * CreateAndTakeTask (docs/mate-api.md §7.8): creates the task locked by the calling Mate, in the
 * process's open run, in the caller's transaction. Only a task that would land in Ready is
 * created; otherwise the refusal says why and nothing is written.
 */
export async function createAndTake(
  tx: Tx,
  caller: Caller,
  proc: ProcessDef,
  prepared: PreparedTask,
): Promise<{ task: TaskRow; runId: number }> {
  const closed = await closedReason(tx.db, proc, caller.now, caller.timeZone);
  if (closed) throw new Refusal(closed.code, `${closed.message}; no task was created`);
  if (prepared.queue === 'NeedsApproval') {
    throw new Refusal('approval_required', `Tasks of process ${proc.processKey} need approval; no task was created`);
  }
  if (prepared.queue === 'NeedsData') {
    const problems: FieldProblem[] = prepared.missingRequired.map((f) => ({
      field: f,
      code: 'required_field_missing',
      message: `Required field ${f} is missing`,
    }));
    throw new Refusal('required_field_missing', `Required field ${prepared.missingRequired[0]} is missing; no task was created`, problems);
  }
  await checkUniqueKeys(tx, caller, proc, [prepared], false);
  const mateId = callerMateId(caller)!;
  const until = new Date(caller.now.getTime() + proc.lockTimeoutSeconds * 1000);
  const [id] = await drawTaskIds(tx, caller.tenantId, 1);
  let taken: { task: TaskRow; runId: number } | null = null;
  // the run is opened inside the guarded write: a create that loses a key race changes nothing
  await guardedWrite(
    tx,
    async () => {
      const runId = await openOrResumeRun(tx.db, caller.tenantId, proc.id, [mateId], caller.now, proc.runTimeoutSeconds);
      const change = created(caller, id, prepared, { mateId, until, runId });
      await applyChanges(tx, [change]);
      taken = { task: change.after, runId };
    },
    () => checkUniqueKeys(tx, caller, proc, [prepared], false),
  );
  return taken!;
}
