/**
 * People's large jobs against robots (docs/operations.md, "Large jobs and robots"): one Mate's life
 * cycle (OkToRun, TakeNext, Solved on its own process) measured idle, then while a person imports
 * N tasks (CSV: checked whole in the request, then created by an import job chunk by chunk), moves
 * them in bulk (a job by filter) and exports them (CSV), on the embedded store and, with
 * DATABASE_URL, on PostgreSQL. Also: how long the import's and the bulk move's 202 took (the
 * import's includes uploading, parsing and checking the file and staging its rows), how many
 * distinct progress values each job showed, and each job's duration.
 *
 *   node --import tsx bench/jobs-vs-robots.ts [--tasks 100000] [--idle 200] [--stores lite,pg]
 *
 * The server is a child process (this file with --serve: createApp on the store, no web app);
 * the robot and the person are this process, over HTTP on 127.0.0.1. Prints one JSON line per store.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { startChild } from './child.js';
import { openStore } from '../src/db/store.js';
import { migrate } from '../src/db/migrator.js';
import { createTenant } from '../src/tenants/service.js';
import { createMate, createUser } from '../src/accounts/service.js';
import { createPersonalToken } from '../src/accounts/sessions.js';
import { createProcess } from '../src/processes/service.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
const opt = (name: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
};

// ---------------------------------------------------------------------------------------------
// the server (child)

async function serve(): Promise<void> {
  const { createApp } = await import('../src/app.js');
  const { loadConfig } = await import('../src/config.js');
  const config = loadConfig(process.env, ['--port', '0', '--host', '127.0.0.1', '--log-level', 'warn']);
  const store = await openStore({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    embeddedFsync: config.embeddedFsync === 'on',
    embeddedThread: config.embeddedThread,
  });
  const app = await createApp(config, { store });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address() as { port: number };
  process.stdout.write(`listening on http://127.0.0.1:${address.port}\n`);
  const stop = async () => {
    await app.close();
    await store.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
}

// ---------------------------------------------------------------------------------------------
// the load (parent)

const TASKS = Number(opt('tasks') ?? 100_000);
const IDLE = Number(opt('idle') ?? 200);
const STORES = (opt('stores') ?? 'lite,pg').split(',');
const ROBOT_TASKS = 60_000;
const SECRET = crypto.randomBytes(32).toString('hex');

interface Fixture {
  apiSecret: string;
  personToken: string;
  bulkId: number;
}

async function setUp(options: Parameters<typeof openStore>[0]): Promise<Fixture> {
  const store = await openStore(options);
  try {
    await migrate(store);
    const { tenant, apiSecret } = await createTenant(store.db, { clientId: 'bench' });
    await createMate(store.db, tenant.id, { username: 'robot', password: 'bench-password-1' });
    const user = await createUser(store.db, tenant.id, { username: 'person', role: 'agent', password: 'bench-password-1' });
    const { token } = await createPersonalToken(
      store.db,
      tenant.id,
      user.id,
      { name: 'bench', expiresAt: new Date(Date.now() + 86_400_000) },
      new Date(),
    );
    const robots = await createProcess(store.db, tenant.id, { processKey: 'robots', fields: [{ name: 'n', type: 'integer' }] });
    const bulk = await createProcess(store.db, tenant.id, {
      processKey: 'bulk',
      fields: [
        { name: 'orderNo', type: 'text' },
        { name: 'amount', type: 'number' },
      ],
    });
    await store.pool.query(
      `INSERT INTO tasks (tenant_id, process_id, queue, data, activation_date, queue_position, created_at, created_by_type, updated_at)
      SELECT $1, $2, 'Ready', jsonb_build_object('n', g), now(), clock_timestamp(), now(), 'system', now() FROM generate_series(1, $3) g`,
      [tenant.id, robots.id, ROBOT_TASKS],
    );
    return { apiSecret, personToken: token, bulkId: bulk.id };
  } finally {
    await store.close();
  }
}

const children: ChildProcess[] = [];

function startServer(env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; base: string }> {
  return startChild(
    ['--import', 'tsx', fileURLToPath(import.meta.url), '--serve'],
    { ...env, QUEUEMATE_TOKEN_SECRET: SECRET },
    path.join(HERE, '..'),
    children,
  );
}

async function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await Promise.race([gone, new Promise((r) => setTimeout(r, 30_000))]);
  if (child.exitCode === null) child.kill('SIGKILL');
}

function summary(ms: number[]) {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number) => (s.length ? Math.round(s[Math.min(s.length - 1, Math.floor(q * s.length))] * 10) / 10 : null);
  return { n: s.length, p50: at(0.5), p99: at(0.99), max: s.length ? Math.round(s[s.length - 1]) : null };
}

async function measure(base: string, fx: Fixture, clientId: string) {
  const tokenRes = await fetch(`${base}/connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'password',
      client_id: clientId,
      client_secret: fx.apiSecret,
      username: 'robot',
      password: 'bench-password-1',
    }),
  });
  const mateToken = ((await tokenRes.json()) as { access_token: string }).access_token;
  const mate = (p: string, body?: unknown) =>
    fetch(`${base}/api/${p}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${mateToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then((r) => r.json() as Promise<any>);
  const person = (p: string, init: RequestInit = {}) =>
    fetch(`${base}/v1${p}`, { ...init, headers: { authorization: `Bearer ${fx.personToken}`, ...(init.headers ?? {}) } });

  /** One life cycle: OkToRun, TakeNext, Solved; its duration in ms. */
  const cycle = async () => {
    const t0 = performance.now();
    await mate('OkToRun/robots');
    const task = await mate('TakeNext/robots');
    if (!(task.taskId > 0)) throw new Error(`the robots' queue ran out: ${JSON.stringify(task)}`);
    const solved = await mate('Solved', { taskId: task.taskId });
    if (!solved.succeeded) throw new Error(`Solved: ${JSON.stringify(solved)}`);
    return performance.now() - t0;
  };
  /** Life cycles one after another until `work` settles; the work's result and the cycles. */
  async function during<T>(work: () => Promise<T>) {
    let done = false;
    const started = performance.now();
    const w = work().finally(() => (done = true));
    const lat: number[] = [];
    while (!done) lat.push(await cycle());
    const result = await w;
    return { result, seconds: Math.round((performance.now() - started) / 100) / 10, cycles: summary(lat) };
  }

  const idle: number[] = [];
  for (let i = 0; i < IDLE; i++) idle.push(await cycle());

  const lines = ['orderNo,amount'];
  for (let i = 0; i < TASKS; i++) lines.push(`O-${i},${i % 997}.5`);
  const csv = lines.join('\n');
  /** Follows a job to its end: rows or tasks done, and how many distinct progress values it showed. */
  const follow = async (jobId: string) => {
    const seen = new Set<number>();
    for (;;) {
      const job = (await (await person(`/jobs/${jobId}`)).json()) as { status: string; done: number; failed: number };
      if (job.done > 0 && job.done < TASKS) seen.add(job.done);
      if (job.status !== 'running') {
        if (job.status !== 'done' || job.failed > 0) throw new Error(`job ${jobId}: ${JSON.stringify(job)}`);
        return { done: job.done, progressSteps: seen.size };
      }
      await new Promise((res) => setTimeout(res, 250));
    }
  };

  let importAcceptedMs = 0;
  let importSteps = 0;
  const imported = await during(async () => {
    const t0 = performance.now();
    const r = await person(`/processes/${fx.bulkId}/tasks/import`, { method: 'POST', headers: { 'content-type': 'text/csv' }, body: csv });
    importAcceptedMs = Math.round(performance.now() - t0);
    if (r.status !== 202) throw new Error(`import: ${r.status} ${(await r.text()).slice(0, 300)}`);
    const { jobId } = (await r.json()) as { jobId: string };
    const f = await follow(jobId);
    importSteps = f.progressSteps;
    return f.done;
  });

  let acceptedMs = 0;
  let progressSteps = 0;
  const moved = await during(async () => {
    const t0 = performance.now();
    const r = await person(`/processes/${fx.bulkId}/tasks/bulk`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ action: 'move', queue: 'Manual', filter: { queue: 'Ready' } }),
    });
    acceptedMs = Math.round(performance.now() - t0);
    if (r.status !== 202) throw new Error(`bulk: ${r.status} ${await r.text()}`);
    const { jobId } = (await r.json()) as { jobId: string };
    const f = await follow(jobId);
    progressSteps = f.progressSteps;
    return f.done;
  });

  const exported = await during(async () => {
    const r = await person(`/processes/${fx.bulkId}/tasks/export?queue=Manual`);
    if (r.status !== 200) throw new Error(`export: ${r.status}`);
    let rows = 0;
    const reader = r.body!.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      for (const b of value) if (b === 10) rows++;
    }
    return rows - 1;
  });

  return {
    idle: summary(idle),
    import: {
      created: imported.result,
      acceptedMs: importAcceptedMs,
      progressSteps: importSteps,
      seconds: imported.seconds,
      cycles: imported.cycles,
    },
    move: { moved: moved.result, acceptedMs, progressSteps, seconds: moved.seconds, cycles: moved.cycles },
    export: { rows: exported.result, seconds: exported.seconds, cycles: exported.cycles },
  };
}

