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
export const EXCEPTIONS: { what: RegExp; why: string }[] = [];

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
      ['--import', 'tsx', '--import', './test/helpers/statement-log.ts', '--test', '--test-concurrency=1', ...FILES],
      { env: { ...process.env, QUEUEMATE_STATEMENT_LOG: log }, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
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
    assert.ok(app.length > 200, `only ${app.length} statements of Queuemate's were recorded`);
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
  // a condition inside a comment or a string is not one
  assert.match(missingTenantCondition("SELECT * FROM tasks /* tenant_id = 1 */ WHERE reason = 'tenant_id = 2'", tables)!, /tasks/);
  // an INSERT … SELECT must name the tenant in its SELECT
  assert.match(missingTenantCondition('INSERT INTO task_history (tenant_id, id) SELECT tenant_id, id FROM tasks', tables)!, /task_history/);
});
