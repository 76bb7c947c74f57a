/** End to end over HTTP: the allocator flow and the worker flow of the official templates. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { Mate } from './helpers/mate.js';
import { DEMO_FIELDS } from '../src/setup/demo.js';

let t: TestApp;
let tenant: SeededTenant;
let mate: Mate;

before(async () => {
  t = await testApp();
  tenant = await seedTenant(t.store, 'flow', {
    processes: [
      { processKey: 'Allocator', tasksEnabled: false },
      { processKey: 'Invoices', fields: DEMO_FIELDS },
    ],
  });
  mate = await Mate.signIn(t.app, tenant);
});
after(() => t.close());

test('allocator: a Mate in a trigger process creates tasks in another process', async () => {
  const ok = await mate.get('/api/OkToRun/Allocator');
  assert.equal(ok.status, 200);
  assert.equal(ok.body.okToRun, true, 'a process without tasks is ok to run while its gate is open');
  assert.equal(ok.body.tasksAvailable, false);
  const run = await mate.get('/api/StartOrGetRun/Allocator');
  assert.equal(run.body.processKey, 'Allocator');
  assert.ok(run.body.runId > 0);
  const created = await mate.post(
    '/api/CreateTasks/Invoices',
    Array.from({ length: 6 }, (_, i) => ({ coreSystemKey: `INV-${i}`, numberField: i * 10, dropdownField: 'option 2' })),
  );
  assert.equal(created.status, 200);
  assert.equal(created.body.succeeded, true);
  assert.equal(created.body.taskIds.length, 6);
  assert.deepEqual(
    [...created.body.taskIds].sort((a: number, b: number) => a - b),
    created.body.taskIds,
    'ids follow input order',
  );
  const finish = await mate.post('/api/FinishRun', { runId: run.body.runId, overwriteEntries: 6, overwriteSecondsSaved: null });
  assert.equal(finish.body.succeeded, true, JSON.stringify(finish.body));
  const again = await mate.post('/api/FinishRun', { runId: run.body.runId });
  assert.equal(again.body.code, 'run_finished');
  const { rows } = await sql<{
    outcome: string;
    entries: number;
    seconds_saved: number;
  }>`SELECT outcome, entries, seconds_saved FROM kpi_events WHERE run_id = ${run.body.runId}`.execute(t.store.db);
  assert.deepEqual(
    rows.map((r) => [r.outcome, r.entries]),
    [['Run', 6]],
  );
});

test('worker: drain with TakeNext until -1, solving some and sending others to Manual', async () => {
  const ok = await mate.get('/api/OkToRun/Invoices');
  assert.equal(ok.body.okToRun, true);
  const seen: number[] = [];
  let runId = -1;
  for (;;) {
    const task = await mate.takeNext('Invoices');
    if (task.taskId < 0) {
      assert.equal(task.code, 'queue_empty');
      assert.equal(task.runId, -1);
      break;
    }
    assert.equal(task.processKey, 'Invoices');
    assert.equal(task.dropdownField, 'Option 2', 'dropdown values come back in the defined spelling');
    assert.equal(typeof task.numberField, 'number');
    if (runId < 0) runId = task.runId;
    assert.equal(task.runId, runId, 'every task of the drain is taken in one run');
    seen.push(task.taskId);
    const action = task.numberField % 20 === 0 ? 'Solved' : 'Manual';
    const r = await mate.post(`/api/${action}`, { taskId: task.taskId, reason: `done by ${action}`, comment: 'checked' });
    assert.equal(r.body.succeeded, true, JSON.stringify(r.body));
    assert.equal(r.body.queue, action);
  }
  assert.equal(seen.length, 6);
  assert.equal(new Set(seen).size, 6);
  const finish = await mate.post('/api/FinishRun', { runId });
  assert.equal(finish.body.code, 'run_finished', 'the empty TakeNext closed the run');
  const { rows } = await sql<{
    queue: string;
    n: number;
  }>`SELECT queue, count(*)::int AS n FROM tasks WHERE tenant_id = ${tenant.tenantId} GROUP BY queue ORDER BY queue`.execute(t.store.db);
  assert.deepEqual(rows, [
    { queue: 'Manual', n: 3 },
    { queue: 'Solved', n: 3 },
  ]);
  const run = await sql<{
    solved_count: number;
    manual_count: number;
    finish_reason: string;
  }>`SELECT o.solved_count, o.manual_count, r.finish_reason FROM runs r JOIN run_outcomes o ON o.tenant_id = r.tenant_id AND o.run_id = r.id
    WHERE r.id = ${runId}`.execute(t.store.db);
  assert.deepEqual(run.rows[0], { solved_count: 3, manual_count: 3, finish_reason: 'emptyQueue' });
  const comments = await sql<{ n: number }>`SELECT count(*)::int AS n FROM task_comments WHERE tenant_id = ${tenant.tenantId}`.execute(
    t.store.db,
  );
  assert.equal(comments.rows[0].n, 6);
});