async function runStore(kind: 'lite' | 'pg') {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.DATABASE_URL;
  let cleanup = async () => {};
  let fx: Fixture;
  if (kind === 'lite') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qm-jobs-vs-robots-'));
    cleanup = async () => fs.rmSync(dir, { recursive: true, force: true });
    fx = await setUp({ databaseUrl: null, dataDir: dir });
    env.QUEUEMATE_DATA_DIR = dir;
  } else {
    const base = process.env.DATABASE_URL;
    if (!base) return null;
    const name = `qm_bench_${crypto.randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: base });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    const u = new URL(base);
    u.pathname = `/${name}`;
    cleanup = async () => {
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    };
    fx = await setUp({ databaseUrl: u.toString(), dataDir: '' });
    env.DATABASE_URL = u.toString();
  }
  const { child, base } = await startServer(env);
  try {
    return await measure(base, fx, 'bench');
  } finally {
    await stopServer(child);
    await cleanup();
  }
}

async function main() {
  const load = os.loadavg().map((l) => l.toFixed(2));
  console.error(`jobs-vs-robots: ${TASKS} tasks, ${IDLE} idle cycles, load average ${load.join(' ')} on ${os.cpus().length} cores`);
  for (const kind of STORES as ('lite' | 'pg')[]) {
    const started = os.loadavg()[0];
    const r = await runStore(kind);
    if (r === null) {
      console.error(`  ${kind}: skipped (set DATABASE_URL)`);
      continue;
    }
    console.log(JSON.stringify({ store: kind, tasks: TASKS, loadAverageAtStart: started, loadAverageAtEnd: os.loadavg()[0], ...r }));
  }
}

if (argv.includes('--serve')) {
  await serve();
} else {
  process.on('exit', () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  });
  await main();
}
