/**
 * The server's own CPU per life cycle (TakeNext then Solved over keep-alive HTTP, M concurrent
 * Mates, PostgreSQL): what bench/run.ts reports as "server CPU per life cycle", alone, for one
 * checkout or two side by side (before/after a change: each batch runs on both servers at once, so
 * a burst of load from elsewhere hits both alike), optionally with a CPU profile of each server.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/DB node --import tsx bench/server-cpu.ts
 *     [--base-root DIR --base-db URL]  also the server of another checkout, on a database of its own
 *     [--floor --base-db URL]  instead of another checkout, the bench's minimal HTTP floor with group
 *                        commit (bench/http-floor.ts, `floor-http-group` in bench/run.ts): what any
 *                        HTTP service doing the same statements costs on this machine
 *     [--cycles N]       life cycles per batch (default 2000), after one batch of 1000 not counted
 *     [--workers M]      concurrent Mates (default 16)
 *     [--batches N]      measured batches per server (default 5); the median is printed
 *     [--alternate]      run each batch on one server after the other instead of on both at once
 *     [--wire]           the servers reach their databases through a counting proxy (bench/pg-proxy.ts):
 *                        PostgreSQL round trips per life cycle (the proxy's hop changes the timing)
 *     [--node-args A,B]  Node options for this checkout's server (e.g. --max-semi-space-size=32)
 *     [--base-node-args A,B]  the same for the other server
 *     [--cpu-prof DIR]   start the Queuemate servers with --cpu-prof, profiles written to DIR on exit
 *                        (summarize them with bench/profile-summary.ts)
 *
 * The databases are emptied (schema public dropped) and set up by each checkout's own code. The
 * servers run compiled, as production does (`npm run build`, then `node dist/src/main.js start`).
 * CPU is the server process's user + system time from /proc/<pid>/stat (10 ms ticks: keep batches
 * at a few seconds of CPU). On a shared machine the figures are noisy: compare the two servers
 * within one run, batch by batch.
 */
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync, type ChildProcess } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { HttpClient, startChild } from './child.js';
import { CountingProxy } from './pg-proxy.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
const opt = (name: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
};
const CYCLES = Number(opt('cycles') ?? 2000);
const WORKERS = Number(opt('workers') ?? 16);
const BATCHES = Number(opt('batches') ?? 5);
const PROFILE_DIR = opt('cpu-prof') ? path.resolve(opt('cpu-prof')!) : null;
const BASE_ROOT = opt('base-root') ? path.resolve(opt('base-root')!) : null;
const BASE_DB = opt('base-db');
const WIRE = argv.includes('--wire');
const ALTERNATE = argv.includes('--alternate');
const FLOOR = argv.includes('--floor');
const nodeArgs = (name: string) => (opt(name) ?? '').split(',').filter(Boolean);
if (!process.env.DATABASE_URL || ((BASE_ROOT || FLOOR) && !BASE_DB)) {
  console.error('server-cpu: set DATABASE_URL (and --base-db with --base-root): see the header');
  process.exit(2);
}
const log = (s: string) => process.stderr.write(s + '\n');

interface Server {
  label: string;
  child: ChildProcess;
  client: HttpClient;
  pool: pg.Pool;
  tenantId: number;
  processId: number;
  samples: number[];
  proxy: CountingProxy | null;
  /** the floor's routes instead of TakeNext and Solved */
  floor: boolean;
  /** per batch: user and system CPU ms per life cycle, transactions per life cycle */
  detail: string[];
}

/** CPU seconds a process has used so far: user, system. */
function cpuSeconds(pid: number): [number, number] {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return [Number(f[11]) / 100, Number(f[12]) / 100];
}

/** Transactions committed in the server's database so far (pg_stat_database, read back after a flush). */
async function commits(s: Server): Promise<number> {
  await s.pool.query('SELECT pg_stat_clear_snapshot()');
  const r = await s.pool.query('SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()');
  return Number(r.rows[0].xact_commit);
}

