/**
 * One winner per take: 100 tasks, 500 concurrent TakeNext calls from separate connections; every
 * task handed out exactly once, the rest get -1. Then the same against two server processes
 * sharing one PostgreSQL database.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { spawn, type ChildProcess } from 'node:child_process';
import { sql } from 'kysely';
import { testApp, type TestApp } from '../helpers/app.js';
import { seedTenant } from '../helpers/seed.js';
import { getToken } from '../helpers/mate.js';
import { DATABASE_URL } from '../helpers/db.js';

const TASKS = 100;
const CALLS = 500;

function request(base: string, method: string, path: string, token: string, body?: unknown): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    // agent: false → a new connection per call
    const req = http.request(
      `${base}${path}`,
      {
        method,
        agent: false,
        headers: {
          authorization: `Bearer ${token}`,
          ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
      },
    );
    req.on('error', reject);
    if (payload) req.write(payload);
    req.end();
  });
}

async function seedTasks(base: string, token: string): Promise<number[]> {
  const r = await request(
    base,
    'POST',
    '/api/CreateTasks/Race',
    token,
    Array.from({ length: TASKS }, (_, i) => ({ n: i })),
  );
  assert.equal(r.body.taskIds.length, TASKS);
  return r.body.taskIds;
}

function checkOneWinnerEach(results: { status: number; body: any }[], ids: number[]) {
  assert.ok(
    results.every((r) => r.status === 200),
    `statuses: ${[...new Set(results.map((r) => r.status))]}`,
  );
  const won = results.filter((r) => r.body.taskId > 0).map((r) => r.body.taskId);
  const empty = results.filter((r) => r.body.taskId === -1);
  assert.equal(won.length, TASKS, 'exactly min(N, K) successes');
  assert.equal(new Set(won).size, TASKS, 'each task handed out once');
  assert.deepEqual(
    [...won].sort((a, b) => a - b),
    [...ids].sort((a, b) => a - b),
  );
  assert.equal(won.length + empty.length, CALLS);
  assert.ok(empty.every((r) => r.body.code === 'queue_empty'));
}

let t: TestApp | null = null;
after(async () => {
  await t?.close();
});

test(`${CALLS} concurrent TakeNext calls on ${TASKS} tasks: each task once`, async () => {
  t = await testApp();
  const tenant = await seedTenant(t.store, 'race', { processes: [{ processKey: 'Race' }] });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(t.app.server.address() as { port: number }).port}`;
  const token = await getToken(t.app, tenant);
  const ids = await seedTasks(base, token);
  const results = await Promise.all(Array.from({ length: CALLS }, () => request(base, 'GET', '/api/TakeNext/Race', token)));
  checkOneWinnerEach(results, ids);
  const { rows } = await sql<{
    n: number;
  }>`SELECT count(*)::int AS n FROM tasks WHERE tenant_id = ${tenant.tenantId} AND locked_by_mate_id IS NOT NULL`.execute(t.store.db);
  assert.equal(rows[0].n, TASKS);

  // every task handed back concurrently, twice each: one Solved wins, the other is refused
  const handBacks = await Promise.all(ids.flatMap((id) => [0, 1].map(() => request(base, 'POST', '/api/Solved', token, { taskId: id }))));
  assert.equal(handBacks.filter((r) => r.body.succeeded === true).length, TASKS);
  assert.ok(handBacks.filter((r) => r.body.succeeded === false).every((r) => r.body.code === 'task_solved'));
  const counts = await sql<{ solved: number; history: number; kpis: number }>`SELECT
      (SELECT count(*)::int FROM tasks WHERE tenant_id = ${tenant.tenantId} AND queue = 'Solved' AND locked_until IS NULL) AS solved,
      (SELECT count(*)::int FROM task_history WHERE tenant_id = ${tenant.tenantId} AND action = 'Solved') AS history,
      (SELECT count(*)::int FROM kpi_events WHERE tenant_id = ${tenant.tenantId}) AS kpis`.execute(t.store.db);
  assert.deepEqual(counts.rows[0], { solved: TASKS, history: TASKS, kpis: TASKS });
});

function startServer(url: string): Promise<{ child: ChildProcess; base: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'start', '--port', '0', '--log-level', 'warn'], {
      env: { ...process.env, DATABASE_URL: url },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const timer = setTimeout(() => reject(new Error(`server did not start: ${out}`)), 30_000);
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, base: m[1] });
      }
    });
    child.stderr!.on('data', (d) => (out += d));
    child.on('exit', (code) => reject(new Error(`server exited ${code}: ${out}`)));
  });
}

test(
  'the same with two server processes on one PostgreSQL database',
  { skip: DATABASE_URL ? false : 'needs DATABASE_URL (PostgreSQL)' },
  async () => {
    const app = t!;
    const tenant = await seedTenant(app.store, 'race2', { processes: [{ processKey: 'Race' }] });
    const servers = await Promise.all([startServer(app.store.url!), startServer(app.store.url!)]);
    try {
      const tokenFrom = async (base: string) => {
        const res = await fetch(`${base}/connect/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({
            grant_type: 'password',
            client_id: tenant.clientId,
            client_secret: tenant.apiSecret,
            username: tenant.mateUsername,
            password: tenant.matePassword,
          }),
        });
        return (await res.json()).access_token as string;
      };
      const tokens = await Promise.all(servers.map((s) => tokenFrom(s.base)));
      const ids = await seedTasks(servers[0].base, tokens[0]);
      const results = await Promise.all(
        Array.from({ length: CALLS }, (_, i) => request(servers[i % 2].base, 'GET', '/api/TakeNext/Race', tokens[i % 2])),
      );
      checkOneWinnerEach(results, ids);
    } finally {
      for (const s of servers) s.child.kill('SIGTERM');
    }
  },
);
