/**
 * Bulk actions by people (docs/product.md §5.6): one person action over a list of task ids or over
 * every task of a process matching a filter (the list's filter, src/task-lists/filter.ts). A job runs in chunks of
 * CHUNK_SIZE tasks (EMBEDDED_CHUNK_SIZE on the embedded store), each chunk one transaction written
 * by one funnel statement, so a 500k-task move neither holds one giant transaction nor keeps the
 * request waiting: the request only counts and records the job and answers its id and total, and
 * the job's progress is read by id. Before each chunk the job awaits Turns.background()
 * (src/db/turns.ts): it yields to the event loop, and on the embedded store's one connection it
 * lets the robots' calls in flight finish first.
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
 * An import larger than one chunk is such a job too (action `import`, startImport): its request
 * parses and checks the whole file (src/bulk/import.ts) and stages the checked rows in
 * bulk_job_rows (migration 0016) with the job; each chunk creates the next staged rows through the
 * create path (createTasks). Its cursor is the number of rows done. A row whose unique key an open
 * task took after the check is counted as `failed` (code duplicate_key, listed with its row number
 * in the file); the others are created.
 *
 * Jobs survive a restart: each lives in bulk_jobs (migration 0007) with what it was asked and how
 * far it got, and each chunk's task changes and the job's progress (the last task id done, or the
 * number of listed ids done) commit in one transaction, so a resumed job neither does a task twice
 * nor misses one. The server process running a job holds a lease on it (LEASE_MS, renewed with each
 * chunk); at a shutdown it lets go after the current chunk, and a process that died loses it when
 * it runs out. Maintenance in every server process claims such jobs (FOR UPDATE SKIP LOCKED) and
 * resumes them (src/maintenance/bulk-jobs.ts); a process that finds its lease taken rolls its
 * chunk back and stops. Reading a job's progress works from any process.
 */
import crypto from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { BulkJobError, BulkJobState, Database } from '../db/types.js';
import type { Units } from '../db/tx.js';
import { Turns } from '../db/turns.js';
import type { Clock } from '../lib/clock.js';
import type { Actor, Caller } from '../lib/caller.js';
import { Refusal, refused, type FieldProblem, type Outcome } from '../lib/errors.js';
import { audit } from '../audit/store.js';
import { showValue } from '../lib/values.js';
import { loadProcessById, type ProcessDef } from '../processes/store.js';
import { actOnTasks, type PersonAction } from '../tasks/people.js';
import { createTasks } from '../tasks/create.js';
import { findUniqueKeyOwners } from '../tasks/store.js';
import { countTasks, readTaskFilter, type TaskFilter } from '../task-lists/filter.js';
import {
  claimBulkJobs,
  dropImportRows,
  finishBulkJob,
  highestTaskId,
  insertBulkJob,
  LostLease,
  nextFilteredIds,
  readBulkJob,
  readImportRows,
  releaseBulkJob,
  saveBulkProgress,
  stageImportRows,
  type BulkJobRow,
  type BulkProgress,
  type ImportRow,
} from './store.js';
import { QUEUES } from '../tasks/state-machine.js';
import type { TaskRow } from '../tasks/store.js';

export const BULK_ACTIONS = ['move', 'clearError', 'urgent', 'approve', 'reject', 'delete'] as const;
export type BulkAction = (typeof BULK_ACTIONS)[number];
/** What a job does: a bulk action, or an import's rows (startImport). */
export type JobAction = BulkAction | 'import';
export const CHUNK_SIZE = 500;
/**
 * On the embedded store's one connection a chunk holds every other caller off while it runs: a
 * smaller chunk bounds how long a robot's statement waits behind one (bench/jobs-vs-robots.ts).
 */
export const EMBEDDED_CHUNK_SIZE = 200;
/** The most ids one request may list (a larger set is a filter). */
export const MAX_IDS = 100_000;
const MAX_ERRORS = 1000;
/**
 * A server process holds a job for this long past its last chunk (the default of
 * QUEUEMATE_BULK_LEASE); a process that died leaves its jobs to another after at most that. A
 * chunk of 500 takes well under a second, but its statements may each run up to the statement
 * timeout (30 s by default) under load: the lease stays above that, so a live process keeps its job.
 */
