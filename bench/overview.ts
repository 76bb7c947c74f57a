/**
 * The people's overview and task list at 1M tasks (bench/README.md, "Overview at 1M tasks"): one
 * tenant filled with set-based INSERTs (4 processes, every queue, deadlines, future activation
 * dates, urgent and locked tasks, Solved spread over 30 days), its queue counters backfilled as
 * migration 0006 does and folded once as the sweeper does; then, over real HTTP to an in-process server:
 *   - GET /v1/processes (the overview, from the counters) p50/p95,
 *   - GET /v1/processes/:id/tasks (first page, default sort) of the biggest process p50/p95,
 *   - the former grouped COUNT(*) of the overview, for comparison (a few runs),
 *   - a 100,000-row CSV import through the import route: dry run, then commit.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node --import tsx bench/overview.ts [--tasks 1000000] [--requests 100] [--import 100000]
 *   node --import tsx bench/overview.ts --lite [--tasks 1000000]      # the embedded store, in a temporary directory
 *
 * Prints one JSON line. The PostgreSQL database (qm_bench_…) is created and dropped by the bench.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { sql } from 'kysely';
import { openStore, type Store } from '../src/db/store.js';
import { migrate } from '../src/db/migrator.js';
import { createApp } from '../src/app.js';
import { testConfig } from '../src/config.js';
import { createTenant } from '../src/tenants/service.js';
import { createProcess } from '../src/processes/service.js';
import { createUser } from '../src/accounts/service.js';
import { createPersonalToken } from '../src/accounts/sessions.js';
import { listProcessSummaries } from '../src/processes/summary.js';
import { foldQueueCounts } from '../src/maintenance/queue-counters.js';

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
}
const TASKS = arg('tasks', 1_000_000);
const REQUESTS = arg('requests', 100);
const IMPORT_ROWS = arg('import', 100_000);
const LITE = process.argv.includes('--lite');
const BASE_URL = process.env.DATABASE_URL;
if (!LITE && !BASE_URL) {
  console.error('bench: set DATABASE_URL, or pass --lite');
  process.exit(2);
}

const log = (msg: string) => console.error(`[overview] ${msg}`);
const name = `qm_bench_${crypto.randomBytes(4).toString('hex')}`;
let admin: pg.Client | null = null;
let dataDir = '';
let store: Store;
if (LITE) {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'qm-bench-overview-'));
  store = await openStore({ databaseUrl: null, dataDir });
} else {
  admin = new pg.Client({ connectionString: BASE_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const u = new URL(BASE_URL!);
  u.pathname = `/${name}`;
  store = await openStore({ databaseUrl: u.toString(), dataDir: '', poolSize: 4 });
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];
const round = (x: number) => +x.toFixed(2);

try {
  await migrate(store);
  const { tenant } = await createTenant(store.db, { clientId: 'bench', timeZone: 'Europe/Copenhagen' });
  const fields = [
    { name: 'ref', type: 'text' as const },
    { name: 'amount', type: 'number' as const },
  ];
  const procs: { id: number }[] = [];
  for (const key of ['invoices', 'orders', 'claims', 'returns'])
    procs.push(await createProcess(store.db, tenant.id, { processKey: key, fields }));
  await sql`UPDATE processes SET deadlines_enabled = true, default_deadline_seconds = 86400 WHERE id = ${procs[1].id}`.execute(store.db);
  const user = await createUser(store.db, tenant.id, { username: 'bench', role: 'admin', password: 'a-long-enough-password' });
  const now = new Date();
  const { token } = await createPersonalToken(
    store.db,
    tenant.id,
    user.id,
    { name: 'bench', expiresAt: new Date(now.getTime() + 86_400_000) },
    now,
  );

  // 1M tasks, set-based: half in the first process (the list's), the rest spread over three.
  // Leases last a day: no sweeper runs here, and leases left expired would be counted one by one
  // (the overview subtracts expired, unrecovered leases; in service the sweeper recovers them
  // within its interval).
  // i mod 100 decides the state: 0-39 Ready (0-3 not active yet, 4-5 locked), 40-44 NeedsData,
  // 45-49 NeedsApproval, 50-54 Manual, 55-57 Manual with Error, 58-99 Solved (updated over 30 days).
  const t0 = performance.now();
  log(`inserting ${TASKS} tasks`);
  // chunks short enough for the store's statement timeout on a busy machine
  const CHUNK = 100_000;
  for (let from = 1; from <= TASKS; from += CHUNK) {
    const to = Math.min(TASKS, from + CHUNK - 1);
    await sql`
      INSERT INTO tasks (tenant_id, process_id, queue, error, data, activation_date, deadline, urgent, queue_position,
        locked_by_mate_id, locked_until, created_at, created_by_type, updated_at)
      SELECT ${tenant.id}, p.id, s.queue, s.m BETWEEN 55 AND 57, jsonb_build_object('ref', 'R-' || g, 'amount', g % 1000),
        CASE WHEN s.m < 4 THEN ${now}::timestamptz + (g % 720) * interval '1 minute' ELSE s.created END,
        CASE WHEN p.id = ${procs[1].id} AND s.queue <> 'Solved' THEN ${now}::timestamptz + ((g % 14) - 7) * interval '1 day' + (g % 1440) * interval '1 minute' END,
        g % 50 = 0, s.created,
        CASE WHEN s.m IN (4, 5) THEN 1 END, CASE WHEN s.m IN (4, 5) THEN ${now}::timestamptz + interval '1 day' END,
        s.created, 'system', CASE WHEN s.queue = 'Solved' THEN s.created + (g % 1000) * interval '1 second' ELSE s.created END
      FROM generate_series(${from}::bigint, ${to}::bigint) g
      CROSS JOIN LATERAL (SELECT (g % 100)::int AS m,
        ${now}::timestamptz - (g % 43200) * interval '1 minute' AS created,
        CASE WHEN g % 100 < 40 THEN 'Ready' WHEN g % 100 < 45 THEN 'NeedsData' WHEN g % 100 < 50 THEN 'NeedsApproval'
             WHEN g % 100 < 58 THEN 'Manual' ELSE 'Solved' END AS queue) s
      JOIN processes p ON p.tenant_id = ${tenant.id} AND p.process_key = CASE WHEN g % 2 = 0 THEN 'invoices' WHEN g % 6 = 1 THEN 'orders'
        WHEN g % 6 = 3 THEN 'claims' ELSE 'returns' END`.execute(store.db);
    log(`  ${to}`);
  }
  // the counters as migration 0006 backfills them
  await sql`INSERT INTO queue_counts (tenant_id, process_id, kind, bucket, n)
    SELECT t.tenant_id, t.process_id, k.kind, k.bucket, count(*) FROM tasks t
    CROSS JOIN LATERAL qm_count_keys(t.queue, t.error, t.deleted_at IS NOT NULL, t.urgent, t.locked_until IS NOT NULL,
      t.activation_date, t.deadline, t.updated_at) k
    GROUP BY 1, 2, 3, 4`.execute(store.db);
  // as the sweeper leaves them: bins of the past merged (Solved older than three days, …)
  await foldQueueCounts(store.db, new Date());
  await sql`VACUUM ANALYZE`.execute(store.db);
  const fillSeconds = (performance.now() - t0) / 1000;
  log(`filled in ${fillSeconds.toFixed(0)} s`);

  const app = await createApp({ ...testConfig(), logLevel: 'silent' }, { store, sweeper: false });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const headers = { authorization: `Bearer ${token}` };
  const time = async (url: string) => {
    const s = performance.now();
    const res = await fetch(`${address}${url}`, { headers });
    const body = await res.text();
    if (res.status !== 200) throw new Error(`${url}: ${res.status} ${body.slice(0, 300)}`);
    return { ms: performance.now() - s, body };
  };
  const measure = async (url: string) => {
    for (let i = 0; i < 5; i++) await time(url);
    const ms: number[] = [];
    for (let i = 0; i < REQUESTS; i++) ms.push((await time(url)).ms);
    return { p50: round(pct(ms, 50)), p95: round(pct(ms, 95)) };
  };
  const overview = await measure('/v1/processes');
  // the same read in-process, without HTTP: what the database spends
  const dbMs: number[] = [];
  for (let i = 0; i < REQUESTS; i++) {
    const s = performance.now();
    await listProcessSummaries(store.db, tenant.id, 'Europe/Copenhagen', new Date());
    dbMs.push(performance.now() - s);
  }
  const sample = JSON.parse((await time('/v1/processes')).body).items.find((p: { key: string }) => p.key === 'invoices');
  const list = await measure(`/v1/processes/${procs[0].id}/tasks?limit=50`);

  // the former per-request COUNT(*) (src/processes/summary.ts before the counters), for comparison
  const former: number[] = [];
  for (let i = 0; i < 3; i++) {
    const s = performance.now();
    await sql`SELECT process_id, count(*) FILTER (WHERE queue = 'Ready' AND activation_date <= ${now}) AS ready,
        count(*) FILTER (WHERE queue = 'Ready' AND activation_date > ${now}) AS not_active_yet,
        count(*) FILTER (WHERE queue = 'NeedsData') AS needs_data, count(*) FILTER (WHERE queue = 'NeedsApproval') AS needs_approval,
        count(*) FILTER (WHERE queue = 'Manual' AND NOT error) AS manual, count(*) FILTER (WHERE queue = 'Manual' AND error) AS error,
        count(*) FILTER (WHERE queue = 'Solved' AND updated_at >= ${new Date(now.getTime() - 86_400_000)}) AS solved,
        count(*) FILTER (WHERE queue <> 'Solved' AND locked_until IS NOT NULL) AS locked,
        count(*) FILTER (WHERE queue <> 'Solved' AND urgent) AS urgent, count(*) FILTER (WHERE queue <> 'Solved' AND deadline < ${now}) AS overdue
      FROM tasks WHERE tenant_id = ${tenant.id} AND deleted_at IS NULL GROUP BY process_id`.execute(store.db);
    former.push(performance.now() - s);
  }

  // a 100k-row CSV through the import route: dry run, then commit (a job, followed to its end)
  const csv = `ref,amount\n${Array.from({ length: IMPORT_ROWS }, (_, i) => `IMP-${i},${i % 977}`).join('\n')}\n`;
  const upload = async (dryRun: boolean) => {
    const s = performance.now();
    const res = await fetch(`${address}/v1/processes/${procs[3].id}/tasks/import?dryRun=${dryRun}`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'text/csv' },
      body: csv,
    });
    const body = await res.text();
    // a commit larger than one chunk is a job (202): its time is until the job has ended
    if (res.status === 202) {
      const { jobId } = JSON.parse(body) as { jobId: string };
      await app.services.bulkJobs.wait(tenant.id, jobId);
    } else if (res.status !== 200) throw new Error(`import: ${res.status} ${body.slice(0, 300)}`);
    return round((performance.now() - s) / 1000);
  };
  log('importing');
  const importDrySeconds = await upload(true);
  const importCommitSeconds = await upload(false);
  const afterImport = await measure('/v1/processes');
  await app.close();

  console.log(
    JSON.stringify({
      store: LITE ? 'pglite' : 'postgres',
      tasks: TASKS,
      requests: REQUESTS,
      fillSeconds: round(fillSeconds),
      overviewMs: overview,
      overviewInProcessMs: { p50: round(pct(dbMs, 50)), p95: round(pct(dbMs, 95)) },
      overviewAfterImportMs: afterImport,
      firstListPageMs: list,
      formerCountMs: former.map(round),
      invoicesCounts: sample?.counts,
      importRows: IMPORT_ROWS,
      importDrySeconds,
      importCommitSeconds,
    }),
  );
} finally {
  await store.close();
  if (admin) {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
}
