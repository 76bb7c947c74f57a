/**
 * The side-by-side bench (bench/README.md): task life cycles per second ("take one, complete it")
 * at M = 1, 16 and 64 concurrent workers, for Queuemate over HTTP on PostgreSQL and on the embedded
 * store (separate calls, the combined call, and the client package's runWorker), the raw-SQL floors, a minimal HTTP floor,
 * graphile-worker and pg-boss; all in one run, systems interleaved within each round, ratios taken
 * within a round. Then bulk creates, a deep queue, an ageing run on the embedded store and peak RSS.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench [-- --quick] [--rounds N]
 *     [--server-root DIR]   run the Queuemate server from another checkout
 *     [--base-root DIR]     also run the Queuemate server of another checkout (e.g. the commit before a
 *                           change: git archive <commit> | tar -x -C DIR; ln -s $PWD/node_modules DIR/,
 *                           or a worktree with its own npm ci: git worktree add --detach DIR <commit>)
 *                           as queuemate-pg-base and queuemate-lite-base, in the same rounds; it is
 *                           compiled there (npm run build) and set up by its own code
 *     [--help]              this text
 *     [--only a,b]          only these systems (names as printed)
 *     [--no-wire]           skip the wire accounting (round trips and transactions per life cycle)
 *     [--no-overview]       skip the people's overview at 1M tasks (full runs only; bench/overview.ts)
 *     [--processes N]       also Queuemate on PostgreSQL as N server processes (`start --processes N`):
 *                           queuemate-pg-pN, in the same rounds, against queuemate-pg (one process)
 *     [--pgbouncer]         also Queuemate on PostgreSQL behind a PgBouncer of its own in transaction
 *                           mode (prepared statements off; docs/deployment.md, "PgBouncer"):
 *                           queuemate-pg-pgbouncer, in the same rounds, against queuemate-pg
 *     [--events-cost]       the cost of writing events: this checkout's server against a copy of it whose
 *                           funnel writes no task events (queuemate-pg-noevents, queuemate-lite-noevents),
 *                           in the same rounds; life cycles only
 *
 * Prints tables, then the ratios; writes bench/results/latest.json (and a time-stamped copy).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { openStore, type Store } from '../src/db/store.js';
import { CountingProxy } from './pg-proxy.js';
import { migrate } from '../src/db/migrator.js';
import { createTenant } from '../src/tenants/service.js';
import { createMate } from '../src/accounts/service.js';
import { createProcess } from '../src/processes/service.js';
import { MateClient, runWorker } from '../client/src/index.js';
import { pgbouncerBinary, startPgBouncer, type PgBouncer } from '../test/helpers/pgbouncer.js';
import { HttpClient, startChild } from './child.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
const flag = (name: string) => argv.includes(`--${name}`);
const opt = (name: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
};
if (flag('help') || argv.includes('-h')) {
  // the usage is this file's header comment
  const header = fs.readFileSync(fileURLToPath(import.meta.url), 'utf8').split('*/')[0];
  console.log(
    header
      .replace(/^\/\*\*\n/, '')
      .split('\n')
      .map((l) => l.replace(/^ \*( |$)/, ''))
      .join('\n')
      .trim(),
  );
  process.exit(0);
}
const QUICK = flag('quick');
const ROUNDS = Number(opt('rounds') ?? (QUICK ? 1 : 3));
const SERVER_ROOT = path.resolve(opt('server-root') ?? path.join(HERE, '..'));
const ONLY = opt('only')?.split(',');
const BASE_ROOT = opt('base-root') ? path.resolve(opt('base-root')!) : null;
const PROCESSES = Number(opt('processes') ?? 1);
if (!Number.isInteger(PROCESSES) || PROCESSES < 1) {
  console.error('bench: --processes needs a whole number of at least 1');
  process.exit(2);
}
const PGBOUNCER = flag('pgbouncer');
if (PGBOUNCER && !pgbouncerBinary()) {
  console.error('bench: --pgbouncer needs PgBouncer installed (apt-get install pgbouncer)');
  process.exit(2);
}
const EVENTS_COST = flag('events-cost');
const MS = (opt('workers') ?? '1,16,64').split(',').map(Number);
// tasks per measurement, by M: PostgreSQL systems, and the embedded store
const TASKS_PG: Record<number, number> = QUICK ? { 1: 300, 16: 800, 64: 800 } : { 1: 1500, 16: 4000, 64: 4000 };
const TASKS_LITE: Record<number, number> = QUICK ? { 1: 100, 16: 200, 64: 200 } : { 1: 500, 16: 1000, 64: 1000 };
const DEEP = QUICK ? 200_000 : 1_000_000;
const SHALLOW = 10_000;
const DEEP_CYCLES = QUICK ? 600 : 2000;
const AGEING_BATCHES = 4;
const AGEING_BATCH = QUICK ? 300 : 2000;
const BULK = 1000;
const BULK_REPS = QUICK ? 3 : 5;
// PostgreSQL here allows 100 connections shared with other users; the floors' own pools stop at this
const MAX_FLOOR_CONNECTIONS = 32;

const BASE_URL = process.env.DATABASE_URL;
if (!BASE_URL) {
  console.error('bench: set DATABASE_URL to a PostgreSQL database the bench may create databases from');
  process.exit(2);
}

// ---------------------------------------------------------------------------------------------
// databases, servers, HTTP

const databases: string[] = [];
const children: ChildProcess[] = [];
const tmpDirs: string[] = [];

async function freshDatabase(): Promise<string> {
  const name = `qm_bench_${crypto.randomBytes(4).toString('hex')}`;
  const c = new pg.Client({ connectionString: BASE_URL });
  await c.connect();
  await c.query(`CREATE DATABASE ${name}`);
  await c.end();
  const u = new URL(BASE_URL!);
  u.pathname = `/${name}`;
  databases.push(u.toString());
  if (wireProxy) {
    // the wire accounting: the system reaches its database through the counting proxy
    u.hostname = '127.0.0.1';
    u.port = String(wireProxy.port);
  }
  return u.toString();
}

/** The counting proxy the wire accounting puts between the systems and PostgreSQL (null: direct). */
let wireProxy: { proxy: CountingProxy; port: number } | null = null;

async function dropDatabases() {
  const c = new pg.Client({ connectionString: BASE_URL });
  await c.connect();
  for (const url of databases.splice(0))
    await c.query(`DROP DATABASE IF EXISTS ${new URL(url).pathname.slice(1)} WITH (FORCE)`).catch(() => {});
  await c.end();
}

interface Fixture {
  tenantId: number;
  processIds: Record<string, number>;
  apiSecret: string;
}

/** The set-up functions of the checkout at `root`: another checkout's schema is set up by its own code. */
async function setUpModules(root: string) {
  if (root === path.resolve(HERE, '..')) return { openStore, migrate, createTenant, createMate, createProcess };
  const from = (rel: string) => import(pathToFileURL(path.join(root, rel)).href);
  return {
    openStore: (await from('src/db/store.ts')).openStore as typeof openStore,
    migrate: (await from('src/db/migrator.ts')).migrate as typeof migrate,
    createTenant: (await from('src/tenants/service.ts')).createTenant as typeof createTenant,
    createMate: (await from('src/accounts/service.ts')).createMate as typeof createMate,
    createProcess: (await from('src/processes/service.ts')).createProcess as typeof createProcess,
  };
}

