/**
 * TakeNext → Solved cycle throughput over HTTP, against a baseline measured in the same run: a
 * raw-SQL loop doing the same database work with one round trip per step (pick and lock, history;
 * then hand back, history, KPI event, run count), each worker on its own connection.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench -- [--tasks 3000] [--workers 16]
 *
 * Prints both rates and their ratio (Queuemate / baseline); machines here are noisy, so only the
 * ratio is compared between runs.
 */
import http from 'node:http';
import crypto from 'node:crypto';
import { spawn } from 'node:child_process';
import pg from 'pg';
import { openStore } from '../src/db/store.js';
import { migrate } from '../src/db/migrator.js';
import { createTenant } from '../src/tenants/service.js';
import { createMate } from '../src/accounts/service.js';
import { createProcess } from '../src/processes/service.js';

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
}
const TASKS = arg('tasks', 3000);
const WORKERS = arg('workers', 16);
const BASE_URL = process.env.DATABASE_URL;
if (!BASE_URL) {
  console.error('bench: set DATABASE_URL to a PostgreSQL database the bench may create databases from');
  process.exit(2);
}

async function freshDatabase(): Promise<string> {
  const name = `qm_bench_${crypto.randomBytes(4).toString('hex')}`;
  const c = new pg.Client({ connectionString: BASE_URL });
  await c.connect();
  await c.query(`CREATE DATABASE ${name}`);
  await c.end();
  const u = new URL(BASE_URL!);
  u.pathname = `/${name}`;
  return u.toString();
}

async function dropDatabase(url: string) {
  const c = new pg.Client({ connectionString: BASE_URL });
  await c.connect();
  await c.query(`DROP DATABASE IF EXISTS ${new URL(url).pathname.slice(1)} WITH (FORCE)`);
  await c.end();
}

async function setUp(url: string) {
  const store = await openStore({ databaseUrl: url, dataDir: '', poolSize: 4 });
  await migrate(store);
  const { tenant, apiSecret } = await createTenant(store.db, { clientId: 'bench' });
  await createMate(store.db, tenant.id, { username: 'bench-mate', password: 'bench-password-1' });
  const proc = await createProcess(store.db, tenant.id, { processKey: 'bench', fields: [{ name: 'n', type: 'integer' }] });
  await store.close();
  return { tenantId: tenant.id, processId: proc.id, apiSecret };
}

async function seed(url: string, tenantId: number, processId: number) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query(
    `INSERT INTO tasks (tenant_id, process_id, queue, data, activation_date, queue_position, created_at, created_by_type, updated_at)
    SELECT $1, $2, 'Ready', jsonb_build_object('n', g), now(), now(), now(), 'system', now() FROM generate_series(1, $3) g`,
    [tenantId, processId, TASKS],
  );
  await c.end();
}

