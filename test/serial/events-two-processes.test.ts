/**
 * Two real server processes (`queuemate start`, each its own OS process) on one PostgreSQL
 * database: a Mate solves a task through process A; an event stream opened on process B sees it
 * (docs/events.md §5: B's readers are woken by LISTEN/NOTIFY from A's watermark; the outbox is the
 * source of truth). PostgreSQL only: the embedded store allows one process.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { DATABASE_URL, testStore, type TestStore } from '../helpers/db.js';
import { seedTenant } from '../helpers/seed.js';
import { personWithToken } from '../helpers/people.js';
import { SseClient } from '../helpers/sse.js';
import { spawnCli, killAll, type CliProcess } from '../foundation-support.js';

let store: TestStore | null = null;
let client: SseClient | null = null;
after(async () => {
  client?.close();
  await killAll();
  await store?.close();
});

async function startServer(url: string): Promise<{ cli: CliProcess; base: string }> {
  const cli = spawnCli(['start', '--port', '0', '--log-level', 'warn'], { env: { DATABASE_URL: url }, timeoutMs: 120_000 });
  // a cold tsx start on a busy 2-core machine takes a while
  const m = await cli.waitFor(/listening on (http:\/\/\S+)/, 90_000);
  return { cli, base: m[1] };
}

async function stop(cli: CliProcess): Promise<void> {
  cli.child.kill('SIGTERM');
  await cli.exited;
}

test(
  'two server processes on one database: a stream on B sees the task a Mate solved through A',
  { skip: DATABASE_URL ? false : 'PostgreSQL only (set DATABASE_URL): the embedded store allows one server process' },
  async () => {
    store = await testStore();
    const tenant = await seedTenant(store, 'two-procs', { processes: [{ processKey: 'Work' }] });
    const viewer = await personWithToken(store, tenant.tenantId, 'viewer', 'watcher');
    const a = await startServer(store.url!);
    const b = await startServer(store.url!);
    assert.notEqual(a.cli.child.pid, b.cli.child.pid);
    assert.notEqual(a.base, b.base);

    client = await SseClient.connect(`${b.base}/v1/events`, { authorization: `Bearer ${viewer.token}` });
    assert.equal(client.status, 200);

    // the Mate works through A only
    const form = new URLSearchParams({
      grant_type: 'password',
      client_id: tenant.clientId,
      client_secret: tenant.apiSecret,
      username: tenant.mateUsername,
      password: tenant.matePassword,
    });
    const token = ((await (await fetch(`${a.base}/connect/token`, { method: 'POST', body: form })).json()) as { access_token: string })
      .access_token;
    const call = async (path: string, body?: unknown) => {
      const res = await fetch(`${a.base}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      assert.equal(res.status, 200, path);
      return (await res.json()) as any;
    };
    const { taskId } = await call('/api/CreateTask/Work', {});
    assert.equal((await call('/api/TakeNext/Work')).taskId, taskId);
    assert.equal((await call('/api/Solved', { taskId })).succeeded, true);

    const c = client;
    await c.until(
      () => c.events.some((e) => e.event === 'task.solved' && e.data.taskId === taskId),
      30_000,
      `task.solved of task ${taskId} on process B\nA stderr: ${a.cli.stderr()}\nB stderr: ${b.cli.stderr()}`,
    );
    const types = c.events.filter((e) => e.data.taskId === taskId).map((e) => e.event);
    assert.deepEqual(types, ['task.created', 'task.taken', 'task.solved'], 'every change, in order, once');
    const ids = c.events.map((e) => e.id!);
    assert.deepEqual(
      ids,
      [...ids].sort((x, y) => x - y),
      'event ids rise',
    );

    client.close();
    client = null;
    await Promise.all([stop(a.cli), stop(b.cli)]);
    assert.equal(a.cli.child.exitCode, 0);
    assert.equal(b.cli.child.exitCode, 0);
  },
);