/** A tenant, a Mate and the processes `bench`, `bulk`, `deep` in a migrated store. */
async function setUpQueuemate(store: Store, m: Awaited<ReturnType<typeof setUpModules>> | null = null): Promise<Fixture> {
  m ??= { openStore, migrate, createTenant, createMate, createProcess };
  await m.migrate(store);
  const { tenant, apiSecret } = await m.createTenant(store.db, { clientId: 'bench' });
  await m.createMate(store.db, tenant.id, { username: 'bench-mate', password: 'bench-password-1' });
  const processIds: Record<string, number> = {};
  for (const key of ['bench', 'bulk', 'deep']) {
    processIds[key] = (await m.createProcess(store.db, tenant.id, { processKey: key, fields: [{ name: 'n', type: 'integer' }] })).id;
  }
  return { tenantId: tenant.id, processIds, apiSecret };
}

/** The same in a store opened and migrated by the checkout at `root` (a before/after run). */
async function setUpQueuemateAt(options: Parameters<typeof openStore>[0], root: string): Promise<Fixture> {
  const m = await setUpModules(root);
  const store = await m.openStore(options);
  try {
    return await setUpQueuemate(store, m);
  } finally {
    await store.close();
  }
}

async function seedSql(pool: pg.Pool | pg.Client, f: Fixture, processKey: string, n: number) {
  await pool.query(
    `INSERT INTO tasks (tenant_id, process_id, queue, data, activation_date, queue_position, created_at, created_by_type, updated_at)
    SELECT $1, $2, 'Ready', jsonb_build_object('n', g), now(), clock_timestamp(), now(), 'system', now() FROM generate_series(1, $3) g`,
    [f.tenantId, f.processIds[processKey], n],
  );
}

async function stopChild(child: ChildProcess) {
  if (child.exitCode !== null) return;
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await Promise.race([gone, new Promise((r) => setTimeout(r, 10_000))]);
  if (child.exitCode === null) child.kill('SIGKILL');
}

const built = new Set<string>();
/**
 * The checkout at `root` compiled as production runs it (docs/deployment.md: `npm run build`, then
 * `node dist/src/main.js`): no TypeScript loader in the server process, whose own thread and
 * per-module overhead would add about 50 MB to the RSS measured. Once per checkout and run.
 */
function compile(root: string): void {
  if (built.has(root)) return;
  console.error(`  compiling ${root} (npm run build)`);
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  built.add(root);
}

function startQueuemate(store: { databaseUrl?: string; dataDir?: string }, root = SERVER_ROOT, extraEnv: NodeJS.ProcessEnv = {}) {
  const env = { ...process.env, ...extraEnv };
  delete env.DATABASE_URL;
  if (store.databaseUrl) env.DATABASE_URL = store.databaseUrl;
  else env.QUEUEMATE_DATA_DIR = store.dataDir;
  compile(root);
  return startChild(
    ['dist/src/main.js', 'start', '--port', '0', '--log-level', 'warn', ...(store.dataDir ? ['--data-dir', store.dataDir] : [])],
    env,
    root,
    children,
  );
}

/** CPU seconds (user + system) a process has used so far. */
function cpuSeconds(pid: number): number {
  try {
    const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return NaN;
  }
}

/** The PostgreSQL cluster's postmaster (the parent of any backend), found once; null when unreadable. */
let postmaster: number | null | undefined;
async function findPostmaster(): Promise<void> {
  if (postmaster !== undefined) return;
  const c = new pg.Client({ connectionString: BASE_URL });
  await c.connect();
  try {
    const { rows } = await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const f = fs.readFileSync(`/proc/${rows[0].pid}/stat`, 'utf8').split(') ')[1].split(' ');
    postmaster = Number(f[1]);
  } catch {
    postmaster = null;
  } finally {
    await c.end();
  }
}

/**
 * CPU seconds the whole PostgreSQL cluster has used so far: the postmaster's children alive now
 * (backends, background workers), plus those that ended (the postmaster's cutime and cstime).
 * Every database of the cluster counts, so other work on it shows up here too.
 */
function pgCpuSeconds(): number {
  if (!postmaster) return NaN;
  let ticks = 0;
  try {
    const f = fs.readFileSync(`/proc/${postmaster}/stat`, 'utf8').split(') ')[1].split(' ');
    ticks += Number(f[13]) + Number(f[14]);
  } catch {
    return NaN;
  }
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const f = fs.readFileSync(`/proc/${name}/stat`, 'utf8').split(') ')[1].split(' ');
      if (Number(f[1]) === postmaster) ticks += Number(f[11]) + Number(f[12]);
    } catch {
      // gone meanwhile: its time is in the postmaster's cutime once reaped
    }
  }
  return ticks / 100;
}

function peakRssMb(pid: number): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : NaN;
  } catch {
    return NaN;
  }
}

class Client extends HttpClient {
  async signIn(apiSecret: string) {
    const form = new URLSearchParams({
      grant_type: 'password',
      client_id: 'bench',
      client_secret: apiSecret,
      username: 'bench-mate',
      password: 'bench-password-1',
    }).toString();
    this.token = (await this.call('POST', '/connect/token', form, 'application/x-www-form-urlencoded')).access_token;
    if (!this.token) throw new Error('bench: sign-in failed');
  }
}

// ---------------------------------------------------------------------------------------------
// the load: M workers, "take one, complete it", until nothing is left (or `limit` life cycles)

interface Latencies {
  [call: string]: number[];
}
interface Measured {
  rate: number;
  done: number;
  seconds: number;
  latency: Record<string, { p50: number; p99: number }>;
  cpuMsPerCycle?: number;
  /** the PostgreSQL cluster's CPU per life cycle (PostgreSQL systems) */
  pgCpuMsPerCycle?: number;
}

function pct(xs: number[], p: number): number {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

const timed = async <T>(lat: number[], f: () => Promise<T>): Promise<T> => {
  const t = performance.now();
  const r = await f();
  lat.push(performance.now() - t);
  return r;
};

/**
 * Runs `worker` M times concurrently; each returns when its source is empty. The worker calls
 * `more()` before taking; false once `limit` cycles were started.
 */
async function load(
  M: number,
  expected: number | null,
  worker: (lat: Latencies, more: () => boolean, count: () => void) => Promise<void>,
  pid?: number,
  limit = Infinity,
): Promise<Measured> {
  const lat: Latencies = {};
  let done = 0;
  let started = 0;
  const more = () => started++ < limit;
  const cpu0 = pid ? cpuSeconds(pid) : NaN;
  const pg0 = pgCpuSeconds();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: M }, () => worker(lat, more, () => done++)));
  const seconds = (performance.now() - t0) / 1000;
  const cpu1 = pid ? cpuSeconds(pid) : NaN;
  const pg1 = pgCpuSeconds();
  if (expected !== null && done !== expected) throw new Error(`completed ${done} of ${expected}`);
  const latency: Measured['latency'] = {};
  for (const [k, xs] of Object.entries(lat)) latency[k] = { p50: round(pct(xs, 50), 2), p99: round(pct(xs, 99), 2) };
  return {
    rate: done / seconds,
    done,
    seconds,
    latency,
    ...(pid ? { cpuMsPerCycle: round(((cpu1 - cpu0) * 1000) / done, 2) } : {}),
    ...(Number.isFinite(pg1 - pg0) ? { pgCpuMsPerCycle: round(((pg1 - pg0) * 1000) / done, 2) } : {}),
  };
}

