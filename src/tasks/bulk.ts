/**
 * Bulk actions by people (docs/product.md §5.6): one person action over a list of task ids or over
 * every task of a process matching a filter (the list's filter, search.ts). A job runs in chunks of
 * CHUNK_SIZE tasks, each chunk one transaction written by one funnel statement, so a 500k-task move
 * neither holds one giant transaction nor keeps the request waiting: the request answers the job's
 * id and total at once, and the job's progress is read by id.
 *
 * - Tasks a Mate (or another person) holds are skipped and counted (`skipped`); other refusals
 *   (wrong state, duplicate key, gone) are counted as `failed`. Both are listed in `errors`
 *   (the first MAX_ERRORS), each with the task id and the refusal's code.
 * - By filter, tasks are visited in id order up to the highest id at the start (tasks created
 *   meanwhile are left alone); each chunk re-reads the filter, so a task that stopped matching
 *   before its turn is not touched, and `done + failed + skipped` may then stay below `total`.
 * - Every history row a job writes carries the request id `bulk:<jobId>`, so what a job did can be
 *   read from the history even after a restart.
 *
 * Jobs and their progress live in the memory of the server process that runs them (BulkJobs,
 * one per Services): another server process does not know them, and a restart forgets them; a job
 * cut short by a shutdown is marked failed with what it had done.
 */
import crypto from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import type { Units } from '../db/tx.js';
import type { Clock } from '../lib/clock.js';
import type { Actor, Caller } from '../lib/caller.js';
import { Refusal, refused, type ErrorCode, type FieldProblem, type Outcome } from '../lib/errors.js';
import { showValue, toBoolean } from '../lib/values.js';
import type { ProcessDef } from '../processes/store.js';
import { actOnTasks, type PersonAction } from './people.js';
import { countTasks, filterCondition, readTaskFilter, type TaskFilter } from './search.js';
import { QUEUES } from './state-machine.js';
import type { TaskRow } from './store.js';

export const BULK_ACTIONS = ['move', 'clearError', 'urgent', 'approve', 'reject', 'delete'] as const;
export type BulkAction = (typeof BULK_ACTIONS)[number];
export const CHUNK_SIZE = 500;
/** The most ids one request may list (a larger set is a filter). */
export const MAX_IDS = 100_000;
const MAX_ERRORS = 1000;
/** Finished jobs are kept this long (and at most MAX_JOBS of them) for their progress to be read. */
const KEEP_MS = 24 * 3600 * 1000;
const MAX_JOBS = 1000;

export type BulkTarget = { ids: number[] } | { filter: TaskFilter };

export interface BulkRequest {
  action: BulkAction;
  /** the person action applied to each task */
  input: PersonAction;
  target: BulkTarget;
}

function bad(field: string, message: string, value?: unknown): Refusal {
  const p: FieldProblem = { field, code: 'invalid_field', message, ...(value !== undefined ? { value } : {}) };
  return new Refusal('invalid_field', message, [p]);
}

/**
 * Reads a bulk body `{ action, queue?, error?, urgent?, comment?, ids? | filter? }` (the people's
 * API contract); `filter` has the list query's keys. Refuses naming the bad key.
 */