async function setUp(label: string, root: string, url: string, args: string[], floor = false): Promise<Server> {
  const from = (rel: string) => import(pathToFileURL(path.join(root, rel)).href);
  const wipe = new pg.Client({ connectionString: url });
  await wipe.connect();
  await wipe.query('DROP SCHEMA public CASCADE; CREATE SCHEMA public');
  await wipe.end();
  const store = await (await from('src/db/store.ts')).openStore({ databaseUrl: url, dataDir: '', poolSize: 2 });
  let fixture: { tenantId: number; processId: number; apiSecret: string };
  try {
    await (await from('src/db/migrator.ts')).migrate(store);
    const { tenant, apiSecret } = await (await from('src/tenants/service.ts')).createTenant(store.db, { clientId: 'bench' });
    await (await from('src/accounts/service.ts')).createMate(store.db, tenant.id, { username: 'bench-mate', password: 'bench-password-1' });
    const proc = await (
      await from('src/processes/service.ts')
    ).createProcess(store.db, tenant.id, {
      processKey: 'bench',
      fields: [{ name: 'n', type: 'integer' }],
    });
    fixture = { tenantId: tenant.id, processId: proc.id, apiSecret };
  } finally {
    await store.close();
  }
  if (!floor) {
    log(`  ${label}: compiling ${root} (npm run build)`);
    execFileSync('npm', ['run', 'build', '--silent', '--', '--if-stale'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  }
  // not the floor: it runs through tsx, whose loader thread would write a profile of the same name
  const prof = PROFILE_DIR && !floor ? ['--cpu-prof', '--cpu-prof-dir', PROFILE_DIR, '--cpu-prof-name', `${label}.cpuprofile`] : [];
  let serverUrl = url;
  let proxy: CountingProxy | null = null;
  if (WIRE) {
    const u = new URL(url);
    proxy = new CountingProxy({ host: u.hostname, port: Number(u.port || 5432) });
    u.hostname = '127.0.0.1';
    u.port = String(await proxy.start());
    serverUrl = u.toString();
  }
  const serverArgs = floor
    ? ['--import', 'tsx', 'bench/http-floor.ts', serverUrl, String(fixture.tenantId), String(fixture.processId), '10']
    : ['dist/src/main.js', 'start', '--port', '0', '--log-level', 'warn'];
  const { child, base } = await startChild([...args, ...prof, ...serverArgs], { ...process.env, DATABASE_URL: serverUrl }, root);
  const client = new HttpClient(base);
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  if (floor)
    return { label, child, client, pool, tenantId: fixture.tenantId, processId: fixture.processId, samples: [], detail: [], proxy, floor };
  const form = new URLSearchParams({
    grant_type: 'password',
    client_id: 'bench',
    client_secret: fixture.apiSecret,
    username: 'bench-mate',
    password: 'bench-password-1',
  }).toString();
  client.token = (await client.call('POST', '/connect/token', form, 'application/x-www-form-urlencoded')).access_token;
  if (!client.token) throw new Error(`${label}: sign-in failed`);
  return { label, child, client, pool, tenantId: fixture.tenantId, processId: fixture.processId, samples: [], detail: [], proxy, floor };
}

async function seed(s: Server, n: number) {
  await s.pool.query(
    `INSERT INTO tasks (tenant_id, process_id, queue, data, activation_date, queue_position, created_at, created_by_type, updated_at)
    SELECT $1, $2, 'Ready', jsonb_build_object('n', g), now(), clock_timestamp(), now(), 'system', now() FROM generate_series(1, $3) g`,
    [s.tenantId, s.processId, n],
  );
}

/** M Mates doing TakeNext then Solved until the queue is empty; the server's CPU ms per life cycle. */
async function batch(s: Server, n: number): Promise<number> {
  await seed(s, n);
  let done = 0;
  const tx0 = await commits(s);
  const trips0 = s.proxy?.counts.roundTrips ?? 0;
  const [user0, sys0] = cpuSeconds(s.child.pid!);
  await Promise.all(
    Array.from({ length: WORKERS }, async () => {
      for (;;) {
        const task = await s.client.call('GET', s.floor ? '/gtake' : '/api/TakeNext/bench');
        if (!(task.taskId > 0)) {
          if (!s.floor && task.code !== 'queue_empty') throw new Error(`TakeNext: ${JSON.stringify(task)}`);
          return;
        }
        const r = await s.client.call(
          'POST',
          s.floor ? '/gcomplete' : '/api/Solved',
          s.floor ? { id: task.taskId } : { taskId: task.taskId },
        );
        if (!r.succeeded) throw new Error(`Solved: ${JSON.stringify(r)}`);
        done++;
      }
    }),
  );
  const [user1, sys1] = cpuSeconds(s.child.pid!);
  const trips = (s.proxy?.counts.roundTrips ?? 0) - trips0;
  if (done !== n) throw new Error(`${s.label}: completed ${done} of ${n}`);
  // the two reads of pg_stat_database commit too; the stats flush lags by up to a second
  await new Promise((r) => setTimeout(r, 1100));
  const tx = (await commits(s)) - tx0 - 2;
  const per = (x: number) => ((x * 1000) / done).toFixed(3);
  s.detail.push(
    `user ${per(user1 - user0)} sys ${per(sys1 - sys0)} tx ${(tx / done).toFixed(2)}${s.proxy ? ` round trips ${(trips / done).toFixed(2)}` : ''}`,
  );
  return ((user1 - user0 + sys1 - sys0) * 1000) / done;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const servers: Server[] = [await setUp('this', path.join(HERE, '..'), process.env.DATABASE_URL, nodeArgs('node-args'))];
if (BASE_ROOT) servers.push(await setUp('base', BASE_ROOT, BASE_DB!, nodeArgs('base-node-args')));
else if (FLOOR) servers.push(await setUp('floor', path.join(HERE, '..'), BASE_DB!, nodeArgs('base-node-args'), true));
try {
  for (const s of servers) await batch(s, 1000); // warm-up: JIT, pools, prepared statements
  for (let b = 0; b < BATCHES; b++) {
    // both servers at once: a burst of load from elsewhere hits both alike (run one after the
    // other, in alternating order, with --alternate)
    const order = b % 2 ? [...servers].reverse() : servers;
    const run = async (s: Server) => {
      const ms = await batch(s, CYCLES);
      s.samples.push(ms);
      log(`  batch ${b + 1} ${s.label}: ${ms.toFixed(3)} ms CPU per life cycle (${s.detail.at(-1)})`);
    };
    if (ALTERNATE) for (const s of order) await run(s);
    else await Promise.all(order.map(run));
  }
  for (const s of servers) {
    console.log(
      `${s.label}: server CPU per life cycle (M = ${WORKERS}) median ${median(s.samples).toFixed(3)} ms over ${BATCHES} batches of ${CYCLES} [${s.samples.map((x) => x.toFixed(3)).join(', ')}]`,
    );
  }
  if (servers.length === 2) {
    const ratios = servers[0].samples.map((x, i) => x / servers[1].samples[i]);
    console.log(
      `this / ${servers[1].label}, batch by batch: median ${median(ratios).toFixed(2)} [${ratios.map((r) => r.toFixed(2)).join(', ')}]`,
    );
  }
} finally {
  for (const s of servers) {
    s.client.close();
    await s.pool.end();
    // SIGTERM: a clean exit, so --cpu-prof writes its profile
    const gone = new Promise((r) => s.child.once('exit', r));
    s.child.kill('SIGTERM');
    await Promise.race([gone, new Promise((r) => setTimeout(r, 15_000))]);
    await s.proxy?.close();
  }
}