const L = (lat: Latencies, k: string) => (lat[k] ??= []);
const round = (x: number, d = 0) => Number(x.toFixed(d));

/** TakeNext then Solved, one request each (what the official clients do). */
function separateWorker(c: Client, processKey: string) {
  return async (lat: Latencies, more: () => boolean, count: () => void) => {
    while (more()) {
      const task = await timed(L(lat, 'TakeNext'), () => c.call('GET', `/api/TakeNext/${processKey}`));
      if (!(task.taskId > 0)) {
        if (task.code !== 'queue_empty') throw new Error(`TakeNext: ${JSON.stringify(task)}`);
        return;
      }
      const r = await timed(L(lat, 'Solved'), () => c.call('POST', '/api/Solved', { taskId: task.taskId }));
      if (!r.succeeded) throw new Error(`Solved: ${JSON.stringify(r)}`);
      count();
    }
  };
}

/** One TakeNext, then Solved with `takeNext` (the combined call) until the queue is empty. */
function combinedWorker(c: Client, processKey: string) {
  return async (lat: Latencies, more: () => boolean, count: () => void) => {
    if (!more()) return;
    let task = await timed(L(lat, 'TakeNext'), () => c.call('GET', `/api/TakeNext/${processKey}`));
    while (task.taskId > 0) {
      const r = await timed(L(lat, 'Solved+next'), () =>
        c.call('POST', '/api/Solved', more() ? { taskId: task.taskId, takeNext: processKey } : { taskId: task.taskId }),
      );
      if (!r.succeeded) throw new Error(`Solved+next: ${JSON.stringify(r)}`);
      count();
      if (!r.next) return;
      task = r.next;
    }
  };
}

// ---------------------------------------------------------------------------------------------
// systems

interface System {
  name: string;
  /** what it is compared to in the ratios */
  store: 'pg' | 'lite';
  setUp(): Promise<void>;
  seed(n: number): Promise<void>;
  run(M: number, n: number): Promise<Measured>;
  pid?(): number | undefined;
  tearDown(): Promise<void>;
}

const FLOOR_TAKE = `UPDATE tasks SET locked_by_mate_id = 1, locked_until = now() + interval '1 hour', updated_at = now()
  WHERE tenant_id = $1 AND id = (SELECT id FROM tasks WHERE tenant_id = $1 AND process_id = $2 AND queue = 'Ready' AND locked_until IS NULL
    AND deleted_at IS NULL AND activation_date <= now() ORDER BY urgent DESC, queue_position, id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id`;
const FLOOR_DONE = `UPDATE tasks SET queue = 'Solved', locked_by_mate_id = NULL, locked_until = NULL, updated_at = now() WHERE tenant_id = $1 AND id = $2`;
const HISTORY = (action: string, from: string, to: string) =>
  `h AS (INSERT INTO task_history (tenant_id, task_id, process_id, at, actor_type, actor_id, actor_name, action, from_queue, to_queue)
    SELECT $1, id, $2, now(), 'mate', 1, 'm', '${action}', '${from}', '${to}' FROM t)`;
const FLOOR_TAKE_H = `WITH t AS (${FLOOR_TAKE}), ${HISTORY('Taken', 'Ready', 'Ready')} SELECT id FROM t`;
const FLOOR_DONE_H = `WITH t AS (${FLOOR_DONE.replace('$2', '$3')} RETURNING id), ${HISTORY('Solved', 'Ready', 'Solved')} SELECT id FROM t`;

/** The raw floor: each worker on its own connection, two autocommitted prepared statements per task. */
async function floorRun(pool: pg.Pool, f: Fixture, M: number, history: boolean): Promise<Measured> {
  // one connection per worker when the pool has enough; else the workers share the pool, which
  // queues their statements (the embedded store has one connection; PostgreSQL here at most 32)
  const max = (pool as unknown as { options: { max: number } }).options.max;
  const dedicated = M <= Math.min(MAX_FLOOR_CONNECTIONS, max);
  const clients = dedicated ? await Promise.all(Array.from({ length: M }, () => pool.connect())) : [];
  let next = 0;
  try {
    return await load(M, null, async (lat, more, count) => {
      const c: pg.Pool | pg.PoolClient = dedicated ? clients[next++] : pool;
      const P = f.processIds.bench;
      while (more()) {
        const r = await timed(L(lat, 'take'), () =>
          c.query({ name: history ? 'fth' : 'ft', text: history ? FLOOR_TAKE_H : FLOOR_TAKE, values: [f.tenantId, P] }),
        );
        if (!r.rows.length) return;
        const id = r.rows[0].id;
        await timed(L(lat, 'complete'), () =>
          c.query(
            history
              ? { name: 'fdh', text: FLOOR_DONE_H, values: [f.tenantId, P, id] }
              : { name: 'fd', text: FLOOR_DONE, values: [f.tenantId, id] },
          ),
        );
        count();
      }
    });
  } finally {
    clients.forEach((c) => c.release());
  }
}

