/**
 * What one life cycle (TakeNext then Solved, or the combined call) costs the database, counted
 * rather than timed (bench/README.md, "Counted costs"): statements, transactions and plans per
 * life cycle, WAL records and bytes by kind, heap updates and how many were HOT, B-tree entries
 * written. The figures do not depend on the machine's load, so a change can be compared with a
 * baseline checkout on a busy machine.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:PORT/postgres node --import tsx bench/cycle-cost.ts
 *     [--root DIR]        the server of another checkout (default: this one), run from its sources
 *     [--cycles N]        life cycles measured (default 400), after 40 not measured
 *     [--workers 1,16]    concurrent Mates
 *     [--combined]        Solved with takeNext (one request per task) instead of TakeNext + Solved
 *     [--env K=V,...]     extra environment for the server
 *     [--keep]            keep the measured database (its name goes to stderr), to look into it
 *     [--bulk]            instead of life cycles: CreateTasks calls of 1,000 tasks (--cycles of them,
 *                         default 5); the figures are per call
 *
 * Needs a PostgreSQL cluster of its own: WAL is counted cluster-wide (pg_current_wal_lsn and
 * pg_waldump over that range), with pg_stat_statements loaded (shared_preload_libraries) and
 * autovacuum off. pg_waldump must be able to read the cluster's pg_wal (--wal-dir, default
 * $PGDATA/pg_wal from `SHOW data_directory`).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync, type ChildProcess } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { HttpClient as Client, startChild } from './child.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
const opt = (name: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
};
const ROOT = path.resolve(opt('root') ?? path.join(HERE, '..'));
const CYCLES = Number(opt('cycles') ?? (argv.includes('--bulk') ? 5 : 400));
const WARM = argv.includes('--bulk') ? 1 : 40;
const WORKERS = (opt('workers') ?? '1,16').split(',').map(Number);
const COMBINED = argv.includes('--combined');
const BULK = argv.includes('--bulk');
const KEEP = argv.includes('--keep');
const EXTRA_ENV = Object.fromEntries(
  (opt('env') ?? '')
    .split(',')
    .filter(Boolean)
    .map((kv) => kv.split('=') as [string, string]),
);
const BASE_URL = process.env.DATABASE_URL;
if (!BASE_URL) {
  console.error('cycle-cost: set DATABASE_URL to a PostgreSQL cluster of its own (see the header)');
  process.exit(2);
}
const log = (s: string) => process.stderr.write(s + '\n');

function startServer(url: string): Promise<{ child: ChildProcess; base: string }> {
  return startChild(
    ['--import', 'tsx', 'src/main.ts', 'start', '--port', '0', '--log-level', 'warn'],
    { ...process.env, ...EXTRA_ENV, DATABASE_URL: url },
    ROOT,
  );
}

function cpuSeconds(pid: number): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

/** pg_waldump --stats=record over [from, to): records and bytes per record kind. */
function walStats(walDir: string, from: string, to: string): Map<string, { n: number; bytes: number; fpi: number }> {
  const bin = execFileSync('pg_config', ['--bindir']).toString().trim();
  const out = execFileSync(path.join(bin, 'pg_waldump'), ['-p', walDir, '-s', from, '-e', to, '--stats=record'], {
    maxBuffer: 64 << 20,
  }).toString();
  const kinds = new Map<string, { n: number; bytes: number; fpi: number }>();
  for (const line of out.split('\n')) {
    // e.g. "Heap/HOT_UPDATE        1234 ( 12.34)   56789 ( 1.23)   0 ( 0.00)   56789 ( 1.23)"
    const m = /^(\S+\/\S+)\s+(\d+)\s+\(\s*[\d.]+\)\s+(\d+)\s+\(\s*[\d.]+\)\s+(\d+)/.exec(line.trim());
    if (m) kinds.set(m[1], { n: Number(m[2]), bytes: Number(m[3]), fpi: Number(m[4]) });
  }
  return kinds;
}

