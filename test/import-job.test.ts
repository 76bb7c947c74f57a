/**
 * A large import is a bulk job (src/bulk/jobs.ts startImport, src/bulk/import.ts checkImport,
 * migration 0016): a file of more rows than one chunk answers 202 with the job, and the job creates
 * the rows chunk by chunk through the create path, each row once with its history, its progress
 * moving chunk by chunk; a file with a bad row is refused whole as before; a file of one chunk is
 * still created in the request (200); a key taken after the check fails its row only; a job cut off
 * by a restart is finished by the next app, each row created exactly once.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import { createApp } from '../src/app.js';
import { testConfig } from '../src/config.js';
import { ManualClock } from '../src/lib/clock.js';
import { createProcess } from '../src/processes/service.js';
import { loadProcessById, type ProcessDef } from '../src/processes/store.js';
import { createTasks, prepareTasks } from '../src/tasks/create.js';
import { sweepOnce } from '../src/maintenance/sweep.js';
import { testStore, type TestStore } from './helpers/db.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { inTx, personCaller } from './helpers/person.js';
import { asPerson, personWithToken, type TestPerson } from './helpers/people.js';

const clock = new ManualClock('2026-06-01T08:00:00.000Z');
let store: TestStore;
let app: FastifyInstance;
let tenant: SeededTenant;
let agent: TestPerson;
let n = 0;

const build = () => createApp(testConfig(), { store, clock, sweeper: false });

before(async () => {
  store = await testStore();
  app = await build();
  await app.ready();
  tenant = await seedTenant(store, 'import-job');
  agent = await personWithToken(store, tenant.tenantId, 'agent');
});
after(async () => {
  await app.close();
  await store.close();
});

async function freshProcess(): Promise<ProcessDef> {
  const key = `J${++n}`;
  const p = await createProcess(store.db, tenant.tenantId, {
    processKey: key,
    fields: [
      { name: 'ref', type: 'text', isKey: true, unique: true },
      { name: 'amount', type: 'number', required: true },
    ],
  });
  return (await loadProcessById(store.db, tenant.tenantId, p.id))!;
}

/** A CSV of `rows` rows R<prefix>-0 … with an amount, a comment on every 100th row. */
function csvOf(prefix: string, rows: number, bad: (i: number) => boolean = () => false): string {
  const lines = ['ref,amount,comment'];
  for (let i = 0; i < rows; i++) lines.push(`${prefix}-${i},${bad(i) ? 'lots' : i},${i % 100 === 0 ? `note ${i}` : ''}`);
  return `${lines.join('\n')}\n`;
}

function upload(a: FastifyInstance, proc: ProcessDef, csv: string) {
  return asPerson(a, agent, {
    method: 'POST',
    url: `/v1/processes/${proc.id}/tasks/import`,
    headers: { 'content-type': 'text/csv' },
    payload: csv,
  });
}

const jobRow = (id: string) =>
  sql<{ state: string; cursor: number; done: number; failed: number; lease_owner: string | null; staged: number }>`
    SELECT state, cursor, done, failed, lease_owner,
      (SELECT count(*)::int FROM bulk_job_rows r WHERE r.tenant_id = j.tenant_id AND r.job_id = j.id) AS staged
    FROM bulk_jobs j WHERE tenant_id = ${tenant.tenantId} AND id = ${id}`
    .execute(store.db)
    .then((r) => r.rows[0]);

/** Per task of the process: its key, how many history rows the job wrote for it, its comments. */
async function createdBy(proc: ProcessDef, jobId: string) {
  const { rows } = await sql<{ tasks: number; keys: number; history: number; historyTasks: number; byAgent: number; comments: number }>`
    SELECT count(*)::int AS tasks, count(DISTINCT t.unique_key)::int AS keys,
      (SELECT count(*)::int FROM task_history h WHERE h.tenant_id = ${tenant.tenantId} AND h.request_id = ${`bulk:${jobId}`}) AS history,
      (SELECT count(DISTINCT h.task_id)::int FROM task_history h WHERE h.tenant_id = ${tenant.tenantId} AND h.request_id = ${`bulk:${jobId}`}) AS "historyTasks",
      count(*) FILTER (WHERE t.created_by_type = 'user' AND t.created_by_id = ${agent.userId})::int AS "byAgent",
      (SELECT count(*)::int FROM task_comments c JOIN tasks x ON x.tenant_id = c.tenant_id AND x.id = c.task_id
        WHERE x.tenant_id = ${tenant.tenantId} AND x.process_id = ${proc.id}) AS comments
    FROM tasks t WHERE t.tenant_id = ${tenant.tenantId} AND t.process_id = ${proc.id}`.execute(store.db);
  return rows[0];
}

test('a file of one chunk is created in the request: 200 with the ids, no job', async () => {
  const proc = await freshProcess();
  const size = app.services.bulkJobs.chunkSize;
  const res = await upload(app, proc, csvOf('S', size));
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.json().created, size);
  assert.equal(res.json().taskIds.length, size);
  const jobs = await sql<{
    n: number;
  }>`SELECT count(*)::int AS n FROM bulk_jobs WHERE tenant_id = ${tenant.tenantId} AND process_id = ${proc.id}`.execute(store.db);
  assert.equal(jobs.rows[0].n, 0);
});

test('a larger file with a bad row is refused whole: nothing created, no job', async () => {
  const proc = await freshProcess();
  const rows = app.services.bulkJobs.chunkSize * 3;
  const res = await upload(
    app,
    proc,
    csvOf('B', rows, (i) => i === rows - 1),
  );
  assert.equal(res.statusCode, 400, res.body);
  assert.equal(res.json().errors[0].index, rows + 1, 'the bad row, numbered as in the file');
  assert.equal((await createdBy(proc, 'none')).tasks, 0);
  const jobs = await sql<{
    n: number;
  }>`SELECT count(*)::int AS n FROM bulk_jobs WHERE tenant_id = ${tenant.tenantId} AND process_id = ${proc.id}`.execute(store.db);
  assert.equal(jobs.rows[0].n, 0);
});

