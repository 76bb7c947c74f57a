/**
 * Every statement Queuemate sends to a tenant table names its tenant (docs/deployment.md, "Beyond
 * one PostgreSQL: Citus"): a representative set of this suite's files (the Mate life cycle, the
 * people's API and its bulk jobs, events and webhooks, sign-in and tokens, tenant isolation, the
 * background jobs) runs again with the statement log of test/helpers/statement-log.ts, which records
 * the text of every statement sent through node-postgres on the store of the run (PGlite, or
 * PostgreSQL with DATABASE_URL); each distinct statement Queuemate's code sent is then checked by
 * test/helpers/tenant-conditions.ts. The exceptions below are the statements that walk every tenant
 * by design, each with why. QUEUEMATE_STATEMENT_FILES (test files, space-separated) checks other
 * files instead, the whole suite included.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { testStore, STORE_KIND, type TestStore } from './helpers/db.js';
import { missingTenantCondition, normalizeStatement } from './helpers/tenant-conditions.js';

const FILES = (
  process.env.QUEUEMATE_STATEMENT_FILES ??
  [
    'test/mate-flow.test.ts',
    'test/lifecycle.test.ts',
    'test/people-tasks-api.test.ts',
    'test/people-bulk-api.test.ts',
    'test/people-session.test.ts',
    'test/events-outbox.test.ts',
    'test/events-webhooks.test.ts',
    'test/security-tenants.test.ts',
    'test/queue-counters.test.ts',
  ].join(' ')
)
  .split(/\s+/)
  .filter(Boolean);

/**
 * Statements that touch tenant tables without naming a tenant, on purpose: what each is (a pattern
 * of its normalized text) and why. On Citus these run on every node (docs/deployment.md).
 */