export const LEASE_MS = 60_000;
/** Ended jobs are kept this long for their progress to be read, then purged by maintenance. */
export const KEEP_JOBS_MS = 7 * 24 * 3600 * 1000;

export type BulkTarget = { ids: number[] } | { filter: TaskFilter };

/**
 * The body of a bulk action as the people's API schema (BulkBody, src/people-api/routes/bulk.ts)
 * parsed it: that schema says every type, the action's name, the known keys and at most MAX_IDS
 * ids. A job keeps it and reads it again when it resumes.
 */
export type BulkBody = {
  action: BulkAction;
  queue?: string;
  error?: boolean;
  urgent?: boolean;
  comment?: string;
  ids?: number[];
  filter?: Record<string, unknown>;
};

export interface BulkRequest {
  action: BulkAction;
  /** the body as given: kept with the job, and read again when another process resumes it */
  body: BulkBody;
  /** the person action applied to each task */
  input: PersonAction;
  target: BulkTarget;
}

function bad(field: string, message: string, value?: unknown): Refusal {
  const p: FieldProblem = { field, code: 'invalid_field', message, ...(value !== undefined ? { value } : {}) };
  return new Refusal('invalid_field', message, [p]);
}

/**
 * A bulk request from its parsed body. Read here is what the schema does not say (and could not
 * say without changing its OpenAPI and its answers): the queue of a move (in any case) and the
 * value of urgent, which the action requires; ids or a filter, exactly one; at least one id, each
 * exact (a JSON number past 2^53 is a whole number the schema takes); and the filter, whose keys
 * depend on the process's fields (readTaskFilter). Refuses naming the bad key.
 */
export function bulkRequestFrom(body: BulkBody, proc: ProcessDef, timeZone: string): BulkRequest {
  const comment = body.comment ?? null;
  let input: PersonAction;
  switch (body.action) {
    case 'move': {
      const given = body.queue;
      const queue = given === undefined ? undefined : QUEUES.find((q) => q.toLowerCase() === given.toLowerCase());
      if (!queue) throw bad('queue', `"queue": ${showValue(given)} is not one of ${QUEUES.join(', ')}`, given);
      input = { action: 'move', queue, error: body.error ?? false, comment };
      break;
    }
    case 'urgent': {
      if (body.urgent === undefined) throw bad('urgent', '"urgent" must be true or false');
      input = { action: 'setUrgent', urgent: body.urgent, comment };
      break;
    }
    default:
      input = { action: body.action, comment };
  }
  const { ids, filter } = body;
  let target: BulkTarget;
  if (ids !== undefined && filter === undefined) {
    if (ids.length === 0) throw bad('ids', `"ids" must be a list of 1 to ${MAX_IDS} task ids`);
    const bogus = ids.findIndex((x) => !Number.isSafeInteger(x));
    if (bogus >= 0) throw bad('ids', `"ids"[${bogus}]: ${showValue(ids[bogus])} is not a task id`, ids[bogus]);
    target = { ids: [...new Set(ids)] };
  } else if (filter !== undefined && ids === undefined) {
    target = { filter: readTaskFilter(filter, proc, timeZone) };
  } else {
    throw new Refusal('invalid_body', 'Give either "ids" (a list of task ids) or "filter" (the list query keys), not both');
  }
  return { action: body.action, body, input, target };
}

/**
 * A resumed job's request (bulk_jobs.request): the body its job started with, which BulkBody
 * checked then; its filter is read again, against the process's fields of now.
 */