export function readBulkRequest(body: unknown, proc: ProcessDef, timeZone: string): BulkRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new Refusal('invalid_body', 'The body must be a JSON object');
  const b = body as Record<string, unknown>;
  const known = new Set(['action', 'queue', 'error', 'urgent', 'comment', 'ids', 'filter']);
  for (const k of Object.keys(b)) {
    if (!known.has(k))
      throw new Refusal('unknown_field', `"${k}" is not a key of a bulk action`, [
        { field: k, code: 'unknown_field', message: `"${k}" is not a key of a bulk action` },
      ]);
  }
  const action = BULK_ACTIONS.find((a) => a === b.action);
  if (!action) throw bad('action', `"action": ${showValue(b.action)} is not one of ${BULK_ACTIONS.join(', ')}`, b.action);
  const comment = b.comment === undefined || b.comment === null ? null : b.comment;
  if (comment !== null && typeof comment !== 'string') throw bad('comment', '"comment" must be a text', comment);
  let input: PersonAction;
  switch (action) {
    case 'move': {
      const queue = typeof b.queue === 'string' ? QUEUES.find((q) => q.toLowerCase() === (b.queue as string).toLowerCase()) : undefined;
      if (!queue) throw bad('queue', `"queue": ${showValue(b.queue)} is not one of ${QUEUES.join(', ')}`, b.queue);
      const error = b.error === undefined || b.error === null ? false : toBoolean(b.error);
      if (error === undefined) throw bad('error', '"error" must be true or false', b.error);
      input = { action: 'move', queue, error, comment };
      break;
    }
    case 'urgent': {
      const urgent = toBoolean(b.urgent);
      if (urgent === undefined) throw bad('urgent', '"urgent" must be true or false', b.urgent);
      input = { action: 'setUrgent', urgent, comment };
      break;
    }
    default:
      input = { action, comment };
  }
  const hasIds = b.ids !== undefined && b.ids !== null;
  const hasFilter = b.filter !== undefined && b.filter !== null;
  if (hasIds === hasFilter)
    throw new Refusal('invalid_body', 'Give either "ids" (a list of task ids) or "filter" (the list query keys), not both');
  let target: BulkTarget;
  if (hasIds) {
    const ids = b.ids;
    if (!Array.isArray(ids) || ids.length === 0 || ids.length > MAX_IDS)
      throw bad('ids', `"ids" must be a list of 1 to ${MAX_IDS} task ids`);
    const bogus = ids.findIndex((x) => typeof x !== 'number' || !Number.isSafeInteger(x) || x <= 0);
    if (bogus >= 0) throw bad('ids', `"ids"[${bogus}]: ${showValue(ids[bogus])} is not a task id`, ids[bogus]);
    target = { ids: [...new Set(ids as number[])] };
  } else {
    if (typeof b.filter !== 'object' || Array.isArray(b.filter)) throw bad('filter', '"filter" must be an object of list query keys');
    target = { filter: readTaskFilter(b.filter as Record<string, unknown>, proc, timeZone) };
  }
  return { action, input, target };
}

