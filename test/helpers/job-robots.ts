/**
 * A person's large job (a bulk move, an import) and a robot at once, over a real port: what the
 * robots-first tests (bulk-robots-first, import-job-robots) check in the same way. Ordering is
 * asserted, not timing: a Mate's call is answered while the job still runs.
 */
import assert from 'node:assert/strict';
import type { TestStore } from './db.js';

export interface JobAndRobot {
  /** the server's origin (the app listening on a port) */
  base: string;
  store: TestStore;
  personToken: string;
  mateToken: string;
}

export interface MateAnswer {
  status: number;
  body: any;
  ms: number;
  /** where the job was when the answer arrived */
  jobState: string;
  jobDone: number;
}

const jobRow = (store: TestStore, id: string) =>
  store.db.selectFrom('bulk_jobs').select(['state', 'done', 'total']).where('id', '=', id).executeTakeFirstOrThrow();

async function mateCall(r: JobAndRobot, jobId: string, path: string): Promise<MateAnswer> {
  const t0 = performance.now();
  const res = await fetch(`${r.base}${path}`, { headers: { authorization: `Bearer ${r.mateToken}` } });
  const body = await res.json();
  const ms = performance.now() - t0;
  const job = await jobRow(r.store, jobId);
  return { status: res.status, body, ms, jobState: job.state, jobDone: job.done };
}

/**
 * Right after a job's 202: the job is running, and a Mate's OkToRun and TakeNext on `processKey`
 * (which has tasks to take) are answered, and answered before the job ends.
 */
export async function assertRobotsServed(r: JobAndRobot, jobId: string, total: number, processKey: string): Promise<MateAnswer[]> {
  const atAnswer = await jobRow(r.store, jobId);
  assert.equal(atAnswer.state, 'running', 'the 202 came while the job was running');
  assert.ok(atAnswer.done < total);
  const calls = await Promise.all([mateCall(r, jobId, `/api/OkToRun/${processKey}`), mateCall(r, jobId, `/api/TakeNext/${processKey}`)]);
  const [ok, taken] = calls;
  assert.equal(ok.status, 200);
  assert.equal(ok.body.gateOpen, true);
  assert.equal(taken.status, 200);
  assert.ok(taken.body.taskId > 0, JSON.stringify(taken.body));
  for (const call of calls) {
    assert.equal(call.jobState, 'running', 'the Mate was answered before the job ended');
    assert.ok(call.jobDone < total);
  }
  return calls;
}

/** Reads the job as a person's page does (`GET /v1/jobs/:id`) until it ends: its last view, and the progress values seen. */
export async function followJob(r: JobAndRobot, jobId: string): Promise<{ job: any; seen: Set<number> }> {
  const seen = new Set<number>();
  for (;;) {
    const res = await fetch(`${r.base}/v1/jobs/${jobId}`, { headers: { authorization: `Bearer ${r.personToken}` } });
    const job = (await res.json()) as { status: string; done: number };
    if (job.status !== 'running') return { job, seen };
    if (job.done > 0) seen.add(job.done);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