export const EXCEPTIONS: { what: RegExp; why: string }[] = [
  {
    what: /^select t\.id as token_id, .* where t\.legacy = \$1 and t\.token_hash = \$2$/,
    why: 'a token issued by Queuemate 0.1.0 names no tenant: found by its hash among the legacy rows until the last expires (src/accounts/sessions.ts)',
  },
  {
    what: /^with w as \(select qm_events_horizon\(\) as upto\)/,
    why: 'the events watermark (src/events/watermark.ts): counts, for every tenant, the events that became visible below the horizon',
  },
  {
    what: /^select tenant_id, id from tasks where locked_until is not null and locked_until <= \$1 /,
    why: 'the lock sweeper (src/maintenance/lock-sweep.ts): expired leases of every tenant; it hands them back per tenant',
  },
  {
    what: /^update runs set finished_at = \$1, finish_reason = '' where \(tenant_id, id\) in \( select r\.tenant_id, r\.id from runs r join processes p on p\.tenant_id = r\.tenant_id and p\.id = r\.process_id where r\.finished_at is null /,
    why: 'the idle-run job (src/maintenance/idle-runs.ts): closes the runs of every tenant idle past their timeout',
  },
  {
    what: /^delete from idempotency_keys where \(tenant_id, mate_id, key\) in \( select tenant_id, mate_id, key from idempotency_keys where expires_at <= \$1 for update skip locked\)$/,
    why: 'the Idempotency-Key expiry (src/maintenance/idempotency-expiry.ts): records of every tenant older than 24 h',
  },
  {
    what: /^delete from bulk_jobs where \(tenant_id, id\) in \( select tenant_id, id from bulk_jobs where state <> '' and finished_at < \$1 for update skip locked\)$/,
    why: 'the bulk-job purge (src/maintenance/bulk-jobs.ts): finished jobs of every tenant past their keeping time',
  },
  {
    what: /^update bulk_jobs set lease_owner = \$1, lease_until = \$2 where \(tenant_id, id\) in \( select tenant_id, id from bulk_jobs where state = ''/,
    why: 'the bulk-job claim (src/bulk/store.ts): resumes the running jobs of every tenant whose lease ran out',
  },
  {
    what: /^with cut as \( select qm_count_bucket\(/,
    why: 'the queue-counter fold (src/maintenance/queue-counters.ts): folds the deltas of every tenant into the counts',
  },
  {
    what: /^delete from queue_counts where n = 0$/,
    why: 'the queue-counter fold: drops the zero counts of every tenant',
  },
  {
    what: /^delete from webhook_attempts where \(tenant_id, delivery_id, id\) in \( select tenant_id, delivery_id, id from webhook_attempts where at < \$1 /,
    why: 'the event retention job (src/maintenance/outbox-retention.ts): delivery attempts of every tenant past the retention',
  },
  {
    what: /^delete from webhook_deliveries where \(tenant_id, id\) in \( select tenant_id, id from webhook_deliveries where status <> '' and created_at < \$1 /,
    why: 'the event retention job: finished deliveries of every tenant past the retention',
  },
  {
    what: /^with gone as \( delete from outbox_events where /,
    why: 'the event retention job: events of every tenant past the retention that no endpoint still needs',
  },
  {
    what: /^select distinct tenant_id from webhook_subscriptions where enabled$/,
    why: 'the webhook dispatcher (src/events/webhook-dispatcher.ts): which tenants have an enabled endpoint, to skip the others',
  },
  {
    what: /^update webhook_subscriptions s set claimed_until = \$1 from \( select w\.tenant_id, w\.id from webhook_subscriptions w where w\.enabled /,
    why: 'the webhook dispatcher: claims endpoints of any tenant with work; it then reads each endpoint’s events by its tenant',
  },
  {
    what: /^select p\.tenant_id, p\.id as process_id, p\.process_key, c\.kind, c\.n from /,
    why: '/metrics (src/metrics/store.ts): the queue gauges of every tenant, for the operator',
  },
  {
    what: /^with held as \( select o\.created_at, o\.n from tenants t cross join lateral /,
    why: '/metrics and /readyz: events held back and deliveries pending over every tenant, for the operator',
  },
];

/** The run's environment: the log's file, and not this process's test-runner context (the files would report to it instead of running) */
function runEnv(log: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, QUEUEMATE_STATEMENT_LOG: log };
  delete env.NODE_TEST_CONTEXT;
  return env;
}

let store: TestStore;
let tenantTables: Set<string>;
let statements: { sql: string; app: boolean }[] = [];
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qm-statements-'));

before(async () => {
  store = await testStore({ poolSize: 1 });
  const { rows } = await store.pool.query<{ t: string }>(
    `SELECT table_name AS t FROM information_schema.columns WHERE table_schema = 'public' AND column_name = 'tenant_id'`,
  );
  tenantTables = new Set(rows.map((r) => r.t));
  await store.close();
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

test(
  `${STORE_KIND}: the statement log records the statements of a run, telling Queuemate's own from a test's`,
  { timeout: 30 * 60_000 },
  () => {
    const log = path.join(dir, 'statements.jsonl');
    const run = spawnSync(
      process.execPath,
      // two files at a time, as the suite's own pass runs them (each has its own database); each
      // process appends its statements to the log in one write when it exits
      ['--import', 'tsx', '--import', './test/helpers/statement-log.ts', '--test', '--test-concurrency=2', ...FILES],
      { env: runEnv(log), encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
    );
    assert.equal(run.status, 0, `the files failed under the statement log:\n${run.stdout.slice(-4000)}\n${run.stderr.slice(-2000)}`);
    const seen = new Map<string, boolean>();
    for (const line of fs.readFileSync(log, 'utf8').split('\n').filter(Boolean)) {
      const s = JSON.parse(line) as { sql: string; app: boolean };
      seen.set(s.sql, (seen.get(s.sql) ?? false) || s.app);
    }
    statements = [...seen].map(([sql, app]) => ({ sql, app }));
    const app = statements.filter((s) => s.app);
    // the hot paths and the test's own looks are there, each where it belongs
    assert.ok(app.length > 100, `only ${app.length} statements of Queuemate's were recorded`);
    assert.ok(app.some((s) => /INSERT INTO tasks/.test(s.sql)));
    assert.ok(app.some((s) => /FOR UPDATE SKIP LOCKED/.test(s.sql)));
    assert.ok(app.some((s) => /user_tokens/.test(s.sql)));
    assert.ok(statements.some((s) => !s.app));
  },
);

test(`${STORE_KIND}: every statement of Queuemate's on a tenant table names its tenant, but the listed exceptions`, () => {
  assert.ok(statements.length > 0, 'the run of the previous test recorded nothing');
  const used = new Set<RegExp>();
  const problems: string[] = [];
  for (const s of statements) {
    if (!s.app) continue;
    const why = missingTenantCondition(s.sql, tenantTables);
    if (why === null) continue;
    const text = normalizeStatement(s.sql);
    const exception = EXCEPTIONS.find((e) => e.what.test(text));
    if (exception) used.add(exception.what);
    else problems.push(`${why}:\n    ${text.slice(0, 400)}`);
  }
  assert.deepEqual(problems, [], `statements without a tenant condition:\n  ${problems.join('\n  ')}`);
  // an exception no statement needs any more is stale
  if (!process.env.QUEUEMATE_STATEMENT_FILES)
    assert.deepEqual(
      EXCEPTIONS.filter((e) => !used.has(e.what)).map((e) => e.what.source),
      [],
    );
});

test('the check tells a tenant condition from none, and a join on tenant_id from a condition', () => {
  const tables = new Set(['tasks', 'task_history', 'user_tokens']);
  assert.equal(missingTenantCondition('SELECT * FROM tasks WHERE tenant_id = $1 AND id = $2', tables), null);
  assert.equal(missingTenantCondition('select * from "tasks" as "t" where "t"."tenant_id" = $1', tables), null);
  assert.equal(missingTenantCondition('DELETE FROM tasks WHERE tenant_id = ANY($1) AND id = 3', tables), null);
  assert.equal(missingTenantCondition('insert into "user_tokens" ("tenant_id", "user_id") values ($1, $2)', tables), null);
  assert.equal(missingTenantCondition('SELECT 1 FROM tenants WHERE id = $1', tables), null);
  assert.match(missingTenantCondition('SELECT * FROM tasks WHERE id = $1', tables)!, /tasks/);
  assert.match(missingTenantCondition('select * from "user_tokens" where "token_hash" = $1', tables)!, /user_tokens/);
  assert.match(
    missingTenantCondition('SELECT * FROM tasks t JOIN task_history h ON h.tenant_id = t.tenant_id AND h.task_id = t.id', tables)!,
    /tasks, task_history/,
  );
  // nor a tenant the statement computes
  assert.match(missingTenantCondition('SELECT * FROM tasks WHERE tenant_id = ANY((SELECT tenants FROM keys)::bigint[])', tables)!, /tasks/);
  assert.equal(missingTenantCondition('SELECT * FROM tasks WHERE tenant_id = ANY($3::bigint[])', tables), null);
  // a condition inside a comment or a string is not one
  assert.match(missingTenantCondition("SELECT * FROM tasks /* tenant_id = 1 */ WHERE reason = 'tenant_id = 2'", tables)!, /tasks/);
  // an INSERT … SELECT must name the tenant in its SELECT
  assert.match(missingTenantCondition('INSERT INTO task_history (tenant_id, id) SELECT tenant_id, id FROM tasks', tables)!, /task_history/);
});
