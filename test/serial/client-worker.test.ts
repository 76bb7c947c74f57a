/**
 * runWorker against a real server on a real port (both stores): 1,000 tasks drained by 4 slots with
 * the right outcome for each and none handled twice; TakeMany slots; a handler slower than the
 * lock's lease keeps its lock; a stop mid-run leaves no task locked; back-off while the process is
 * stopped; Failure reported when the loop breaks; and the examples in client/examples, run as
 * child processes the way a robot developer runs them.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { updateSettings } from '../helpers/app.js';
import { clientServer, countingFetch, tasksOf, type ClientServer } from '../helpers/client-server.js';
import { tempDir } from '../foundation-support.js';
import { createTasksInChunks, ManualError, RetryError, runWorker, type MateClient } from '../../client/src/index.js';

let s: ClientServer;
let client: MateClient;
const N = { fields: [{ name: 'n', type: 'integer' as const }] };

before(async () => {
  s = await clientServer('wk', [
    { processKey: 'drain', ...N },
    { processKey: 'many', ...N },
    { processKey: 'slow', ...N },
    { processKey: 'stop', ...N },
    { processKey: 'gate', ...N },
    { processKey: 'broken', ...N },
    {
      processKey: 'invoices',
      fields: [
        { name: 'invoiceNo', type: 'text' },
        { name: 'amount', type: 'number' },
      ],
    },
  ]);
  client = s.client();
});
after(() => s.close());

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function seed(processKey: string, count: number): Promise<void> {
  await createTasksInChunks(
    client,
    processKey,
    Array.from({ length: count }, (_, n) => ({ n })),
  );
}

async function lockedCount(processKey: string): Promise<number> {
  const rows = await tasksOf(s.t, s.tenant.tenantId, await s.processId(processKey));
  return rows.filter((r) => r.locked_until !== null).length;
}

test('concurrency 4 drains 1,000 tasks: each handled once, handed back by its outcome', async () => {
  await seed('drain', 1000);
  const handled = new Map<number, number>();
  let inFlight = 0;
  let most = 0;
  const tomorrow = new Date(Date.now() + 86_400_000);
  const stats = await runWorker<{ n: number }>(
    client,
    'drain',
    async (task) => {
      handled.set(task.taskId, (handled.get(task.taskId) ?? 0) + 1);
      most = Math.max(most, ++inFlight);
      try {
        // the first four wait for each other (at most 10 s): four slots work at once
        for (let i = 0; handled.size <= 4 && inFlight < 4 && i < 200; i++) await sleep(50);
        await sleep(task.n! % 7); // a little work, so that slots overlap
        switch (task.n! % 4) {
          case 0:
            return { reason: 'booked', comment: `solved ${task.n}`, overwriteEntries: 2 };
          case 1:
            throw new ManualError('needs a person', { comment: `manual ${task.n}` });
          case 2:
            // not before tomorrow: taken again today it would be handled twice
            throw new RetryError('try again tomorrow', { activationDate: tomorrow });
          default:
            throw new Error(`boom ${task.n}`);
        }
      } finally {
        inFlight--;
      }
    },
    { concurrency: 4, untilEmpty: true },
  );
  assert.deepEqual(stats, { solved: 250, manual: 250, retried: 250, errors: 250, handBackFailures: 0 });
  assert.equal(handled.size, 1000);
  assert.deepEqual([...new Set(handled.values())], [1], 'no task handled twice');
  assert.equal(most, 4, 'four at a time');

  const rows = await tasksOf(s.t, s.tenant.tenantId, await s.processId('drain'));
  const expected = (n: number) =>
    [
      ['Solved', false, 'booked', 0],
      ['Manual', false, 'needs a person', 0],
      ['Ready', false, 'try again tomorrow', 1],
      ['Manual', true, `boom ${n}`, 0],
    ][n % 4];
  for (const r of rows) {
    assert.deepEqual([r.queue, r.error, r.reason, r.retry_count], expected(r.data.n as number), `task n=${r.data.n}`);
    assert.equal(r.locked_until, null);
  }
  // the comments: the returned one, ManualError's, and an Error's stack
  const { rows: comments } = await sql<{ body: string; n: number }>`SELECT c.body, (t.data->>'n')::int AS n FROM task_comments c
    JOIN tasks t ON t.tenant_id = c.tenant_id AND t.id = c.task_id WHERE t.process_id = ${await s.processId('drain')}`.execute(
    s.t.store.db,
  );
  const byN = new Map(comments.map((c) => [c.n, c.body]));
  assert.equal(byN.get(4), 'solved 4');
  assert.equal(byN.get(5), 'manual 5');
  assert.match(byN.get(7) ?? '', /^Error: boom 7\n\s+at /);
  const { rows: kpi } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM kpi_events
    WHERE process_id = ${await s.processId('drain')} AND outcome = 'Solved' AND entries = 2`.execute(s.t.store.db);
  assert.equal(kpi[0].n, 250, "the returned value's KPI override");
});

test('takeMany: free slots are filled from TakeMany calls', async () => {
  await seed('many', 120);
  const counted = countingFetch();
  const c = s.client({ fetch: counted.fetch });
  const seen = new Set<number>();
  const stats = await runWorker(
    c,
    'many',
    async (task) => {
      assert.ok(!seen.has(task.taskId));
      seen.add(task.taskId);
      await sleep(2);
    },
    { concurrency: 8, takeMany: 10, untilEmpty: true },
  );
  assert.equal(stats.solved, 120);
  assert.equal(counted.count(/TakeNext/), 0);
  assert.ok(counted.count(/TakeMany/) < 60, `${counted.count(/TakeMany/)} TakeMany calls for 120 tasks`);
  assert.equal(await lockedCount('many'), 0);
});

test('a handler slower than the lock lease keeps its lock (and without the extension loses it)', async () => {
  await updateSettings(s.t, s.tenant.tenantId, await s.processId('slow'), { lock_timeout_seconds: 3 });
  await seed('slow', 1);
  const counted = countingFetch();
  const kept = await runWorker(s.client({ fetch: counted.fetch }), 'slow', () => sleep(5000), {
    untilEmpty: true,
    lockSeconds: 3, // extended every second, by 3 s
  });
  assert.deepEqual([kept.solved, kept.handBackFailures], [1, 0]);
  assert.ok(counted.count(/ExtendLock/) >= 4, `${counted.count(/ExtendLock/)} extensions`);

  // the control: the first extension would come after 10 s, the 3 s lease ends first
  await seed('slow', 1);
  const problems: unknown[] = [];
  const lost = await runWorker(client, 'slow', () => sleep(5000), { untilEmpty: true, lockSeconds: 30, onError: (e) => problems.push(e) });
  assert.deepEqual([lost.solved, lost.handBackFailures], [0, 1]);
  assert.equal((problems[0] as { code?: string }).code, 'lock_expired');
});

test('a stop mid-run: tasks in flight finish, or go back to Ready at the deadline; none stays locked', async () => {
  await seed('stop', 20);
  // 1. handlers that finish within the deadline: their tasks are solved, nothing more is taken
  const stop1 = new AbortController();
  let started = 0;
  const finished = await runWorker(
    client,
    'stop',
    async () => {
      if (++started === 4) stop1.abort();
      await sleep(150);
    },
    { concurrency: 4, signal: stop1.signal, stopDeadlineMs: 10_000 },
  );
  assert.equal(finished.solved, started);
  assert.ok(started >= 4 && started <= 7, `${started} handlers started`);
  assert.equal(await lockedCount('stop'), 0);

  // 2. handlers that never finish: at the deadline their signal aborts and their tasks go back
  const stop2 = new AbortController();
  const aborted: boolean[] = [];
  let begun = 0;
  const t0 = Date.now();
  const given = await runWorker(
    client,
    'stop',
    (_task, ctx) =>
      new Promise<void>((resolve) => {
        if (++begun === 4) setTimeout(() => stop2.abort(), 20);
        ctx.signal.addEventListener('abort', () => {
          aborted.push(true);
          setTimeout(resolve, 50); // it ends late: its outcome no longer counts
        });
      }),
    { concurrency: 4, signal: stop2.signal, stopDeadlineMs: 300 },
  );
  assert.ok(Date.now() - t0 < 5000);
  assert.deepEqual([given.solved, given.retried, given.handBackFailures], [0, 4, 0]);
  assert.equal(aborted.length, 4);
  assert.equal(await lockedCount('stop'), 0, 'no task left locked');
  const rows = await tasksOf(s.t, s.tenant.tenantId, await s.processId('stop'));
  assert.equal(rows.filter((r) => r.queue === 'Ready' && r.retry_count === 1).length, 4);
  assert.equal(rows.filter((r) => r.queue === 'Solved').length, started);
});

test('backs off while the process is stopped, one OkToRun at a time, and starts when it opens', async () => {
  const gateId = await s.processId('gate');
  await updateSettings(s.t, s.tenant.tenantId, gateId, { gate_open: false });
  await seed('gate', 3);
  const counted = countingFetch();
  const stop = new AbortController();
  const solved: number[] = [];
  const running = runWorker(s.client({ fetch: counted.fetch }), 'gate', (task) => void solved.push(task.taskId), {
    concurrency: 4,
    signal: stop.signal,
    maxIdleMs: 400,
  });
  await sleep(1500);
  assert.equal(counted.count(/TakeNext/), 0, 'no take while the gate is closed');
  const polls = counted.count(/OkToRun/);
  assert.ok(polls >= 1 && polls <= 8, `${polls} OkToRun calls in 1.5 s`);
  await updateSettings(s.t, s.tenant.tenantId, gateId, { gate_open: true });
  for (let i = 0; i < 100 && solved.length < 3; i++) await sleep(50);
  assert.equal(solved.length, 3);
  stop.abort();
  const stats = await running;
  assert.equal(stats.solved, 3);
});

test('when taking fails for good, the loop reports Failure for the process and rejects', async () => {
  await seed('broken', 2);
  const c = s.client({
    fetch: (input, init) =>
      String(input).includes('/api/TakeNext/')
        ? Promise.resolve(new Response('{"succeeded":false,"message":"boom","code":"internal_error"}', { status: 500 }))
        : fetch(input, init),
  });
  await assert.rejects(
    runWorker(c, 'broken', () => {}, { concurrency: 2 }),
    (e: { code?: string }) => e.code === 'internal_error',
  );
  const { rows } = await sql<{
    failure_message: string | null;
  }>`SELECT failure_message FROM processes WHERE id = ${await s.processId('broken')}`.execute(s.t.store.db);
  assert.match(rows[0].failure_message ?? '', /The worker loop of broken stopped: .*boom/s);
});

/** Runs an example as a robot developer would (tsx, the package by name), resolved to the client's sources. */
function runExample(name: string, args: string[] = [], env: NodeJS.ProcessEnv = {}) {
  const child = spawn(
    process.execPath,
    ['--conditions=@queuemate/source', '--import', 'tsx', path.join('client', 'examples', `${name}.ts`), ...args],
    {
      env: {
        ...process.env,
        // a locale that writes 1.234,5: the amounts still go out as JSON numbers
        LC_ALL: 'de_DE.UTF-8',
        LANG: 'de_DE.UTF-8',
        QUEUEMATE_URL: s.base,
        QUEUEMATE_CLIENT_ID: s.tenant.clientId,
        QUEUEMATE_API_SECRET: s.tenant.apiSecret,
        QUEUEMATE_MATE: s.tenant.mateUsername,
        QUEUEMATE_PASSWORD: s.tenant.matePassword,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, exited, output: () => out };
}

test('the examples run: the allocator creates the invoices, the worker works them and stops on SIGTERM', async () => {
  const dir = tempDir('client-examples-');
  const file = path.join(dir, 'invoices.json');
  // two chunks of the example's 500
  const invoices = Array.from({ length: 510 }, (_, i) => ({ invoiceNo: `INV-${i}`, amount: i === 7 ? 25_000 : 1234.5 + i }));
  fs.writeFileSync(file, JSON.stringify(invoices));
  const allocator = runExample('allocator', [file]);
  assert.equal(await allocator.exited, 0, allocator.output());
  assert.match(allocator.output(), /500 of 510 created\n510 of 510 created\ncreated 510 tasks/);

  const worker = runExample('worker');
  const invoicesId = await s.processId('invoices');
  let rows = await tasksOf(s.t, s.tenant.tenantId, invoicesId);
  for (let i = 0; i < 600 && rows.some((r) => r.queue === 'Ready'); i++) {
    await sleep(100);
    rows = await tasksOf(s.t, s.tenant.tenantId, invoicesId);
  }
  worker.child.kill('SIGTERM');
  assert.equal(await worker.exited, 0, worker.output());
  assert.equal(rows.length, 510);
  assert.equal(rows.filter((r) => r.queue === 'Solved').length, 509, worker.output());
  const big = rows.find((r) => r.data.invoiceNo === 'INV-7')!;
  assert.deepEqual([big.queue, big.reason], ['Manual', 'Needs a person: no amount, or over 10,000']);
  assert.equal(rows.find((r) => r.data.invoiceNo === 'INV-1')!.data.amount, 1235.5);
  assert.equal(await lockedCount('invoices'), 0);
});