export function readBulkRequest(stored: Record<string, unknown>, proc: ProcessDef, timeZone: string): BulkRequest {
  return bulkRequestFrom(stored as BulkBody, proc, timeZone);
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

export interface BulkJobView {
  id: string;
  status: BulkJobState;
  action: JobAction;
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

function viewOf(row: BulkJobRow): BulkJobView {
  return {
    id: row.id,
    status: row.state,
    action: row.action as JobAction,
    processId: row.process_id,
    total: row.total,
    done: row.done,
    failed: row.failed,
    skipped: row.skipped,
    errors: row.errors,
    createdBy: { type: row.actor_type, id: row.actor_id, name: row.actor_name },
    createdAt: row.created_at.toISOString(),
    finishedAt: row.finished_at?.toISOString() ?? null,
    message: row.message,
  };
}

/** A job this server process runs: what it was asked and how far it got (the committed progress). */
interface Running {
  id: string;
  tenantId: number;
  caller: Caller;
  proc: ProcessDef;
  /** the bulk action; null: an import, its rows staged in bulk_job_rows */
  req: BulkRequest | null;
  maxId: number;
  progress: BulkProgress;
  finished: Promise<void>;
}

export interface BulkJobsOptions {
  chunkSize?: number;
  /** how long a server process holds a job without writing progress before another may take it over */
  leaseMs?: number;
  /** whom a chunk lets go first (robots first on the embedded store); default: only yield between chunks */
  turns?: Turns;
}

/**
 * The bulk jobs of the tenants, persisted in bulk_jobs; this object runs the ones its server
 * process holds the lease of, and claims (resume) the ones no live process holds.
 */
export class BulkJobs {
  /** this server process's name on the leases it holds */
  readonly owner = crypto.randomUUID();
  private readonly running = new Map<string, Running>();
  private stopping = false;
  /** tasks per chunk (CHUNK_SIZE, or EMBEDDED_CHUNK_SIZE as the services choose for the embedded store) */
  readonly chunkSize: number;
  private readonly leaseMs: number;
  private readonly turns: Turns;
  /** Awaited after each committed chunk (tests stop or stall a server halfway with it). */
  afterChunk: ((jobId: string) => void | Promise<void>) | null = null;

  constructor(
    private readonly units: Units,
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    opts: BulkJobsOptions | number = {},
  ) {
    const o = typeof opts === 'number' ? { chunkSize: opts } : opts;
    this.chunkSize = o.chunkSize ?? CHUNK_SIZE;
    this.leaseMs = o.leaseMs ?? LEASE_MS;
    this.turns = o.turns ?? new Turns({ prioritize: false });
  }

  /** Counts the tasks, records the job (and its audit entry) and starts it; answers at once with its id and total. */
  async start(caller: Caller, proc: ProcessDef, req: BulkRequest): Promise<{ jobId: string; total: number }> {
    if (caller.actor.type !== 'user') throw new Error('bulk.ts: the caller must be a person');
    if (this.stopping) throw new Refusal('unavailable', 'The server is shutting down; start the bulk action again');
    const id = crypto.randomUUID();
    const total = await countMatching(this.db, caller, proc, req.target);
    const maxId = 'filter' in req.target ? await highestTaskId(this.db, caller.tenantId, proc.id) : 0;
    const now = this.clock.now();
    await this.units.transaction(async (tx) => {
      await insertBulkJob(tx.db, {
        tenant_id: caller.tenantId,
        id,
        process_id: proc.id,
        action: req.action,
        request: req.body,
        time_zone: caller.timeZone,
        actor: caller.actor,
        created_at: caller.now,
        max_id: maxId,
        total,
        lease_owner: this.owner,
        lease_until: new Date(now.getTime() + this.leaseMs),
      });
      await audit(tx, caller, {
        action: 'bulk.start',
        targetType: 'bulkJob',
        targetId: id,
        details: { processId: proc.id, request: req.body, total },
      });
    });
    this.launch({
      id,
      tenantId: caller.tenantId,
      caller: { ...caller, requestId: `bulk:${id}` },
      proc,
      req,
      maxId,
      progress: { cursor: 0, done: 0, failed: 0, skipped: 0, errors: [] },
      finished: Promise.resolve(),
    });
    return { jobId: id, total };
  }

  /**
   * Records an import job with its checked rows (checkImport, src/bulk/import.ts), staged in
   * chunks of chunkSize rows, and its audit entry, in one transaction; starts it and answers at
   * once with its id and total (the rows to create). `request` is kept with the job as a bulk
   * action's body is (what the file was: its format, mapping, rows).
   */
  async startImport(
    caller: Caller,
    proc: ProcessDef,
    rows: ImportRow[],
    request: Record<string, unknown>,
  ): Promise<{ jobId: string; total: number }> {
    if (caller.actor.type !== 'user') throw new Error('bulk.ts: the caller must be a person');
    if (this.stopping) throw new Refusal('unavailable', 'The server is shutting down; send the file again');
    const id = crypto.randomUUID();
    const total = rows.length;
    const now = this.clock.now();
    const body = { ...request, action: 'import' };
    await this.units.transaction(async (tx) => {
      await insertBulkJob(tx.db, {
        tenant_id: caller.tenantId,
        id,
        process_id: proc.id,
        action: 'import',
        request: body,
        time_zone: caller.timeZone,
        actor: caller.actor,
        created_at: caller.now,
        max_id: 0,
        total,
        lease_owner: this.owner,
        lease_until: new Date(now.getTime() + this.leaseMs),
      });
      await stageImportRows(tx.db, caller.tenantId, id, rows, this.chunkSize);
      await audit(tx, caller, {
        action: 'bulk.start',
        targetType: 'bulkJob',
        targetId: id,
        details: { processId: proc.id, request: body, total },
      });
    });
    this.launch({
      id,
      tenantId: caller.tenantId,
      caller: { ...caller, requestId: `bulk:${id}` },
      proc,
      req: null,
      maxId: 0,
      progress: { cursor: 0, done: 0, failed: 0, skipped: 0, errors: [] },
      finished: Promise.resolve(),
    });
    return { jobId: id, total };
  }

  /**
   * Claims up to `limit` unfinished jobs that no live server process holds (a lease run out, or let
   * go at a shutdown) and runs them from where their committed progress says. Returns how many.
   */
  async resume(limit = 4): Promise<number> {
    if (this.stopping) return 0;
    const now = this.clock.now();
    const rows = await this.units.transaction((tx) => claimBulkJobs(tx.db, this.owner, now, new Date(now.getTime() + this.leaseMs), limit));
    for (const row of rows) {
      const key = `${row.tenant_id}:${row.id}`;
      if (this.running.has(key)) continue;
      const proc = await loadProcessById(this.db, row.tenant_id, row.process_id);
      let req: BulkRequest | null;
      try {
        if (!proc) throw new Refusal('process_not_found', `Process ${row.process_id} is gone`);
        req = row.action === 'import' ? null : readBulkRequest(row.request, proc, row.time_zone);
      } catch (err) {
        if (!(err instanceof Refusal)) throw err;
        await this.finish(row.tenant_id, row.id, 'failed', `The job could not resume: ${err.message}`);
        continue;
      }
      this.launch({
        id: row.id,
        tenantId: row.tenant_id,
        caller: {
          tenantId: row.tenant_id,
          timeZone: row.time_zone,
          actor: { type: row.actor_type, id: row.actor_id, name: row.actor_name },
          requestId: `bulk:${row.id}`,
          now,
        },
        proc: proc!,
        req,
        maxId: row.max_id,
        progress: { cursor: row.cursor, done: row.done, failed: row.failed, skipped: row.skipped, errors: row.errors },
        finished: Promise.resolve(),
      });
    }
    return rows.length;
  }

  /** A job's progress, whichever server process runs or ran it; null for an unknown id or another tenant's job. */
  async get(tenantId: number, jobId: string): Promise<BulkJobView | null> {
    const row = await readBulkJob(this.db, tenantId, jobId);
    return row ? viewOf(row) : null;
  }

  /** Waits for a job this process runs to stop (tests, the CLI), then reads it; null for an unknown id or another tenant's job. */
  async wait(tenantId: number, jobId: string): Promise<BulkJobView | null> {
    await this.running.get(`${tenantId}:${jobId}`)?.finished;
    return this.get(tenantId, jobId);
  }

  /** Stops every job after its current chunk; each lets go of its lease for another process to resume it. */
  close(): void {
    this.stopping = true;
  }

  /** Resolves when every running job has stopped. */
  async drain(): Promise<void> {
    await Promise.all([...this.running.values()].map((j) => j.finished));
  }

  private launch(job: Running): void {
    const key = `${job.tenantId}:${job.id}`;
    job.finished = this.run(job).finally(() => this.running.delete(key));
    this.running.set(key, job);
  }

  private async run(job: Running): Promise<void> {
    try {
      for (;;) {
        // before each chunk: let start() answer, requests be read, and robots' calls go first
        await this.turns.background();
        if (this.stopping) {
          await releaseBulkJob(this.db, job.tenantId, job.id, this.owner);
          return;
        }
        if (job.req === null) {
          const rows = await readImportRows(this.db, job.tenantId, job.id, job.proc.id, job.progress.cursor);
          if (rows.length === 0) break;
          await this.importChunk(job, rows);
          await this.afterChunk?.(job.id);
          continue;
        }
        const req = job.req;
        const target = req.target;
        let ids: number[];
        let cursorAfter: (i: number) => number;
        if ('ids' in target) {
          const from = job.progress.cursor;
          ids = target.ids.slice(from, from + this.chunkSize);
          cursorAfter = (i) => from + i + 1;
        } else {
          ids = await nextFilteredIds(
            this.db,
            job.tenantId,
            job.proc.id,
            target.filter,
            this.clock.now(),
            job.progress.cursor,
            job.maxId,
            this.chunkSize,
          );
          cursorAfter = (i) => ids[i];
        }
        if (ids.length === 0) break;
        await this.chunk(job, req.input, ids, cursorAfter);
        await this.afterChunk?.(job.id);
      }
      await this.finish(job.tenantId, job.id, 'done', null);
    } catch (err) {
      // another process took the job over: it carries on from the last committed chunk
      if (err instanceof LostLease) return;
      const message = err instanceof Refusal ? err.message : `The job stopped: ${(err as Error).message}`;
      // when even this fails (the database is gone), the lease runs out and another process resumes the job
      await this.finish(job.tenantId, job.id, 'failed', message).catch(() => false);
    }
  }

  /** Ends a job this process holds, with the staged rows of an import: a job that ended reads them no more. */
  private async finish(tenantId: number, jobId: string, state: 'done' | 'failed', message: string | null): Promise<boolean> {
    return this.units.transaction(async (tx) => {
      const ended = await finishBulkJob(tx.db, tenantId, jobId, this.owner, state, message, this.clock.now());
      if (ended) await dropImportRows(tx.db, tenantId, jobId);
      return ended;
    });
  }

  /**
   * The next staged rows of an import job, created in one transaction with the job's progress.
   * Rows whose unique key an open task holds now (taken after the request's check) are counted
   * as failed; a key taken by a create that commits during this chunk (PostgreSQL) fails the
   * chunk as a whole, which is then done again one row per transaction.
   */
  private async importChunk(job: Running, rows: ImportRow[]): Promise<void> {
    const c: Caller = { ...job.caller, now: this.clock.now() };
    const leaseUntil = new Date(c.now.getTime() + this.leaseMs);
    const from = job.progress.cursor;
    const save = (db: Kysely<Database>, p: BulkProgress) =>
      saveBulkProgress(db, job.tenantId, job.id, this.owner, job.progress.cursor, p, leaseUntil);
    try {
      job.progress = await this.units.transaction(async (tx) => {
        const keys = rows.flatMap((r) => (r.task.uniqueKey === null ? [] : [r.task.uniqueKey]));
        const owners = await findUniqueKeyOwners(tx.db, job.tenantId, job.proc.id, keys);
        const fresh: ImportRow[] = [];
        const taken: BulkJobError[] = [];
        for (const r of rows) {
          const owner = r.task.uniqueKey === null ? undefined : owners.get(r.task.uniqueKey);
          if (owner === undefined) fresh.push(r);
          else taken.push(keyTaken(r, owner));
        }
        if (fresh.length) {
          await createTasks(
            tx,
            c,
            job.proc,
            fresh.map((r) => r.task),
            true,
          );
        }
        const p = tallyRows(job.progress, fresh.length, taken, from + rows.length);
        await save(tx.db, p);
        return p;
      });
      return;
    } catch (err) {
      if (!(err instanceof Refusal) || err.code !== 'duplicate_key') throw err;
    }
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i];
      try {
        job.progress = await this.units.transaction(async (tx) => {
          await createTasks(tx, c, job.proc, [r.task], false);
          const p = tallyRows(job.progress, 1, [], from + i + 1);
          await save(tx.db, p);
          return p;
        });
      } catch (e) {
        if (!(e instanceof Refusal) || e.code !== 'duplicate_key') throw e;
        const owner = e.details.existingTaskId;
        const p = tallyRows(job.progress, 0, [keyTaken(r, typeof owner === 'number' ? owner : null)], from + i + 1);
        await save(this.db, p);
        job.progress = p;
      }
    }
  }

  /**
   * One chunk in one transaction with the job's progress; when the chunk as a whole fails (a key
   * race), one transaction per task, each again with the progress up to that task.
   */
  private async chunk(job: Running, input: PersonAction, ids: number[], cursorAfter: (i: number) => number): Promise<void> {
    const c: Caller = { ...job.caller, now: this.clock.now() };
    const opts = { processId: job.proc.id, loadProcess: async () => job.proc };
    const leaseUntil = new Date(c.now.getTime() + this.leaseMs);
    const save = (db: Kysely<Database>, p: BulkProgress) =>
      saveBulkProgress(db, job.tenantId, job.id, this.owner, job.progress.cursor, p, leaseUntil);
    try {
      job.progress = await this.units.transaction(async (tx) => {
        const p = tally(job.progress, await actOnTasks(tx, c, ids, input, opts), cursorAfter(ids.length - 1));
        await save(tx.db, p);
        return p;
      });
      return;
    } catch (err) {
      if (!(err instanceof Refusal)) throw err;
    }
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i];
      try {
        job.progress = await this.units.transaction(async (tx) => {
          const p = tally(job.progress, await actOnTasks(tx, c, [id], input, opts), cursorAfter(i));
          await save(tx.db, p);
          return p;
        });
      } catch (e) {
        if (!(e instanceof Refusal)) throw e;
        const p = tally(job.progress, new Map([[id, refused(e)]]), cursorAfter(i));
        await save(this.db, p);
        job.progress = p;
      }
    }
  }
}

