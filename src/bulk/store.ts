/**
 * The SQL of bulk jobs (src/bulk/jobs.ts): the job row, its progress written in each chunk's
 * transaction, the lease that says which server process runs it, the staged rows of an import job,
 * and the clean-up of old jobs.
 */
import { sql, type Kysely } from 'kysely';
import type { BulkJobError, BulkJobState, Database } from '../db/types.js';
import type { Actor } from '../lib/caller.js';
import { filterCondition, type TaskFilter } from '../task-lists/filter.js';
import type { PreparedTask } from '../tasks/create.js';
import type { Queue } from '../tasks/state-machine.js';

export interface BulkJobRow {
  tenant_id: number;
  id: string;
  process_id: number;
  action: string;
  request: Record<string, unknown>;
  time_zone: string;
  actor_type: Actor['type'];
  actor_id: number | null;
  actor_name: string;
  created_at: Date;
  state: BulkJobState;
  max_id: number;
  cursor: number;
  total: number;
  done: number;
  failed: number;
  skipped: number;
  errors: BulkJobError[];
  message: string | null;
  finished_at: Date | null;
  lease_owner: string | null;
  lease_until: Date | null;
}

/** How far a job got: written together with the chunk's task changes. */
export interface BulkProgress {
  cursor: number;
  done: number;
  failed: number;
  skipped: number;
  errors: BulkJobError[];
}

/** The job's lease was taken by another server process (or the job ended): the chunk must roll back. */
export class LostLease extends Error {
  constructor(jobId: string) {
    super(`bulk job ${jobId}: another server process holds it now`);
  }
}

/** The highest task id of a process now: a job by filter leaves tasks created after its start alone. */
export async function highestTaskId(db: Kysely<Database>, tenantId: number, processId: number): Promise<number> {
  const { rows } = await sql<{ m: number | null }>`SELECT max(id) AS m FROM tasks
    WHERE tenant_id = ${tenantId} AND process_id = ${processId}`.execute(db);
  return Number(rows[0].m ?? 0);
}

/** The next `limit` task ids matching the filter after `after`, up to `maxId`, in id order. */
export async function nextFilteredIds(
  db: Kysely<Database>,
  tenantId: number,
  processId: number,
  filter: TaskFilter,
  now: Date,
  after: number,
  maxId: number,
  limit: number,
): Promise<number[]> {
  const { rows } = await sql<{ id: number }>`SELECT t.id FROM tasks t
    WHERE ${filterCondition(tenantId, processId, filter, now)} AND t.id > ${after} AND t.id <= ${maxId}
    ORDER BY t.id LIMIT ${limit}`.execute(db);
  return rows.map((r) => r.id);
}

export async function insertBulkJob(
  db: Kysely<Database>,
  job: Pick<
    BulkJobRow,
    | 'tenant_id'
    | 'id'
    | 'process_id'
    | 'action'
    | 'request'
    | 'time_zone'
    | 'created_at'
    | 'max_id'
    | 'total'
    | 'lease_owner'
    | 'lease_until'
  > & { actor: Actor },
): Promise<void> {
  const { actor, request, ...rest } = job;
  await db
    .insertInto('bulk_jobs')
    .values({
      ...rest,
      request: JSON.stringify(request),
      actor_type: actor.type,
      actor_id: actor.id,
      actor_name: actor.name,
      state: 'running',
    })
    .execute();
}

export async function readBulkJob(db: Kysely<Database>, tenantId: number, jobId: string): Promise<BulkJobRow | null> {
  const row = await db.selectFrom('bulk_jobs').selectAll().where('tenant_id', '=', tenantId).where('id', '=', jobId).executeTakeFirst();
  return (row as BulkJobRow | undefined) ?? null;
}

/**
 * Moves the job's progress from `fromCursor` to `p` and renews the lease, only while `owner` holds
 * it and nobody moved the cursor meanwhile; otherwise throws LostLease (the caller's transaction,
 * with the chunk's task changes, rolls back).
 */
export async function saveBulkProgress(
  db: Kysely<Database>,
  tenantId: number,
  jobId: string,
  owner: string,
  fromCursor: number,
  p: BulkProgress,
  leaseUntil: Date,
): Promise<void> {
  const r = await db
    .updateTable('bulk_jobs')
    .set({
      cursor: p.cursor,
      done: p.done,
      failed: p.failed,
      skipped: p.skipped,
      errors: JSON.stringify(p.errors),
      lease_until: leaseUntil,
    })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', jobId)
    .where('lease_owner', '=', owner)
    .where('state', '=', 'running')
    .where('cursor', '=', fromCursor)
    .executeTakeFirst();
  if (Number(r.numUpdatedRows) !== 1) throw new LostLease(jobId);
}