test('a file larger than one chunk: 202 with the job, its progress moves chunk by chunk, each row created once with its history', async () => {
  const proc = await freshProcess();
  const size = app.services.bulkJobs.chunkSize;
  const rows = size * 5 + 7;
  const seen: number[] = [];
  app.services.bulkJobs.afterChunk = async (id) => {
    const job = await asPerson(app, agent, { method: 'GET', url: `/v1/jobs/${id}` });
    seen.push(job.json().done);
  };
  try {
    const res = await upload(app, proc, csvOf('L', rows));
    assert.equal(res.statusCode, 202, res.body);
    const { jobId, total, queues, dryRun } = res.json();
    assert.deepEqual([total, queues, dryRun], [rows, { Ready: rows }, false]);
    await app.services.bulkJobs.wait(tenant.tenantId, jobId);
    const v = (await asPerson(app, agent, { method: 'GET', url: `/v1/jobs/${jobId}` })).json();
    assert.deepEqual([v.status, v.action, v.total, v.done, v.failed, v.skipped, v.errors], ['done', 'import', rows, rows, 0, 0, []]);
    assert.deepEqual(v.createdBy, { type: 'user', id: agent.userId, name: agent.username });
    assert.deepEqual(seen, [size, 2 * size, 3 * size, 4 * size, 5 * size, rows], 'one step per chunk');
    assert.deepEqual(await createdBy(proc, jobId), {
      tasks: rows,
      keys: rows,
      history: rows,
      historyTasks: rows,
      byAgent: rows,
      comments: Math.ceil(rows / 100),
    });
    const job = await jobRow(jobId);
    assert.deepEqual([job.cursor, job.staged], [rows, 0], 'the staged rows go when the job ends');
  } finally {
    app.services.bulkJobs.afterChunk = null;
  }
});

test('a key taken by a task created after the check: that row fails as duplicate_key with its row number, the others are created', async () => {
  const proc = await freshProcess();
  const size = app.services.bulkJobs.chunkSize;
  const rows = size * 3;
  const caller = personCaller(tenant.tenantId, { id: agent.userId, username: agent.username }, clock.now());
  let raced = 0;
  app.services.bulkJobs.afterChunk = async () => {
    // after the first chunk, someone creates the task of the file's last data row
    if (raced++ === 0)
      await inTx(app, (tx) =>
        createTasks(tx, caller, proc, prepareTasks(caller, proc, [{ ref: `K-${rows - 1}`, amount: 1 }], false), false),
      );
  };
  try {
    const res = await upload(app, proc, csvOf('K', rows));
    assert.equal(res.statusCode, 202, res.body);
    const { jobId } = res.json();
    await app.services.bulkJobs.wait(tenant.tenantId, jobId);
    const v = (await asPerson(app, agent, { method: 'GET', url: `/v1/jobs/${jobId}` })).json();
    assert.deepEqual([v.status, v.total, v.done, v.failed], ['done', rows, rows - 1, 1]);
    assert.equal(v.errors.length, 1);
    assert.deepEqual([v.errors[0].row, v.errors[0].code, v.errors[0].taskId], [rows + 1, 'duplicate_key', undefined]);
    assert.match(v.errors[0].message, new RegExp(`^Row ${rows + 1}: a task with key K-${rows - 1} already exists`, 'i'));
    const made = await createdBy(proc, jobId);
    assert.deepEqual(
      [made.tasks, made.keys, made.history],
      [rows, rows, rows - 1],
      'the other task holds the key; the job created the rest',
    );
  } finally {
    app.services.bulkJobs.afterChunk = null;
  }
});

test('an import job cut off by a restart is finished by the next app: each row created exactly once', async () => {
  const proc = await freshProcess();
  const size = app.services.bulkJobs.chunkSize;
  const rows = size * 6 + 3;
  let chunks = 0;
  let closing: Promise<void> | null = null;
  app.services.bulkJobs.afterChunk = () => {
    if (++chunks === 2) closing = app.close();
  };
  const res = await upload(app, proc, csvOf('R', rows));
  assert.equal(res.statusCode, 202, res.body);
  const { jobId } = res.json();
  await app.services.bulkJobs.wait(tenant.tenantId, jobId);
  await closing;
  const cut = await jobRow(jobId);
  assert.deepEqual([cut.state, cut.lease_owner], ['running', null], 'cut off while running, the lease let go');
  assert.ok(cut.done >= 2 * size && cut.done < rows, `${cut.done} done at the cut`);
  assert.equal(cut.cursor, cut.done);
  const mid = await createdBy(proc, jobId);
  assert.deepEqual([mid.tasks, mid.history], [cut.done, cut.done], 'the progress and the rows committed together');

  app = await build();
  await app.ready();
  const swept = await sweepOnce(app.services, clock.now());
  assert.equal(swept.bulkJobsResumed, 1);
  await app.services.bulkJobs.wait(tenant.tenantId, jobId);
  const v = (await asPerson(app, agent, { method: 'GET', url: `/v1/jobs/${jobId}` })).json();
  assert.deepEqual([v.status, v.total, v.done, v.failed], ['done', rows, rows, 0]);
  const made = await createdBy(proc, jobId);
  assert.deepEqual([made.tasks, made.keys, made.history, made.historyTasks], [rows, rows, rows, rows], 'each row once, none missed');
});