/** An import row not created: its unique key belongs to an open task created after the check. */
function keyTaken(r: ImportRow, owner: number | null): BulkJobError {
  const k = r.task.uniqueKey ?? '';
  return {
    row: r.row,
    code: 'duplicate_key',
    message: `Row ${r.row}: a task with key ${k} already exists${owner === null ? '' : ` (task ${owner})`}; it was created after the file was checked`,
  };
}

/** The progress after an import chunk: `created` rows done, `failed` rows not. */
function tallyRows(before: BulkProgress, created: number, failed: BulkJobError[], cursor: number): BulkProgress {
  const p: BulkProgress = { ...before, cursor, done: before.done + created, failed: before.failed + failed.length };
  p.errors = [...before.errors, ...failed].slice(0, MAX_ERRORS);
  return p;
}

/** The progress after a chunk's outcomes. */
function tally(before: BulkProgress, outcomes: Map<number, Outcome<TaskRow>>, cursor: number): BulkProgress {
  const p: BulkProgress = { ...before, cursor, errors: [...before.errors] };
  for (const [taskId, o] of outcomes) {
    if (o.ok) {
      p.done++;
      continue;
    }
    if (o.refusal.code === 'task_locked') p.skipped++;
    else p.failed++;
    if (p.errors.length < MAX_ERRORS) p.errors.push({ taskId, code: o.refusal.code, message: o.refusal.message });
  }
  return p;
}