function queuemateSystems(
  storeKind: 'pg' | 'lite',
  root = SERVER_ROOT,
  suffix = '',
  extraEnv: NodeJS.ProcessEnv = {},
  opts: { pgbouncer?: boolean } = {},
): System[] {
  let child: ChildProcess | undefined;
  let bouncer: PgBouncer | undefined;
  let client: Client;
  let fixture: Fixture;
  let seedPool: pg.Pool | undefined;
  let url = '';
  let combinedSupported = true;
  const label = (storeKind === 'pg' ? 'queuemate-pg' : 'queuemate-lite') + suffix;
  const seed = async (n: number, processKey = 'bench') => {
    if (seedPool) return seedSql(seedPool, fixture, processKey, n);
    for (let i = 0; i < n; i += 1000) {
      const r = await client.call(
        'POST',
        `/api/CreateTasks/${processKey}`,
        Array.from({ length: Math.min(1000, n - i) }, (_, j) => ({ n: i + j })),
      );
      if (!r.succeeded) throw new Error(`CreateTasks: ${JSON.stringify(r)}`);
    }
  };
  let setUpDone: Promise<void> | null = null;
  const setUp = () =>
    (setUpDone ??= (async () => {
      let dataDir: string | undefined;
      if (storeKind === 'pg') {
        url = await freshDatabase();
        fixture = await setUpQueuemateAt({ databaseUrl: url, dataDir: '', poolSize: 2 }, root);
      } else {
        dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'qm-bench-lite-'));
        tmpDirs.push(dataDir);
        fixture = await setUpQueuemateAt({ databaseUrl: null, dataDir }, root);
      }
      let serverUrl = url;
      let env = extraEnv;
      if (opts.pgbouncer) {
        // transaction mode in front of the database; the session connection (LISTEN, migrations) goes direct
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qm-bench-pgbouncer-'));
        tmpDirs.push(dir);
        bouncer = await startPgBouncer(pgbouncerBinary()!, url, dir, { poolSize: 10 });
        serverUrl = bouncer.url;
        env = {
          ...extraEnv,
          QUEUEMATE_DB_SESSION_URL: url,
          QUEUEMATE_DB_PREPARED_STATEMENTS: 'off',
          QUEUEMATE_DB_LOCK_TIMEOUT: '0',
          QUEUEMATE_DB_STATEMENT_TIMEOUT: '0',
        };
      }
      const s = await startQueuemate(storeKind === 'pg' ? { databaseUrl: serverUrl } : { dataDir }, root, env);
      child = s.child;
      client = new Client(s.base);
      await client.signIn(fixture.apiSecret);
      if (storeKind === 'pg') {
        seedPool = new pg.Pool({ connectionString: url, max: 2 });
        // an idle connection ended from outside (the database dropped after a failure) is not a crash
        seedPool.on('error', (err) => log(`  ${label}: seed pool: ${err.message}`));
      }
      // does this server know the combined call? (a before/after run may start an older one)
      await seed(1);
      const t = await client.call('GET', '/api/TakeNext/bench');
      const r = await client.call('POST', '/api/Solved', { taskId: t.taskId, takeNext: 'bench' });
      combinedSupported = r.succeeded === true && 'next' in r;
      if (!combinedSupported && t.taskId > 0) await client.call('POST', '/api/Solved', { taskId: t.taskId });
    })());
  let tornDown = false;
  const tearDown = async () => {
    if (tornDown) return;
    tornDown = true;
    client?.close();
    await seedPool?.end();
    if (child) await stopChild(child);
    await bouncer?.stop();
  };
  const tasks = storeKind === 'pg' ? TASKS_PG : TASKS_LITE;
  // the client's worker (client/src/worker.ts): runWorker with M slots until the queue is empty
  let mate: MateClient | undefined;
  const clientSystem: System = {
    name: `${label}-client`,
    store: storeKind,
    async setUp() {
      await setUp();
      mate = new MateClient({
        baseUrl: client.base,
        clientId: 'bench',
        clientSecret: fixture.apiSecret,
        username: 'bench-mate',
        password: 'bench-password-1',
      });
    },
    seed: (n) => seed(n),
    run: (M, n) =>
      load(
        1,
        n,
        async (_lat, _more, count) => {
          const stats = await runWorker(mate!, 'bench', () => void count(), {
            concurrency: M,
            untilEmpty: true,
            onError: (err) => log(`  ${label}-client: ${err instanceof Error ? err.message : String(err)}`),
          });
          if (stats.handBackFailures) throw new Error(`${label}-client: ${stats.handBackFailures} hand-backs failed`);
        },
        child!.pid,
      ),
    pid: () => child?.pid,
    tearDown,
  };
  const mk = (name: string, combined: boolean): System => ({
    name,
    store: storeKind,
    setUp,
    seed: (n) => (combined && !combinedSupported ? Promise.resolve() : seed(n)),
    async run(M, n) {
      if (combined && !combinedSupported) throw new Unsupported();
      return load(M, n, combined ? combinedWorker(client, 'bench') : separateWorker(client, 'bench'), child!.pid);
    },
    pid: () => child?.pid,
    tearDown,
  });
  const systems = [mk(label, false), mk(`${label}-combined`, true), ...(suffix === '' ? [clientSystem] : [])];
  Object.assign(systems[0], {
    extras: {
      fixture: () => fixture,
      client: () => client,
      seed,
      url: () => url,
      pool: () => seedPool,
      tasks,
    },
  });
  return systems;
}

class Unsupported extends Error {}

function floorSystems(): System[] {
  let pool: pg.Pool;
  let fixture: Fixture;
  let setUpDone: Promise<void> | null = null;
  const setUp = () =>
    (setUpDone ??= (async () => {
      const url = await freshDatabase();
      const store = await openStore({ databaseUrl: url, dataDir: '', poolSize: 2 });
      fixture = await setUpQueuemate(store);
      await store.close();
      pool = new pg.Pool({ connectionString: url, max: MAX_FLOOR_CONNECTIONS });
    })());
  let ended = false;
  const tearDown = async () => {
    if (!ended) await pool?.end();
    ended = true;
  };
  return [false, true].map((history) => ({
    name: history ? 'floor-sql-history' : 'floor-sql',
    store: 'pg' as const,
    setUp,
    seed: (n: number) => seedSql(pool, fixture, 'bench', n),
    run: (M: number) => floorRun(pool, fixture, M, history),
    tearDown,
  }));
}

function liteFloorSystem(): System {
  let store: Store;
  let fixture: Fixture;
  return {
    name: 'floor-lite',
    store: 'lite',
    async setUp() {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'qm-bench-floor-lite-'));
      tmpDirs.push(dataDir);
      // PGlite on this thread: the floor is the database's own, without the hop to a worker thread
      store = await openStore({ databaseUrl: null, dataDir, embeddedThread: 'main' });
      fixture = await setUpQueuemate(store);
    },
    seed: (n) => seedSql(store.pool, fixture, 'bench', n),
    run: (M) => floorRun(store.pool, fixture, M, true),
    async tearDown() {
      await store?.close();
    },
  };
}

function httpFloorSystems(): System[] {
  let child: ChildProcess;
  let client: Client;
  let pool: pg.Pool;
  let fixture: Fixture;
  let setUpDone: Promise<void> | null = null;
  const setUp = () =>
    (setUpDone ??= (async () => {
      const url = await freshDatabase();
      const store = await openStore({ databaseUrl: url, dataDir: '', poolSize: 2 });
      fixture = await setUpQueuemate(store);
      await store.close();
      pool = new pg.Pool({ connectionString: url, max: 2 });
      const s = await startChild(
        ['--import', 'tsx', path.join(HERE, 'http-floor.ts'), url, String(fixture.tenantId), String(fixture.processIds.bench), '10'],
        process.env,
        path.join(HERE, '..'),
        children,
      );
      child = s.child;
      client = new Client(s.base);
    })());
  let ended = false;
  const tearDown = async () => {
    if (ended) return;
    ended = true;
    client?.close();
    await pool?.end();
    if (child) await stopChild(child);
  };
  return [false, true].map((group) => ({
    name: group ? 'floor-http-group' : 'floor-http',
    store: 'pg' as const,
    setUp,
    seed: (n: number) => seedSql(pool, fixture, 'bench', n),
    run: (M: number) =>
      load(
        M,
        null,
        async (lat, more, count) => {
          while (more()) {
            const t = await timed(L(lat, 'take'), () => client.call('GET', group ? '/gtake' : '/take'));
            if (t.taskId < 0) return;
            await timed(L(lat, 'complete'), () => client.call('POST', group ? '/gcomplete' : '/complete', { id: t.taskId }));
            count();
          }
        },
        child.pid,
      ),
    pid: () => child?.pid,
    tearDown,
  }));
}