/** How many tasks a bulk action would visit now (the preview before it runs). */
export async function countMatching(db: Kysely<Database>, caller: Caller, proc: ProcessDef, target: BulkTarget): Promise<number> {
  if ('filter' in target) return countTasks(db, caller, proc.id, target.filter);
  let n = 0;
  for (let i = 0; i < target.ids.length; i += 10_000) {
    const ids = target.ids.slice(i, i + 10_000);
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM tasks
      WHERE tenant_id = ${caller.tenantId} AND process_id = ${proc.id} AND deleted_at IS NULL AND id = ANY(${ids}::bigint[])`.execute(db);
    n += rows[0].n;
  }
  return n;
}

export interface BulkJobError {
  taskId: number;
  code: ErrorCode;
  message: string;
}

export interface BulkJobView {
  id: string;
  status: 'running' | 'done' | 'failed';
  action: BulkAction;
  processId: number;
  total: number;
  done: number;
  failed: number;
  /** tasks a Mate or another person held: left alone */
  skipped: number;
  errors: BulkJobError[];
  createdBy: Actor;
  createdAt: string;
  finishedAt: string | null;
  /** why a job stopped before its end (status failed) */
  message: string | null;
}

interface Job {
  view: BulkJobView;
  tenantId: number;
  finished: Promise<void>;
  endedAt: number | null;
}

/** The bulk jobs of this server process (see the module comment: progress is per process). */
export class BulkJobs {
  private readonly jobs = new Map<string, Job>();
  private stopping = false;

  constructor(
    private readonly units: Units,
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly chunkSize = CHUNK_SIZE,
  ) {}

  /** Counts the tasks and starts the job; answers at once with its id and total. */
  async start(caller: Caller, proc: ProcessDef, req: BulkRequest): Promise<{ jobId: string; total: number }> {
    if (caller.actor.type !== 'user') throw new Error('bulk.ts: the caller must be a person');
    if (this.stopping) throw new Refusal('unavailable', 'The server is shutting down; start the bulk action again');
    this.prune();
    const id = crypto.randomUUID();
    const total = await countMatching(this.db, caller, proc, req.target);
    let maxId = 0;
    if ('filter' in req.target) {
      const { rows } = await sql<{ m: number | null }>`SELECT max(id) AS m FROM tasks
        WHERE tenant_id = ${caller.tenantId} AND process_id = ${proc.id}`.execute(this.db);
      maxId = Number(rows[0].m ?? 0);
    }
    const view: BulkJobView = {
      id,
      status: 'running',
      action: req.action,
      processId: proc.id,
      total,
      done: 0,
      failed: 0,
      skipped: 0,
      errors: [],
      createdBy: caller.actor,
      createdAt: caller.now.toISOString(),
      finishedAt: null,
      message: null,
    };
    const job: Job = { view, tenantId: caller.tenantId, finished: Promise.resolve(), endedAt: null };
    const jobCaller: Caller = { ...caller, requestId: `bulk:${id}` };
    job.finished = this.run(job, jobCaller, proc, req, maxId);
    this.jobs.set(id, job);
    return { jobId: id, total };
  }

  /** A job's progress; null for an unknown id or another tenant's job. */
  get(tenantId: number, jobId: string): BulkJobView | null {
    const job = this.jobs.get(jobId);
    if (!job || job.tenantId !== tenantId) return null;
    return { ...job.view, errors: [...job.view.errors] };
  }

  /** Waits for a job to end (tests, the CLI); null for an unknown id or another tenant's job. */
  async wait(tenantId: number, jobId: string): Promise<BulkJobView | null> {
    const job = this.jobs.get(jobId);
    if (!job || job.tenantId !== tenantId) return null;
    await job.finished;
    return this.get(tenantId, jobId);
  }

  /** Stops every job after its current chunk (marked failed, with what it did). */
  close(): void {
    this.stopping = true;
  }

  /** Resolves when every running job has stopped. */
  async drain(): Promise<void> {
    await Promise.all([...this.jobs.values()].map((j) => j.finished));
  }

  private prune(): void {
    const now = Date.now();
    for (const [id, j] of this.jobs) if (j.endedAt !== null && now - j.endedAt > KEEP_MS) this.jobs.delete(id);
    const ended = [...this.jobs].filter(([, j]) => j.endedAt !== null);
    for (let i = 0; i < ended.length - MAX_JOBS; i++) this.jobs.delete(ended[i][0]);
  }

  private async run(job: Job, caller: Caller, proc: ProcessDef, req: BulkRequest, maxId: number): Promise<void> {
    // let start() answer before the first chunk
    await new Promise((resolve) => setImmediate(resolve));
    try {
      if ('ids' in req.target) {
        for (let i = 0; i < req.target.ids.length; i += this.chunkSize) {
          this.checkStopping();
          await this.chunk(job, caller, proc, req.target.ids.slice(i, i + this.chunkSize), req.input);
        }
      } else {
        let last = 0;
        for (;;) {
          this.checkStopping();
          const now = this.clock.now();
          const { rows } = await sql<{ id: number }>`SELECT t.id FROM tasks t
            WHERE ${filterCondition(caller.tenantId, proc.id, req.target.filter, now)} AND t.id > ${last} AND t.id <= ${maxId}
            ORDER BY t.id LIMIT ${this.chunkSize}`.execute(this.db);
          if (rows.length === 0) break;
          await this.chunk(
            job,
            caller,
            proc,
            rows.map((r) => r.id),
            req.input,
          );
          last = rows[rows.length - 1].id;
        }
      }
      job.view.status = 'done';
    } catch (err) {
      job.view.status = 'failed';
      job.view.message = err instanceof Refusal ? err.message : `The job stopped: ${(err as Error).message}`;
    } finally {
      job.view.finishedAt = this.clock.now().toISOString();
      job.endedAt = Date.now();
    }
  }

  private checkStopping(): void {
    if (this.stopping) throw new Refusal('unavailable', 'The server shut down before the job ended');
  }

  /** One chunk in one transaction; when the chunk as a whole fails (a key race), one transaction per task. */
  private async chunk(job: Job, caller: Caller, proc: ProcessDef, ids: number[], input: PersonAction): Promise<void> {
    const c: Caller = { ...caller, now: this.clock.now() };
    const opts = { processId: proc.id, loadProcess: async () => proc };
    let outcomes: Map<number, Outcome<TaskRow>>;
    try {
      outcomes = await this.units.transaction((tx) => actOnTasks(tx, c, ids, input, opts));
    } catch (err) {
      if (!(err instanceof Refusal)) throw err;
      outcomes = new Map();
      for (const id of ids) {
        try {
          const one = await this.units.transaction((tx) => actOnTasks(tx, c, [id], input, opts));
          outcomes.set(id, one.get(id)!);
        } catch (e) {
          if (!(e instanceof Refusal)) throw e;
          outcomes.set(id, refused(e));
        }
      }
    }
    const v = job.view;
    for (const [taskId, o] of outcomes) {
      if (o.ok) {
        v.done++;
        continue;
      }
      if (o.refusal.code === 'task_locked') v.skipped++;
      else v.failed++;
      if (v.errors.length < MAX_ERRORS) v.errors.push({ taskId, code: o.refusal.code, message: o.refusal.message });
    }
  }
}