/** Ends a job (done or failed) while `owner` holds it; false when it no longer does. */
export async function finishBulkJob(
  db: Kysely<Database>,
  tenantId: number,
  jobId: string,
  owner: string,
  state: 'done' | 'failed',
  message: string | null,
  at: Date,
): Promise<boolean> {
  const r = await db
    .updateTable('bulk_jobs')
    .set({ state, message, finished_at: at, lease_owner: null, lease_until: null })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', jobId)
    .where('lease_owner', '=', owner)
    .where('state', '=', 'running')
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Lets go of a running job at shutdown, so that another server process resumes it at once. */
export async function releaseBulkJob(db: Kysely<Database>, tenantId: number, jobId: string, owner: string): Promise<void> {
  await db
    .updateTable('bulk_jobs')
    .set({ lease_owner: null, lease_until: null })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', jobId)
    .where('lease_owner', '=', owner)
    .where('state', '=', 'running')
    .execute();
}

/**
 * Claims up to `limit` running jobs whose lease ran out or was let go, oldest first. SKIP LOCKED:
 * several server processes claiming at once never claim the same job.
 */
export async function claimBulkJobs(
  db: Kysely<Database>,
  owner: string,
  now: Date,
  leaseUntil: Date,
  limit: number,
): Promise<BulkJobRow[]> {
  const { rows } = await sql<BulkJobRow>`UPDATE bulk_jobs SET lease_owner = ${owner}, lease_until = ${leaseUntil}
    WHERE (tenant_id, id) IN (
      SELECT tenant_id, id FROM bulk_jobs
      WHERE state = 'running' AND (lease_until IS NULL OR lease_until < ${now})
      ORDER BY created_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
    RETURNING *`.execute(db);
  return rows;
}

/** Deletes jobs that ended before `cutoff`; returns how many. */
export async function purgeBulkJobs(db: Kysely<Database>, cutoff: Date): Promise<number> {
  // SKIP LOCKED: the sweeps of several server processes share the ended jobs
  const r = await sql`DELETE FROM bulk_jobs WHERE (tenant_id, id) IN (
    SELECT tenant_id, id FROM bulk_jobs WHERE state <> 'running' AND finished_at < ${cutoff} FOR UPDATE SKIP LOCKED)`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

/** A checked row of an import file: its row number in the file (the header is row 1) and the task it creates. */
export interface ImportRow {
  row: number;
  task: PreparedTask;
}

/** Staged chunks per INSERT: a statement of a megabyte or so. */
const STAGE_PER_STATEMENT = 20;

/**
 * A staged row as written: a list, not an object, so that 100k rows are half the bytes (the
 * process is the job's): row, queue, data, unique key, activation date and deadline (ms), urgent,
 * comment, missing required fields.
 */
type StagedRow = [number, Queue, Record<string, unknown>, string | null, number, number | null, boolean, string | null, string[]];

function staged({ row, task: t }: ImportRow): StagedRow {
  return [
    row,
    t.queue,
    t.data,
    t.uniqueKey,
    t.activationDate.getTime(),
    t.deadline?.getTime() ?? null,
    t.urgent,
    t.comment,
    t.missingRequired,
  ];
}

function unstaged(processId: number, s: StagedRow): ImportRow {
  const [row, queue, data, uniqueKey, activation, deadline, urgent, comment, missingRequired] = s;
  return {
    row,
    task: {
      processId,
      queue,
      data,
      uniqueKey,
      activationDate: new Date(activation),
      deadline: deadline === null ? null : new Date(deadline),
      urgent,
      comment,
      missingRequired,
    },
  };
}

/**
 * Stages an import job's rows in bulk_job_rows, one row per `chunkSize` rows (seq: the index of
 * the chunk's first row), in the caller's transaction (the one recording the job).
 */
export async function stageImportRows(
  db: Kysely<Database>,
  tenantId: number,
  jobId: string,
  rows: ImportRow[],
  chunkSize: number,
): Promise<void> {
  const chunks: { tenant_id: number; job_id: string; seq: number; items: string }[] = [];
  for (let seq = 0; seq < rows.length; seq += chunkSize) {
    chunks.push({ tenant_id: tenantId, job_id: jobId, seq, items: JSON.stringify(rows.slice(seq, seq + chunkSize).map(staged)) });
  }
  for (let i = 0; i < chunks.length; i += STAGE_PER_STATEMENT) {
    await db
      .insertInto('bulk_job_rows')
      .values(chunks.slice(i, i + STAGE_PER_STATEMENT))
      .execute();
  }
}

/**
 * The staged rows of an import job (of process `processId`) from the `cursor`-th row (rows done)
 * to the end of its staged chunk: a whole chunk, or its rest when a key race left the cursor
 * inside one. Empty at the end.
 */
export async function readImportRows(
  db: Kysely<Database>,
  tenantId: number,
  jobId: string,
  processId: number,
  cursor: number,
): Promise<ImportRow[]> {
  const r = await db
    .selectFrom('bulk_job_rows')
    .select(['seq', 'items'])
    .where('tenant_id', '=', tenantId)
    .where('job_id', '=', jobId)
    .where('seq', '<=', cursor)
    .orderBy('seq', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (!r) return [];
  const items = JSON.parse(r.items) as StagedRow[];
  return items.slice(cursor - r.seq).map((s) => unstaged(processId, s));
}

/** Drops the staged rows of an import job that ended. */
export async function dropImportRows(db: Kysely<Database>, tenantId: number, jobId: string): Promise<void> {
  await db.deleteFrom('bulk_job_rows').where('tenant_id', '=', tenantId).where('job_id', '=', jobId).execute();
}