function graphileSystem(): System {
  let url = '';
  let utils: any;
  let gw: any;
  return {
    utilsRef: () => utils,
    name: 'graphile-worker',
    store: 'pg',
    async setUp() {
      gw = await import('graphile-worker');
      url = await freshDatabase();
      utils = await gw.makeWorkerUtils({ connectionString: url, logger: new gw.Logger(() => () => {}) });
      await utils.migrate();
    },
    async seed(n) {
      for (let i = 0; i < n; i += 1000)
        await utils.addJobs(Array.from({ length: Math.min(1000, n - i) }, (_, j) => ({ identifier: 'bench', payload: { n: i + j } })));
    },
    async run(M, n) {
      let done = 0;
      let finish!: () => void;
      const all = new Promise<void>((r) => (finish = r));
      const t0 = performance.now();
      const runner = await gw.run({
        connectionString: url,
        concurrency: M,
        noHandleSignals: true,
        logger: new gw.Logger(() => () => {}),
        taskList: {
          bench: async () => {
            if (++done === n) finish();
          },
        },
      });
      await all;
      const seconds = (performance.now() - t0) / 1000;
      await runner.stop();
      return { rate: n / seconds, done: n, seconds, latency: {} };
    },
    async tearDown() {
      await utils?.release();
    },
  } as System;
}

function pgBossSystem(): System {
  let boss: any;
  return {
    bossRef: () => boss,
    name: 'pg-boss',
    store: 'pg',
    async setUp() {
      const { default: PgBoss } = await import('pg-boss');
      const url = await freshDatabase();
      boss = new PgBoss({ connectionString: url, max: 10 });
      boss.on('error', () => {});
      await boss.start();
      await boss.createQueue('bench');
      await boss.createQueue('bulk');
    },
    async seed(n) {
      for (let i = 0; i < n; i += 1000)
        await boss.insert(Array.from({ length: Math.min(1000, n - i) }, (_, j) => ({ name: 'bench', data: { n: i + j } })));
    },
    run: (M) =>
      load(M, null, async (lat, more, count) => {
        while (more()) {
          const [job] = (await timed(L(lat, 'fetch'), () => boss.fetch('bench'))) as { id: string }[];
          if (!job) return;
          await timed(L(lat, 'complete'), () => boss.complete('bench', job.id));
          count();
        }
      }),
    async tearDown() {
      await boss?.stop({ graceful: false, wait: true }).catch(() => {});
    },
  } as System;
}

/**
 * A copy of the checkout at `root` (its working tree, so uncommitted changes are measured too)
 * whose task funnel writes no events: the outbox entry of `derivedWrites` removed, nothing else.
 * Fails if that entry is no longer there exactly once, rather than measuring two equal servers.
 */
function noEventsCopy(root: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qm-bench-noevents-'));
  tmpDirs.push(dir);
  for (const name of fs.readdirSync(root)) {
    if (name === 'node_modules' || name === '.git' || name === 'bench' || name === 'web') continue;
    fs.cpSync(path.join(root, name), path.join(dir, name), { recursive: true });
  }
  fs.symlinkSync(fs.realpathSync(path.join(root, 'node_modules')), path.join(dir, 'node_modules'));
  const funnel = path.join(dir, 'src/tasks/funnel.ts');
  const text = fs.readFileSync(funnel, 'utf8');
  const entry = /^ {4}\['outbox', eventsFromChanges\([^()]*\)\],\n/gm;
  const found = text.match(entry)?.length ?? 0;
  if (found !== 1) throw new Error(`bench --events-cost: ${funnel} has ${found} outbox entries ${entry}, not the one this copy removes`);
  // and its import, which would be unused (the compile refuses unused names)
  const imported = /^import \{ eventsFromChanges \} from '\.\.\/events\/outbox\.js';\n/m;
  if (!imported.test(text)) throw new Error(`bench --events-cost: ${funnel} no longer imports eventsFromChanges as this copy expects`);
  fs.writeFileSync(funnel, text.replace(entry, '').replace(imported, ''));
  return dir;
}
const NO_EVENTS_ROOT = EVENTS_COST ? noEventsCopy(SERVER_ROOT) : null;

// ---------------------------------------------------------------------------------------------
// the run

interface Row {
  round: number;
  M: number;
  system: string;
  rate: number;
  latency: Measured['latency'];
  cpuMsPerCycle?: number;
  pgCpuMsPerCycle?: number;
}

const results: {
  startedAt: string;
  quick: boolean;
  serverRoot: string;
  commit: string;
  cycles: Row[];
  ratios: Record<string, Record<number, { min: number; median: number; max: number }>>;
  bulk: Record<string, number[]>;
  deepQueue: { shallow: number; deep: number; rateShallow: number[]; rateDeep: number[]; p50Shallow: number[]; p50Deep: number[] };
  ageing: { batch: number; rates: number[] }[];
  peakRssMb: Record<string, number[]>;
  wire: { system: string; M: number; roundTrips: number; transactions: number }[];
  overview?: {
    tasks: number;
    overviewMs: { p50: number; p95: number };
    firstListPageMs: { p50: number; p95: number };
    formerCountMs: number[];
    importRows: number;
    importDrySeconds: number;
    importCommitSeconds: number;
  };
} = {
  startedAt: new Date().toISOString(),
  quick: QUICK,
  serverRoot: SERVER_ROOT,
  commit: '',
  cycles: [],
  ratios: {},
  bulk: {},
  deepQueue: { shallow: SHALLOW, deep: DEEP, rateShallow: [], rateDeep: [], p50Shallow: [], p50Deep: [] },
  ageing: [],
  peakRssMb: {},
  wire: [],
};

const log = (s: string) => process.stderr.write(s + '\n');

function shuffle<T>(xs: T[]): T[] {
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}

async function timeIt(f: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await f();
  return (performance.now() - t) / 1000;
}