async function setUp(url: string) {
  const from = (rel: string) => import(pathToFileURL(path.join(ROOT, rel)).href);
  const { openStore } = await from('src/db/store.ts');
  const { migrate } = await from('src/db/migrator.ts');
  const { createTenant } = await from('src/tenants/service.ts');
  const { createMate } = await from('src/accounts/service.ts');
  const { createProcess } = await from('src/processes/service.ts');
  const store = await openStore({ databaseUrl: url, dataDir: '', poolSize: 2 });
  try {
    await migrate(store);
    const { tenant, apiSecret } = await createTenant(store.db, { clientId: 'bench' });
    await createMate(store.db, tenant.id, { username: 'bench-mate', password: 'bench-password-1' });
    const proc = await createProcess(store.db, tenant.id, { processKey: 'bench', fields: [{ name: 'n', type: 'integer' }] });
    return { tenantId: tenant.id as number, processId: proc.id as number, apiSecret: apiSecret as string };
  } finally {
    await store.close();
  }
}

async function bulkCreates(c: Client, n: number) {
  for (let i = 0; i < n; i++) {
    const r = await c.call(
      'POST',
      '/api/CreateTasks/bench',
      Array.from({ length: 1000 }, (_, j) => ({ n: j })),
    );
    if (!r.succeeded) throw new Error(`CreateTasks: ${JSON.stringify(r).slice(0, 500)}`);
  }
  return n;
}

async function lifeCycles(c: Client, M: number, n: number) {
  if (BULK) return bulkCreates(c, n);
  let started = 0;
  let done = 0;
  const more = () => started++ < n;
  await Promise.all(
    Array.from({ length: M }, async () => {
      if (COMBINED) {
        if (!more()) return;
        let task = await c.call('GET', '/api/TakeNext/bench');
        while (task.taskId > 0) {
          const r = await c.call('POST', '/api/Solved', more() ? { taskId: task.taskId, takeNext: 'bench' } : { taskId: task.taskId });
          if (!r.succeeded) throw new Error(`Solved: ${JSON.stringify(r)}`);
          done++;
          if (!r.next) return;
          task = r.next;
        }
        return;
      }
      while (more()) {
        const task = await c.call('GET', '/api/TakeNext/bench');
        if (!(task.taskId > 0)) throw new Error(`TakeNext: ${JSON.stringify(task)}`);
        const r = await c.call('POST', '/api/Solved', { taskId: task.taskId });
        if (!r.succeeded) throw new Error(`Solved: ${JSON.stringify(r)}`);
        done++;
      }
    }),
  );
  return done;
}