/** The baseline: the same database work, one statement per round trip, no batching. */
async function baseline(url: string, tenantId: number, processId: number): Promise<number> {
  const pool = new pg.Pool({ connectionString: url, max: WORKERS });
  const { rows } = await pool.query(
    `INSERT INTO runs (tenant_id, process_id, started_at, last_activity_at) VALUES ($1, $2, now(), now()) RETURNING id`,
    [tenantId, processId],
  );
  const runId = rows[0].id;
  let done = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: WORKERS }, async () => {
      const c = await pool.connect();
      try {
        for (;;) {
          await c.query('BEGIN');
          const picked = await c.query(
            `SELECT id FROM tasks WHERE tenant_id = $1 AND process_id = $2 AND queue = 'Ready' AND locked_until IS NULL AND deleted_at IS NULL AND activation_date <= now()
          ORDER BY urgent DESC, queue_position, id LIMIT 1 FOR UPDATE SKIP LOCKED`,
            [tenantId, processId],
          );
          if (picked.rowCount === 0) {
            await c.query('COMMIT');
            break;
          }
          const id = picked.rows[0].id;
          await c.query(
            `UPDATE tasks SET locked_by_mate_id = 1, locked_until = now() + interval '1 hour', run_id = $3, updated_at = now() WHERE tenant_id = $1 AND id = $2`,
            [tenantId, id, runId],
          );
          await c.query(
            `INSERT INTO task_history (tenant_id, task_id, process_id, at, actor_type, actor_id, actor_name, action, from_queue, to_queue) VALUES ($1, $2, $3, now(), 'mate', 1, 'm', 'Taken', 'Ready', 'Ready')`,
            [tenantId, id, processId],
          );
          await c.query('COMMIT');
          await c.query('BEGIN');
          await c.query(`SELECT * FROM tasks WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, [tenantId, id]);
          await c.query(
            `UPDATE tasks SET queue = 'Solved', locked_by_mate_id = NULL, locked_until = NULL, run_id = NULL, updated_at = now() WHERE tenant_id = $1 AND id = $2`,
            [tenantId, id],
          );
          await c.query(
            `INSERT INTO task_history (tenant_id, task_id, process_id, at, actor_type, actor_id, actor_name, action, from_queue, to_queue) VALUES ($1, $2, $3, now(), 'mate', 1, 'm', 'Solved', 'Ready', 'Solved')`,
            [tenantId, id, processId],
          );
          await c.query(
            `INSERT INTO kpi_events (tenant_id, process_id, task_id, run_id, mate_id, at, outcome, entries, seconds_saved) VALUES ($1, $2, $3, $4, 1, now(), 'Solved', 1, 0)`,
            [tenantId, processId, id, runId],
          );
          await c.query(`UPDATE runs SET solved_count = solved_count + 1, last_activity_at = now() WHERE tenant_id = $1 AND id = $2`, [
            tenantId,
            runId,
          ]);
          await c.query('COMMIT');
          done++;
        }
      } finally {
        c.release();
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  await pool.end();
  if (done !== TASKS) throw new Error(`baseline solved ${done} of ${TASKS}`);
  return done / seconds;
}

function call(
  agent: http.Agent,
  base: string,
  method: string,
  path: string,
  token: string | null,
  body?: string,
  type = 'application/json',
): Promise<any> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${base}${path}`,
      { method, agent, headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body ? { 'content-type': type } : {}) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d) => chunks.push(d));
        res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString())));
      },
    );
    req.on('error', reject);
    if (body) req.write(body);
    req.end();
  });
}

async function queuemate(url: string, apiSecret: string): Promise<number> {
  const child = spawn(
    process.execPath,
    [
      ...(process.env.QUEUEMATE_BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.QUEUEMATE_BENCH_PROFILE_DIR}`] : []),
      '--import',
      'tsx',
      'src/main.ts',
      'start',
      '--port',
      '0',
      '--log-level',
      'warn',
      '--db-pool-size',
      String(Math.min(WORKERS, 20)),
    ],
    {
      env: { ...process.env, DATABASE_URL: url },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  try {
    const base = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (d) => {
        out += d;
        const m = /listening on (http:\/\/\S+)/.exec(out);
        if (m) resolve(m[1]);
      });
      child.on('exit', (code) => reject(new Error(`server exited ${code}`)));
    });
    const agent = new http.Agent({ keepAlive: true, maxSockets: WORKERS });
    const form = new URLSearchParams({
      grant_type: 'password',
      client_id: 'bench',
      client_secret: apiSecret,
      username: 'bench-mate',
      password: 'bench-password-1',
    }).toString();
    const token = (await call(agent, base, 'POST', '/connect/token', null, form, 'application/x-www-form-urlencoded')).access_token;
    let done = 0;
    const start = process.hrtime.bigint();
    await Promise.all(
      Array.from({ length: WORKERS }, async () => {
        for (;;) {
          const task = await call(agent, base, 'GET', '/api/TakeNext/bench', token);
          if (task.taskId < 0) break;
          const r = await call(agent, base, 'POST', '/api/Solved', token, JSON.stringify({ taskId: task.taskId }));
          if (!r.succeeded) throw new Error(JSON.stringify(r));
          done++;
        }
      }),
    );
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    agent.destroy();
    if (done !== TASKS) throw new Error(`Queuemate solved ${done} of ${TASKS}`);
    return done / seconds;
  } finally {
    child.kill('SIGTERM');
  }
}

const urls: string[] = [];
try {
  const a = await freshDatabase();
  urls.push(a);
  const sa = await setUp(a);
  await seed(a, sa.tenantId, sa.processId);
  const base = await baseline(a, sa.tenantId, sa.processId);

  const b = await freshDatabase();
  urls.push(b);
  const sb = await setUp(b);
  await seed(b, sb.tenantId, sb.processId);
  const qm = await queuemate(b, sb.apiSecret);

  console.log(
    JSON.stringify({
      tasks: TASKS,
      workers: WORKERS,
      baselineCyclesPerSecond: Math.round(base),
      queuemateCyclesPerSecond: Math.round(qm),
      ratio: Number((qm / base).toFixed(2)),
    }),
  );
} finally {
  for (const u of urls) await dropDatabase(u);
}