async function bulkRound(
  qmPg: System | undefined,
  qmLite: System | undefined,
  floor: System | undefined,
  gwSys: System | undefined,
  boss: any,
) {
  const items = Array.from({ length: BULK }, (_, i) => ({ n: i }));
  const add = (k: string, secs: number) => (results.bulk[k] ??= []).push(round(BULK / secs));
  for (let rep = 0; rep < BULK_REPS; rep++) {
    for (const sys of shuffle([qmPg, qmLite].filter(Boolean) as System[])) {
      const client: Client = (sys as any).extras.client();
      add(
        `${sys.name} CreateTasks`,
        await timeIt(async () => {
          const r = await client.call('POST', '/api/CreateTasks/bulk', items);
          if (!r.succeeded) throw new Error(JSON.stringify(r));
        }),
      );
    }
    const ext = qmPg && (qmPg as any).extras;
    if (ext) {
      const pool: pg.Pool = ext.pool();
      const f: Fixture = ext.fixture();
      const values: unknown[] = [];
      const tuples = items.map((it, i) => {
        values.push(JSON.stringify(it));
        return `(${f.tenantId}, ${f.processIds.bulk}, 'Ready', $${i + 1}::jsonb, now(), clock_timestamp(), now(), 'system', now())`;
      });
      add(
        'multi-row INSERT',
        await timeIt(() =>
          pool.query(
            `INSERT INTO tasks (tenant_id, process_id, queue, data, activation_date, queue_position, created_at, created_by_type, updated_at) VALUES ${tuples.join(', ')}`,
            values,
          ),
        ),
      );
    }
    if (boss) add('pg-boss insert', await timeIt(() => boss.insert(items.map((d) => ({ name: 'bulk', data: d })))));
    if (gwSys) {
      const utils = (gwSys as any).utilsRef?.();
      if (utils) add('graphile-worker addJobs', await timeIt(() => utils.addJobs(items.map((d) => ({ identifier: 'bulk', payload: d })))));
    }
  }
  void floor;
}

async function deepQueue(qm: System) {
  const ext = (qm as any).extras;
  const client: Client = ext.client();
  const M = 16;
  const run = () => load(M, null, separateWorker(client, 'deep'), undefined, DEEP_CYCLES);
  await ext.seed(SHALLOW, 'deep');
  const shallow = await run();
  await ext.seed(DEEP - SHALLOW + DEEP_CYCLES, 'deep');
  await ext.pool().query('ANALYZE tasks');
  const deep = await run();
  results.deepQueue.rateShallow.push(round(shallow.rate));
  results.deepQueue.rateDeep.push(round(deep.rate));
  results.deepQueue.p50Shallow.push(shallow.latency.TakeNext.p50 + shallow.latency.Solved.p50);
  results.deepQueue.p50Deep.push(deep.latency.TakeNext.p50 + deep.latency.Solved.p50);
}

/**
 * The people's overview and first list page at 1M tasks (bench/overview.ts, a process of its own:
 * it fills a tenant with set-based INSERTs and serves it in-process), once per full run.
 */
async function overviewAt1M() {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(HERE, 'overview.ts'), '--tasks', '1000000', '--requests', '100'], {
    env: process.env,
    cwd: path.join(HERE, '..'),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`bench/overview.ts exited ${code}`);
  results.overview = JSON.parse(out.trim().split('\n').pop()!);
}

async function ageing() {
  const [qm] = queuemateSystems('lite');
  try {
    await qm.setUp();
    const rates: number[] = [];
    for (let b = 0; b < AGEING_BATCHES; b++) {
      await qm.seed(AGEING_BATCH);
      const m = await qm.run(16, AGEING_BATCH);
      rates.push(round(m.rate, 1));
      log(`  ageing batch ${b + 1}: ${m.rate.toFixed(1)} tasks/s`);
    }
    results.ageing.push({ batch: AGEING_BATCH, rates });
  } finally {
    await qm.tearDown();
  }
}

function allSystems(): System[] {
  return [
    ...queuemateSystems('pg'),
    ...queuemateSystems('lite'),
    // what flushing the write-ahead log before each answer costs (QUEUEMATE_EMBEDDED_FSYNC)
    ...queuemateSystems('lite', SERVER_ROOT, '-nofsync', { QUEUEMATE_EMBEDDED_FSYNC: 'off' }),
    ...(BASE_ROOT ? [...queuemateSystems('pg', BASE_ROOT, '-base'), ...queuemateSystems('lite', BASE_ROOT, '-base')] : []),
    ...(NO_EVENTS_ROOT
      ? [...queuemateSystems('pg', NO_EVENTS_ROOT, '-noevents'), ...queuemateSystems('lite', NO_EVENTS_ROOT, '-noevents')]
      : []),
    // `start --processes N`: the server CPU measured is the primary's only, so compare rates
    ...(PROCESSES > 1 ? queuemateSystems('pg', SERVER_ROOT, `-p${PROCESSES}`, { QUEUEMATE_PROCESSES: String(PROCESSES) }) : []),
    ...(PGBOUNCER ? queuemateSystems('pg', SERVER_ROOT, '-pgbouncer', {}, { pgbouncer: true }) : []),
    ...floorSystems(),
    liteFloorSystem(),
    ...httpFloorSystems(),
    graphileSystem(),
    pgBossSystem(),
  ];
}

async function oneRound(round_: number) {
  const systems = allSystems().filter((s) =>
    ONLY ? ONLY.includes(s.name) : !EVENTS_COST || (/^queuemate-/.test(s.name) && !s.name.endsWith('-client')),
  );
  // set up one at a time (migrations in parallel would measure nothing and slow everything)
  for (const s of systems) {
    log(`  set up ${s.name}`);
    await s.setUp();
  }
  // expose graphile's utils to the bulk round
  const gwSys = systems.find((s) => s.name === 'graphile-worker');
  try {
    for (const M of MS) {
      for (const s of shuffle(systems)) {
        const n = (s.store === 'lite' ? TASKS_LITE : TASKS_PG)[M] ?? TASKS_PG[16];
        await s.seed(n);
        try {
          const m = await s.run(M, n);
          results.cycles.push({
            round: round_,
            M,
            system: s.name,
            rate: round(m.rate, 1),
            latency: m.latency,
            cpuMsPerCycle: m.cpuMsPerCycle,
            ...(s.store === 'pg' ? { pgCpuMsPerCycle: m.pgCpuMsPerCycle } : {}),
          });
          log(`  round ${round_} M=${M} ${s.name}: ${m.rate.toFixed(1)} tasks/s`);
        } catch (err) {
          if (!(err instanceof Unsupported)) throw err;
          log(`  round ${round_} M=${M} ${s.name}: not supported by this server`);
        }
      }
    }
    const qmPg = systems.find((s) => s.name === 'queuemate-pg');
    const qmLite = systems.find((s) => s.name === 'queuemate-lite');
    const bossSys = systems.find((s) => s.name === 'pg-boss') as any;
    if (!flag('no-bulk') && !EVENTS_COST) {
      log('  bulk creates');
      await bulkRound(qmPg, qmLite, undefined, gwSys, bossSys ? bossInstance(bossSys) : null);
    }
    if (qmPg && !flag('no-deep') && !EVENTS_COST) {
      log('  deep queue');
      await deepQueue(qmPg);
    }
    for (const s of systems) {
      const pid = s.pid?.();
      if (pid && /^queuemate-(pg|lite)(-base)?$|^floor-http$/.test(s.name)) (results.peakRssMb[s.name] ??= []).push(peakRssMb(pid));
    }
  } finally {
    for (const s of systems) await s.tearDown().catch((e) => log(`  tear down ${s.name}: ${e}`));
    await dropDatabases();
  }
}