async function measure(M: number) {
  const name = `qm_cost_${crypto.randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: BASE_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const u = new URL(BASE_URL!);
  u.pathname = `/${name}`;
  const url = u.toString();
  let child: ChildProcess | undefined;
  const db = new pg.Client({ connectionString: url });
  try {
    const f = await setUp(url);
    await db.connect();
    // a queue much deeper than what is taken (the take's index scans stay short either way)
    const total = BULK ? 100 : WARM + CYCLES + M + 2000;
    await db.query(
      `INSERT INTO tasks (tenant_id, process_id, queue, data, activation_date, queue_position, created_at, created_by_type, updated_at)
       SELECT $1, $2, 'Ready', jsonb_build_object('n', g), now() - interval '1 minute', clock_timestamp(), now(), 'system', now() - interval '1 minute'
       FROM generate_series(1, $3) g`,
      [f.tenantId, f.processId, total],
    );
    await db.query('VACUUM (ANALYZE)');
    const s = await startServer(url);
    child = s.child;
    const c = new Client(s.base);
    const form = new URLSearchParams({
      grant_type: 'password',
      client_id: 'bench',
      client_secret: f.apiSecret,
      username: 'bench-mate',
      password: 'bench-password-1',
    }).toString();
    c.token = (await c.call('POST', '/connect/token', form, 'application/x-www-form-urlencoded')).access_token;
    await lifeCycles(c, M, WARM);
    await db.query('CHECKPOINT');
    await db.query('SELECT pg_stat_statements_reset()');
    const before = await snapshot(db);
    const cpu0 = cpuSeconds(child.pid!);
    const t0 = performance.now();
    const done = await lifeCycles(c, M, CYCLES);
    const seconds = (performance.now() - t0) / 1000;
    const cpu1 = cpuSeconds(child.pid!);
    const lsn1 = (await db.query('SELECT pg_current_wal_lsn()::text AS l')).rows[0].l as string;
    c.close();
    // the server's connections report their table statistics as they close
    const gone = new Promise((r) => child!.once('exit', r));
    child.kill('SIGTERM');
    await gone;
    child = undefined;
    await new Promise((r) => setTimeout(r, 300));
    const after = await snapshot(db);
    const stmts = (
      await db.query(
        `SELECT calls::int, plans::int, wal_bytes::bigint::float8 AS wal_bytes, rows::int, total_plan_time AS plan_ms, total_exec_time AS exec_ms, left(regexp_replace(query, '\\s+', ' ', 'g'), 90) AS q
         FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT LIKE '%pg_stat%'
           AND query NOT LIKE '%pg_current_wal_lsn%'
         ORDER BY calls DESC`,
      )
    ).rows;
    const walDir = opt('wal-dir') ?? path.join((await db.query('SHOW data_directory')).rows[0].data_directory, 'pg_wal');
    const wal = walStats(walDir, before.lsn, lsn1);
    const per = (x: number) => Number((x / done).toFixed(2));
    const sum = (k: string) => stmts.reduce((a, r) => a + Number(r[k]), 0);
    const kinds = [...wal.entries()].sort((a, b) => b[1].bytes - a[1].bytes);
    const result = {
      root: ROOT,
      M,
      combined: COMBINED,
      cycles: done,
      seconds: Number(seconds.toFixed(2)),
      serverCpuMsPerCycle: per((cpu1 - cpu0) * 1000),
      statementsPerCycle: per(sum('calls')),
      plansPerCycle: per(sum('plans')),
      // time inside PostgreSQL (pg_stat_statements; wall time, so it grows with the machine's load)
      planMsPerCycle: Number((sum('plan_ms') / done).toFixed(3)),
      execMsPerCycle: Number((sum('exec_ms') / done).toFixed(3)),
      transactionsPerCycle: per(after.xacts - before.xacts),
      walBytesPerCycle: per(Number(after.walBytes - before.walBytes)),
      walRecordsPerCycle: per([...wal.values()].reduce((a, k) => a + k.n, 0)),
      walFpiBytesPerCycle: per([...wal.values()].reduce((a, k) => a + k.fpi, 0)),
      btreeInsertsPerCycle: per(kinds.filter(([k]) => /^Btree\/INSERT/.test(k)).reduce((a, [, v]) => a + v.n, 0)),
      tasks: {
        updatesPerCycle: per(after.upd - before.upd),
        hotUpdatesPerCycle: per(after.hot - before.hot),
      },
      walKinds: Object.fromEntries(kinds.slice(0, 14).map(([k, v]) => [k, { perCycle: per(v.n), bytesPerCycle: per(v.bytes + v.fpi) }])),
      statements: stmts.slice(0, 14).map((r) => ({
        callsPerCycle: per(r.calls),
        plans: r.plans,
        planMsPerCall: Number((r.plan_ms / Math.max(1, r.plans)).toFixed(3)),
        execMsPerCall: Number((r.exec_ms / Math.max(1, r.calls)).toFixed(3)),
        walBytesPerCall: Math.round(r.wal_bytes / Math.max(1, r.calls)),
        q: r.q,
      })),
    };
    return result;
  } finally {
    if (child) child.kill('SIGKILL');
    await db.end().catch(() => {});
    if (KEEP) log(`cycle-cost: kept database ${name}`);
    else await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
    await admin.end();
  }
}

async function snapshot(db: pg.Client) {
  const r = (
    await db.query(`SELECT pg_current_wal_lsn()::text AS lsn, pg_current_wal_lsn() - '0/0'::pg_lsn AS wal,
      (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()) AS xacts,
      (SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = 'tasks') AS upd,
      (SELECT n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'tasks') AS hot`)
  ).rows[0];
  return { lsn: r.lsn as string, walBytes: BigInt(r.wal), xacts: Number(r.xacts), upd: Number(r.upd), hot: Number(r.hot) };
}

const results = [];
for (const M of WORKERS) {
  log(`cycle-cost: ${ROOT}, M = ${M}${COMBINED ? ', combined' : ''}${BULK ? ', bulk creates' : ''}`);
  results.push(await measure(M));
}
console.log(JSON.stringify(results, null, 2));
