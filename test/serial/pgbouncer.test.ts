/**
 * A real server process (`queuemate start`) behind a real PgBouncer in transaction pooling mode
 * (docs/deployment.md, "PgBouncer"): DATABASE_URL points at PgBouncer, which hands each transaction
 * any of its few server connections; QUEUEMATE_DB_SESSION_URL points at PostgreSQL itself for the
 * migrator and the events LISTEN; named prepared statements are off (PgBouncer before 1.21 cannot
 * carry them) and the timeouts are not sent as start-up parameters (PgBouncer refuses them).
 *
 * Through it: Mates running the life cycle concurrently (token, OkToRun, StartRun, CreateTasks,
 * TakeNext, ExtendLock, Solved / Retry / Error / Manual, FinishRun), a person's bulk move by filter
 * over more than one chunk, and a live stream that sees every event of the tenant. PgBouncer's own
 * statistics show the transactions went through it.
 *
 * PostgreSQL only, and only where Debian's `pgbouncer` package is installed (CI installs it).
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { DATABASE_URL, testStore, type TestStore } from '../helpers/db.js';
import { seedTenant } from '../helpers/seed.js';
import { personWithToken } from '../helpers/people.js';
import { SseClient } from '../helpers/sse.js';
import { remoteCall, remoteToken } from '../helpers/remote.js';
import { pgbouncerBinary, startPgBouncer, type PgBouncer } from '../helpers/pgbouncer.js';
import { spawnCli, killAll, tempDir } from '../foundation-support.js';
import { readEvents } from '../../src/events/store.js';

const BIN = pgbouncerBinary();
const skip = !DATABASE_URL
  ? 'PostgreSQL only (set DATABASE_URL): PgBouncer pools PostgreSQL connections'
  : !BIN
    ? 'pgbouncer is not installed (apt-get install pgbouncer); CI installs it'
    : false;

let store: TestStore | null = null;
let bouncer: PgBouncer | null = null;
let stream: SseClient | null = null;
after(async () => {
  stream?.close();
  await killAll();
  await bouncer?.stop();
  await store?.close();
});

test('behind PgBouncer in transaction mode: the Mate life cycle, a bulk move and a live stream', { skip }, async () => {
  store = await testStore();
  const tenant = await seedTenant(store, 'bouncer', {
    processes: [{ processKey: 'Work' }],
  });
  const admin = await personWithToken(store, tenant.tenantId, 'admin', 'boss');
  // three server connections for a pool of eight clients: transactions of one client land on different ones
  bouncer = await startPgBouncer(BIN!, store.url!, tempDir('qm-pgbouncer-'), { poolSize: 3 });

  const cli = spawnCli(['start', '--port', '0', '--log-level', 'warn'], {
    env: {
      DATABASE_URL: bouncer.url,
      QUEUEMATE_DB_SESSION_URL: store.url!,
      QUEUEMATE_DB_PREPARED_STATEMENTS: 'off',
      QUEUEMATE_DB_LOCK_TIMEOUT: '0',
      QUEUEMATE_DB_STATEMENT_TIMEOUT: '0',
      QUEUEMATE_DB_POOL_SIZE: '8',
    },
    timeoutMs: 300_000,
  });
  const base = (await cli.waitFor(/listening on (http:\/\/\S+)/, 120_000))[1];
  const before = await bouncer.stats();

  stream = await SseClient.connect(`${base}/v1/events`, { authorization: `Bearer ${admin.token}` });
  assert.equal(stream.status, 200);

  const token = await remoteToken(base, tenant);
  const mate = async (path: string, body?: unknown) => {
    const r = await remoteCall(base, token, path, body);
    assert.equal(r.status, 200, `${path}: ${JSON.stringify(r.body)}\n${cli.stderr()}`);
    return r.body;
  };
  const { runId } = await mate('/api/StartRun/Work');
  const TASKS = 40;
  const created = await mate(
    '/api/CreateTasks/Work',
    Array.from({ length: TASKS }, (_, i) => ({ coreSystemKey: `T-${i}` })),
  );
  assert.equal(created.taskIds.length, TASKS);
  assert.equal((await mate('/api/OkToRun/Work')).okToRun, true);

  // four Mates at once, each task by its place in the batch: Solved, Retry, Error or Manual after ExtendLock
  const outcomes = ['Solved', 'Retry', 'Error', 'Manual'] as const;
  const handled = new Map<number, string>();
  const mateLoop = async () => {
    for (;;) {
      const task = await mate('/api/TakeNext/Work');
      if (task.taskId <= 0) return;
      if (handled.has(task.taskId)) {
        // a Retry put it back: it comes round once more and is solved
        assert.equal((await mate('/api/Solved', { taskId: task.taskId })).succeeded, true);
        handled.set(task.taskId, 'Solved');
        continue;
      }
      const ext = await mate('/api/ExtendLock', { taskId: task.taskId, seconds: 120 });
      assert.equal(ext.succeeded, true, JSON.stringify(ext));
      const outcome = outcomes[created.taskIds.indexOf(task.taskId) % outcomes.length];
      const r = await mate(`/api/${outcome}`, { taskId: task.taskId, reason: `by ${outcome}` });
      assert.equal(r.succeeded, true, `${outcome} of ${task.taskId}: ${JSON.stringify(r)}`);
      handled.set(task.taskId, outcome);
    }
  };
  await Promise.all([mateLoop(), mateLoop(), mateLoop(), mateLoop()]);
  // a task retried while another Mate found the queue empty is still Ready: one more pass
  await mateLoop();
  assert.equal(handled.size, TASKS, 'every task was taken');
  // the empty TakeNext closed the run already (docs/mate-api.md §7.3)
  const finished = await mate('/api/FinishRun', { runId });
  assert.ok(finished.succeeded || finished.code === 'run_finished', JSON.stringify(finished));
  const queues = await store.db
    .selectFrom('tasks')
    .select(['queue', 'error'])
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('tenant_id', '=', tenant.tenantId)
    .groupBy(['queue', 'error'])
    .execute();
  const n = (queue: string, error: boolean) => Number(queues.find((q) => q.queue === queue && q.error === error)?.n ?? 0);
  assert.equal(n('Solved', false), TASKS / 2, 'the Solved and the retried ones');
  assert.equal(n('Manual', true), TASKS / 4, 'the Error ones');
  assert.equal(n('Manual', false), TASKS / 4, 'the Manual ones');

  // a person's bulk move by filter, over three chunks of 500: Ready tasks of Work go to Manual
  const MANY = 1200;
  for (let i = 0; i < MANY; i += 400) {
    await mate(
      '/api/CreateTasks/Work',
      Array.from({ length: 400 }, (_, j) => ({ coreSystemKey: `B-${i + j}` })),
    );
  }
  const work = await store.db
    .selectFrom('processes')
    .select('id')
    .where('tenant_id', '=', tenant.tenantId)
    .where('process_key', '=', 'Work')
    .executeTakeFirstOrThrow();
  const started = await remoteCall(base, admin.token, `/v1/processes/${work.id}/tasks/bulk`, {
    action: 'move',
    queue: 'Manual',
    filter: { queue: 'Ready' },
  });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  assert.equal(started.body.total, MANY);
  const deadline = Date.now() + 120_000;
  let job: any;
  for (;;) {
    job = (await remoteCall(base, admin.token, `/v1/jobs/${started.body.jobId}`)).body;
    if (job.status !== 'running' || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  assert.equal(job.status, 'done', JSON.stringify(job));
  assert.equal(job.done, MANY);
  assert.equal(n('Manual', false) + MANY, await count(store, tenant.tenantId, 'Manual', false));

  // the stream saw every event of the tenant, in order, once
  const all = await readEvents(store.db, tenant.tenantId, 0, 100_000);
  const s = stream;
  await s.until(() => s.events.length >= all.length, 60_000, `${all.length} events on the stream\n${cli.stderr()}`);
  assert.deepEqual(
    s.events.map((e) => [e.id, e.event]),
    all.map((e) => [e.id, e.type]),
    'every event, in order, once',
  );

  // it went through PgBouncer: its transaction count grew by at least the Mates' calls
  const afterStats = await bouncer.stats();
  assert.ok(
    afterStats.transactions - before.transactions >= TASKS * 3,
    `PgBouncer carried ${afterStats.transactions - before.transactions} transactions`,
  );
  assert.doesNotMatch(cli.stderr(), /prepared statement|unsupported startup parameter|error/i);

  stream.close();
  stream = null;
  cli.child.kill('SIGTERM');
  const { code } = await cli.exited;
  assert.equal(code, 0, cli.stderr());
});

async function count(s: TestStore, tenantId: number, queue: string, error: boolean): Promise<number> {
  const r = await s.db
    .selectFrom('tasks')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('tenant_id', '=', tenantId)
    .where('queue', '=', queue as never)
    .where('error', '=', error)
    .where('deleted_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}