/**
 * The wire accounting, untimed, after the rounds: each PostgreSQL system again on a fresh database
 * reached through a counting proxy (bench/pg-proxy.ts), a few hundred life cycles at M = 1 and 16;
 * round trips and transactions per life cycle, as PostgreSQL saw them. Kept out of the timed
 * rounds: the proxy's hop would slow the systems measured there.
 */
async function wireAccounting() {
  const target = new URL(BASE_URL!);
  const proxy = new CountingProxy({ host: target.hostname, port: Number(target.port || 5432) });
  wireProxy = { proxy, port: await proxy.start() };
  try {
    const pgSystems = allSystems().filter(
      (s) => s.store === 'pg' && !/-(base|noevents)/.test(s.name) && (ONLY ? ONLY.includes(s.name) : true),
    );
    try {
      // set up together: the separate and combined calls share one server
      for (const s of pgSystems) await s.setUp();
      for (const s of pgSystems) {
        for (const M of [1, 16]) {
          const n = M === 1 ? 200 : 400;
          await s.seed(n);
          proxy.reset();
          try {
            await s.run(M, n);
          } catch (err) {
            if (!(err instanceof Unsupported)) throw err;
            continue;
          }
          const per = (x: number) => round(x / n, 2);
          results.wire.push({ system: s.name, M, roundTrips: per(proxy.counts.roundTrips), transactions: per(proxy.counts.transactions) });
          log(
            `  wire ${s.name} M=${M}: ${per(proxy.counts.roundTrips)} round trips, ${per(proxy.counts.transactions)} transactions per life cycle`,
          );
        }
      }
    } finally {
      for (const s of pgSystems) await s.tearDown().catch((e) => log(`  tear down ${s.name}: ${e}`));
    }
  } finally {
    wireProxy = null;
    await dropDatabases();
    await proxy.close();
  }
}

// graphile's and pg-boss's handles for the bulk round, without widening System
function bossInstance(s: any) {
  return s.bossRef?.();
}

function ratiosOf(rows: Row[]) {
  const vs: [string, string][] = [
    ['queuemate-pg', 'floor-sql'],
    ['queuemate-pg', 'floor-http'],
    ['queuemate-pg', 'floor-http-group'],
    ['queuemate-pg', 'graphile-worker'],
    ['queuemate-pg', 'pg-boss'],
    ['queuemate-pg-combined', 'floor-sql'],
    ['queuemate-pg-combined', 'graphile-worker'],
    ['queuemate-pg-combined', 'pg-boss'],
    ['queuemate-pg-client', 'queuemate-pg-combined'],
    ['queuemate-pg-client', 'queuemate-pg'],
    ['queuemate-lite-client', 'queuemate-lite-combined'],
    ['queuemate-lite', 'floor-lite'],
    ['queuemate-lite', 'queuemate-lite-nofsync'],
    ['queuemate-lite-combined', 'queuemate-lite-nofsync-combined'],
    ['queuemate-lite-combined', 'floor-lite'],
    ['queuemate-lite', 'pg-boss'],
    ['floor-http', 'floor-sql'],
    ['floor-http-group', 'floor-sql'],
    ['floor-sql-history', 'floor-sql'],
    ['queuemate-pg', 'queuemate-pg-base'],
    ['queuemate-pg-combined', 'queuemate-pg-base'],
    ['queuemate-lite', 'queuemate-lite-base'],
    ['queuemate-lite-combined', 'queuemate-lite-base'],
    ['queuemate-pg', 'queuemate-pg-noevents'],
    ['queuemate-pg-combined', 'queuemate-pg-noevents-combined'],
    ['queuemate-lite', 'queuemate-lite-noevents'],
    ['queuemate-lite-combined', 'queuemate-lite-noevents-combined'],
    ['queuemate-pg-base', 'floor-sql'],
    ['queuemate-pg-base', 'floor-http'],
    ['queuemate-pg-base', 'floor-http-group'],
    ['queuemate-pg-base', 'graphile-worker'],
    ['queuemate-lite-base', 'floor-lite'],
    ...(PROCESSES > 1
      ? ([
          [`queuemate-pg-p${PROCESSES}`, 'queuemate-pg'],
          [`queuemate-pg-p${PROCESSES}-combined`, 'queuemate-pg-combined'],
        ] as [string, string][])
      : []),
    ['queuemate-pg-pgbouncer', 'queuemate-pg'],
    ['queuemate-pg-pgbouncer-combined', 'queuemate-pg-combined'],
  ];
  const out: typeof results.ratios = {};
  for (const [a, b] of vs) {
    for (const M of MS) {
      const rs: number[] = [];
      for (let r = 1; r <= ROUNDS; r++) {
        const x = rows.find((y) => y.round === r && y.M === M && y.system === a);
        const y = rows.find((z) => z.round === r && z.M === M && z.system === b);
        if (x && y) rs.push(x.rate / y.rate);
      }
      if (rs.length) (out[`${a} / ${b}`] ??= {})[M] = mmm(rs, 2);
    }
  }
  // a with / without pair: also the server CPU per life cycle, steadier than rates on a loaded machine
  for (const [a, b] of vs.filter(([, y]) => y.includes('-noevents'))) {
    for (const M of MS) {
      const rs: number[] = [];
      for (let r = 1; r <= ROUNDS; r++) {
        const x = rows.find((y) => y.round === r && y.M === M && y.system === a)?.cpuMsPerCycle;
        const y = rows.find((z) => z.round === r && z.M === M && z.system === b)?.cpuMsPerCycle;
        if (x && y) rs.push(x / y);
      }
      if (rs.length) (out[`server CPU per cycle: ${a} / ${b}`] ??= {})[M] = mmm(rs, 2);
    }
  }
  return out;
}

function mmm(xs: number[], d = 0) {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  return { min: round(s[0], d), median: round(mid, d), max: round(s[s.length - 1], d) };
}
const fmt = (m: { min: number; median: number; max: number }) => (m.min === m.max ? `${m.median}` : `${m.min} / ${m.median} / ${m.max}`);

function printTables() {
  const names = [...new Set(results.cycles.map((r) => r.system))];
  const lines: string[] = [];
  lines.push(`\nLife cycles per second, min / median / max of ${ROUNDS} round(s)${QUICK ? ' (quick)' : ''}\n`);
  lines.push(
    `| system | ${MS.map((m) => `M = ${m}`).join(' | ')} | p50 ms per call at M = 16 | server CPU ms per cycle, M = 16 | PostgreSQL CPU ms per cycle, M = 1 / 16 |`,
  );
  lines.push(`| --- | ${MS.map(() => '---').join(' | ')} | --- | --- | --- |`);
  for (const n of names) {
    const cells = MS.map((M) => {
      const xs = results.cycles.filter((r) => r.system === n && r.M === M).map((r) => r.rate);
      return xs.length ? fmt(mmm(xs)) : '–';
    });
    const at16 = results.cycles.filter((r) => r.system === n && r.M === 16);
    const lat = at16.length
      ? Object.entries(at16[0].latency)
          .map(([k, v]) => `${k} ${v.p50} (p99 ${v.p99})`)
          .join(', ')
      : '';
    const cpu = at16.filter((r) => r.cpuMsPerCycle !== undefined).map((r) => r.cpuMsPerCycle!);
    const pgCpu = (M: number) => {
      const xs = results.cycles
        .filter((r) => r.system === n && r.M === M && r.pgCpuMsPerCycle !== undefined)
        .map((r) => r.pgCpuMsPerCycle!);
      return xs.length ? `${mmm(xs, 2).median}` : '';
    };
    const pgCell = pgCpu(1) || pgCpu(16) ? `${pgCpu(1) || '–'} / ${pgCpu(16) || '–'}` : '';
    lines.push(`| ${n} | ${cells.join(' | ')} | ${lat} | ${cpu.length ? fmt(mmm(cpu, 2)) : ''} | ${pgCell} |`);
  }
  if (Object.keys(results.bulk).length) {
    lines.push(`\nBulk: ${BULK} tasks per call, tasks/s (min / median / max of ${BULK_REPS * ROUNDS})\n`);
    for (const [k, xs] of Object.entries(results.bulk)) lines.push(`- ${k}: ${fmt(mmm(xs))}`);
  }
  const d = results.deepQueue;
  if (d.rateDeep.length) {
    lines.push(`\nDeep queue (queuemate-pg, M = 16, ${DEEP_CYCLES} life cycles): ${SHALLOW} Ready vs ${DEEP} Ready`);
    lines.push(`- tasks/s: ${d.rateShallow.join(', ')} vs ${d.rateDeep.join(', ')}`);
    lines.push(
      `- life cycle p50 (TakeNext + Solved) ms: ${d.p50Shallow.map((x) => round(x, 2)).join(', ')} vs ${d.p50Deep.map((x) => round(x, 2)).join(', ')}`,
    );
  }
  for (const a of results.ageing)
    lines.push(`\nEmbedded store ageing (${AGEING_BATCHES} batches of ${a.batch}, M = 16): ${a.rates.join(' → ')} tasks/s`);
  const o = results.overview;
  if (o) {
    lines.push(`\nThe people's API at ${o.tasks} tasks in one tenant (PostgreSQL, bench/overview.ts)`);
    lines.push(
      `- overview GET /v1/processes p50 / p95: ${o.overviewMs.p50} / ${o.overviewMs.p95} ms (the former grouped COUNT(*): ${o.formerCountMs.join(', ')} ms)`,
    );
    lines.push(`- first list page of the biggest process p50 / p95: ${o.firstListPageMs.p50} / ${o.firstListPageMs.p95} ms`);
    lines.push(`- ${o.importRows}-row CSV import: dry run ${o.importDrySeconds} s, then commit ${o.importCommitSeconds} s`);
  }
  if (Object.keys(results.peakRssMb).length) {
    lines.push('\nPeak RSS of the server (MB, per round)');
    for (const [k, xs] of Object.entries(results.peakRssMb)) lines.push(`- ${k}: ${xs.join(', ')}`);
  }
  if (results.wire.length) {
    lines.push('\nPostgreSQL round trips / transactions per life cycle (counted through a proxy, untimed)\n');
    lines.push('| system | M = 1 | M = 16 |');
    lines.push('| --- | --- | --- |');
    for (const n of [...new Set(results.wire.map((w) => w.system))]) {
      const cell = (M: number) => {
        const w = results.wire.find((x) => x.system === n && x.M === M);
        return w ? `${w.roundTrips} / ${w.transactions}` : '–';
      };
      lines.push(`| ${n} | ${cell(1)} | ${cell(16)} |`);
    }
  }
  lines.push('\nRatios within a round, min / median / max\n');
  lines.push(`| ratio | ${MS.map((m) => `M = ${m}`).join(' | ')} |`);
  lines.push(`| --- | ${MS.map(() => '---').join(' | ')} |`);
  for (const [k, byM] of Object.entries(results.ratios))
    lines.push(`| ${k} | ${MS.map((M) => (byM[M] ? fmt(byM[M]) : '–')).join(' | ')} |`);
  const x = (a: number[], b: number[]) =>
    a.length && b.length
      ? fmt(
          mmm(
            a.map((v, i) => v / b[i]),
            2,
          ),
        )
      : '–';
  if (d.rateDeep.length) lines.push(`\n- deep queue: life cycle p50 at ${DEEP} / at ${SHALLOW}: ${x(d.p50Deep, d.p50Shallow)}`);
  for (const a of results.ageing) lines.push(`- ageing: last batch / first batch: ${round(a.rates[a.rates.length - 1] / a.rates[0], 2)}`);
  const bulkQm = results.bulk['queuemate-pg CreateTasks'];
  const bulkBoss = results.bulk['pg-boss insert'];
  if (bulkQm && bulkBoss)
    lines.push(`- bulk CreateTasks (PostgreSQL) / pg-boss insert: ${round(mmm(bulkQm).median / mmm(bulkBoss).median, 2)} (medians)`);
  console.log(lines.join('\n'));
}

// an interrupted run still stops its servers and drops its databases
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`bench: ${signal}, cleaning up`);
    for (const c of children) c.kill('SIGTERM');
    for (const d of tmpDirs) fs.rmSync(d, { recursive: true, force: true });
    void dropDatabases()
      .catch(() => {})
      .finally(() => process.exit(130));
  });
}

try {
  try {
    const { execSync } = await import('node:child_process');
    results.commit = execSync('git rev-parse --short HEAD', { cwd: SERVER_ROOT, stdio: 'pipe' }).toString().trim();
  } catch {
    results.commit = 'unknown';
  }
  await findPostmaster();
  for (let r = 1; r <= ROUNDS; r++) {
    log(`round ${r} of ${ROUNDS}`);
    await oneRound(r);
  }
  if (!flag('no-wire') && !EVENTS_COST) {
    log('wire accounting (PostgreSQL round trips and transactions per life cycle)');
    await wireAccounting();
  }
  if (!QUICK && !flag('no-overview') && !EVENTS_COST && (!ONLY || ONLY.includes('queuemate-pg'))) {
    log("the people's overview at 1M tasks (bench/overview.ts)");
    await overviewAt1M();
  }
  if (!flag('no-ageing') && !EVENTS_COST && (!ONLY || ONLY.includes('queuemate-lite'))) {
    log('embedded store ageing');
    await ageing();
  }
  results.ratios = ratiosOf(results.cycles);
  const dir = path.join(HERE, 'results');
  fs.mkdirSync(dir, { recursive: true });
  const text = JSON.stringify(results, null, 2);
  fs.writeFileSync(path.join(dir, 'latest.json'), text);
  fs.writeFileSync(path.join(dir, `${results.startedAt.replace(/[:.]/g, '-')}.json`), text);
  printTables();
} finally {
  for (const c of children) await stopChild(c);
  await dropDatabases().catch(() => {});
  for (const d of tmpDirs) fs.rmSync(d, { recursive: true, force: true });
}
