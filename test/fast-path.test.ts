/**
 * The hand-back fast path keeps the guarantees: the combined call ("hand back and take the next",
 * a Queuemate extension), optimistic writes that skip a changed row, a held task row that never
 * stalls the tenant's other hand-backs, and a ledger check after concurrent takes, hand-backs and
 * combined calls on both stores.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { sql } from 'kysely';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { Mate } from './helpers/mate.js';
import { DATABASE_URL } from './helpers/db.js';
import { applyChanges } from '../src/tasks/funnel.js';
import { selectTasks } from '../src/tasks/store.js';
import type { Caller } from '../src/lib/caller.js';
import { createMate } from '../src/accounts/service.js';
import { createProcess } from '../src/processes/service.js';

let t: TestApp;
let tenant: SeededTenant;
let mate: Mate;

before(async () => {
  t = await testApp();
  tenant = await seedTenant(t.store, 'fast', {
    processes: [{ processKey: 'Work', fields: [{ name: 'n', type: 'integer' }] }, { processKey: 'Other' }],
  });
  mate = await Mate.signIn(t.app, tenant);
});
after(async () => {
  await t?.close();
});

async function history(taskId: number): Promise<string[]> {
  const { rows } = await sql<{ action: string }>`SELECT action FROM task_history
    WHERE tenant_id = ${tenant.tenantId} AND task_id = ${taskId} ORDER BY id`.execute(t.store.db);
  return rows.map((r) => r.action);
}

async function taskRow(taskId: number) {
  const { rows } = await sql<{ queue: string; locked_by_mate_id: number | null }>`SELECT queue, locked_by_mate_id FROM tasks
    WHERE tenant_id = ${tenant.tenantId} AND id = ${taskId}`.execute(t.store.db);
  return rows[0];
}

test('Solved with takeNext hands back, then answers the next task locked as TakeNext locks it', async () => {
  const a = await mate.create('Work', { n: 1 });
  const b = await mate.create('Work', { n: 2 });
  const first = await mate.takeNext('Work');
  assert.equal(first.taskId, a);
  const r = await mate.post('/api/Solved', { taskId: a, takeNext: 'work' });
  assert.equal(r.status, 200);
  assert.equal(r.body.succeeded, true);
  assert.equal(r.body.queue, 'Solved');
  assert.equal(r.body.next.taskId, b);
  assert.equal(r.body.next.n, 2);
  assert.equal(r.body.next.processKey, 'Work');
  assert.equal((await taskRow(a)).queue, 'Solved');
  assert.equal((await taskRow(b)).locked_by_mate_id, tenant.mateId);
  assert.deepEqual(await history(b), ['Created', 'Taken']);

  // the queue is now empty: the hand-back still commits, next is the dummy task
  const last = await mate.post('/api/Manual', { taskId: b, reason: 'needs a person', takeNext: 'Work' });
  assert.equal(last.body.succeeded, true);
  assert.equal(last.body.queue, 'Manual');
  assert.equal(last.body.next.taskId, -1);
  assert.equal(last.body.next.code, 'queue_empty');
  assert.equal((await taskRow(b)).queue, 'Manual');
});

test('without takeNext the answer is the official one (no next key)', async () => {
  const a = await mate.create('Work', { n: 3 });
  assert.equal((await mate.takeNext('Work')).taskId, a);
  const r = await mate.post('/api/Solved', { taskId: a });
  assert.equal(r.body.succeeded, true);
  assert.equal('next' in r.body, false);
});

test('a refused hand-back takes nothing; an unknown process or a non-string takeNext hands nothing back', async () => {
  const a = await mate.create('Work', { n: 4 });
  const b = await mate.create('Work', { n: 5 });
  assert.equal((await mate.takeNext('Work')).taskId, a);

  const wrongProcess = await mate.post('/api/Solved', { taskId: a, takeNext: 'NoSuchProcess' });
  assert.equal(wrongProcess.status, 404);
  assert.equal(wrongProcess.body.code, 'process_not_found');
  const badValue = await mate.post('/api/Solved', { taskId: a, takeNext: 7 });
  assert.equal(badValue.status, 400);
  assert.equal(badValue.body.code, 'invalid_field');
  assert.equal((await taskRow(a)).queue, 'Ready');
  assert.equal((await taskRow(a)).locked_by_mate_id, tenant.mateId);

  // b is not held by this Mate: refused, and nothing is taken
  const refused = await mate.post('/api/Solved', { taskId: b, takeNext: 'Work' });
  assert.equal(refused.body.succeeded, false);
  assert.equal(refused.body.code, 'task_not_locked_by_you');
  assert.equal('next' in refused.body, false);
  assert.equal((await taskRow(b)).locked_by_mate_id, null);

  await mate.post('/api/Solved', { taskId: a });
  assert.equal((await mate.takeNext('Work')).taskId, b);
  await mate.post('/api/Solved', { taskId: b });
});

test('an optimistic change whose row changed since it was read is skipped with everything derived from it', async () => {
  const a = await mate.create('Work', { n: 6 });
  assert.equal((await mate.takeNext('Work')).taskId, a);
  const read = (await selectTasks(t.store.db, tenant.tenantId, [a], 'version')).get(a)!;
  assert.ok(read.version);
  // the row changes after it was read
  const extended = await mate.post('/api/ExtendLock', { taskId: a, seconds: 600 });
  assert.equal(extended.body.succeeded, true);
  const caller: Caller = {
    tenantId: tenant.tenantId,
    timeZone: 'UTC',
    actor: { type: 'mate', id: tenant.mateId, name: tenant.mateUsername },
    requestId: null,
    now: new Date(),
  };
  const { version, ...before } = read;
  const r = await t.app.services.units.autocommit((tx) =>
    applyChanges(tx, [
      {
        caller,
        before,
        after: { ...before, queue: 'Solved', locked_by_mate_id: null, locked_until: null, run_id: null },
        action: 'Solved',
        kpi: { outcome: 'Solved', entries: 1, secondsSaved: 0 },
        expectedVersion: version,
      },
    ]),
  );
  assert.deepEqual(r.skipped, [a]);
  assert.equal((await taskRow(a)).queue, 'Ready');
  assert.equal((await history(a)).includes('Solved'), false);
  const { rows } = await sql<{
    n: number;
  }>`SELECT count(*)::int AS n FROM kpi_events WHERE tenant_id = ${tenant.tenantId} AND task_id = ${a}`.execute(t.store.db);
  assert.equal(rows[0].n, 0);
  // through the API the same hand-back goes ahead (it reads the row again)
  const solved = await mate.post('/api/Solved', { taskId: a });
  assert.equal(solved.body.succeeded, true);
  assert.deepEqual((await history(a)).slice(-1), ['Solved']);
});

test(
  'a task row held by another connection: a different task of the tenant is handed back at once, the held one is answered task_busy',
  { skip: DATABASE_URL ? false : 'needs DATABASE_URL (PostgreSQL: a second connection)' },
  async () => {
    const held = await mate.create('Work', { n: 7 });
    const free = await mate.create('Work', { n: 8 });
    assert.equal((await mate.takeNext('Work')).taskId, held);
    assert.equal((await mate.takeNext('Work')).taskId, free);
    const other = new pg.Client({ connectionString: t.store.url! });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query('SELECT id FROM tasks WHERE tenant_id = $1 AND id = $2 FOR UPDATE', [tenant.tenantId, held]);
      // both at once, in one batch of the tenant's hand-backs
      const [stuck, ok] = await Promise.all([mate.post('/api/Solved', { taskId: held }), mate.post('/api/Solved', { taskId: free })]);
      assert.equal(ok.status, 200);
      assert.equal(ok.body.succeeded, true);
      assert.equal(stuck.status, 409);
      assert.equal(stuck.body.code, 'task_busy');
      assert.equal(stuck.body.succeeded, false);
      assert.equal(stuck.headers['retry-after'], '1');
      assert.equal((await taskRow(free)).queue, 'Solved');
      // nothing of the stuck one was written
      assert.deepEqual(await history(held), ['Created', 'Taken']);
    } finally {
      await other.query('ROLLBACK');
      await other.end();
    }
    const again = await mate.post('/api/Solved', { taskId: held });
    assert.equal(again.body.succeeded, true);
    assert.deepEqual((await history(held)).slice(-1), ['Solved']);
  },
);

test('ledger: concurrent takes, hand-backs and combined calls lose nothing and give no task twice', async () => {
  const TASKS = 240;
  const WORKERS = 12;
  const ids: number[] = [];
  for (let i = 0; i < TASKS; i += 120) {
    const r = await mate.post(
      '/api/CreateTasks/Other',
      Array.from({ length: 120 }, () => ({})),
    );
    assert.equal(r.body.succeeded, true);
    ids.push(...r.body.taskIds);
  }
  const taken: number[] = [];
  const outcomes = new Map<number, string>();
  const actions = ['Solved', 'Manual', 'Error', 'Retry'] as const;
  await Promise.all(
    Array.from({ length: WORKERS }, async (_, w) => {
      const combined = w % 2 === 0;
      let task = (await mate.get('/api/TakeNext/Other')).body;
      while (task.taskId > 0) {
        taken.push(task.taskId);
        // Retry only on a task's first pass, so every task ends in Solved or Manual
        const action = actions[(task.taskId + w) % 4] === 'Retry' && task.retryCount > 0 ? 'Solved' : actions[(task.taskId + w) % 4];
        const r = await mate.post(`/api/${action}`, combined ? { taskId: task.taskId, takeNext: 'Other' } : { taskId: task.taskId });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(r.body.succeeded, true, JSON.stringify(r.body));
        outcomes.set(task.taskId, r.body.queue);
        task = combined ? r.body.next : (await mate.get('/api/TakeNext/Other')).body;
      }
      assert.equal(task.code, 'queue_empty');
    }),
  );
  // every task ended up handed back; a task is taken again only after a Retry put it back
  const { rows } = await sql<{
    id: number;
    queue: string;
    locked: boolean;
    taken: number;
    handed: number;
    kpis: number;
    history: number;
    events: number;
    retry_count: number;
  }>`
    SELECT t.id, t.queue, t.locked_until IS NOT NULL AS locked, t.retry_count,
      (SELECT count(*)::int FROM task_history h WHERE h.tenant_id = t.tenant_id AND h.task_id = t.id AND h.action = 'Taken') AS taken,
      (SELECT count(*)::int FROM task_history h WHERE h.tenant_id = t.tenant_id AND h.task_id = t.id AND h.action IN ('Solved', 'Manual', 'Error', 'Retry')) AS handed,
      (SELECT count(*)::int FROM kpi_events k WHERE k.tenant_id = t.tenant_id AND k.task_id = t.id) AS kpis,
      (SELECT count(*)::int FROM task_history h WHERE h.tenant_id = t.tenant_id AND h.task_id = t.id) AS history,
      (SELECT count(*)::int FROM task_history h JOIN outbox_events o ON o.tenant_id = h.tenant_id AND h.id = ANY(o.history_ids)
        WHERE h.tenant_id = t.tenant_id AND h.task_id = t.id) AS events
    FROM tasks t WHERE t.tenant_id = ${tenant.tenantId} AND t.id = ANY(${ids}::bigint[])`.execute(t.store.db);
  assert.equal(rows.length, TASKS);
  for (const r of rows) {
    assert.ok(['Solved', 'Manual'].includes(r.queue), `task ${r.id} ended in ${r.queue}`);
    assert.equal(r.locked, false);
    assert.equal(r.taken, r.retry_count + 1, `task ${r.id}: taken ${r.taken} times, retried ${r.retry_count}`);
    assert.equal(r.handed, r.taken, `task ${r.id}: one hand-back per take`);
    assert.equal(r.kpis, r.handed, `task ${r.id}: one KPI event per hand-back`);
    assert.equal(r.events, r.history, `task ${r.id}: one event per history row, written with its change`);
    assert.equal(taken.filter((x) => x === r.id).length, r.taken);
  }
  // the runs counted every hand-back
  const { rows: runs } = await sql<{
    n: number;
  }>`SELECT coalesce(sum(o.solved_count + o.manual_count + o.error_count + o.retry_count), 0)::int AS n
    FROM runs r JOIN processes p ON p.tenant_id = r.tenant_id AND p.id = r.process_id
    JOIN run_outcomes o ON o.tenant_id = r.tenant_id AND o.run_id = r.id
    WHERE r.tenant_id = ${tenant.tenantId} AND p.process_key = 'Other'`.execute(t.store.db);
  assert.equal(runs[0].n, taken.length);
});

test('the rows the funnel appends point at tasks and processes that exist (they have no foreign keys: migration 0014)', async () => {
  // the key checks are gone on purpose: the funnel alone guarantees what they checked
  const { rows: keys } = await sql<{ name: string }>`SELECT conrelid::regclass::text || ' -> ' || confrelid::regclass::text AS name
    FROM pg_constraint WHERE contype = 'f'
      AND conrelid::regclass::text IN ('task_history', 'task_comments', 'kpi_events', 'queue_count_deltas', 'outbox_events')`.execute(
    t.store.db,
  );
  assert.deepEqual(keys, []);
  // more of what the funnel writes: comments, Retry, Manual with the Error flag, a person's move
  const ids: number[] = [];
  for (let i = 0; i < 4; i++) ids.push(await mate.create('Work', { n: 100 + i }));
  for (const [i, action] of (['Solved', 'Retry', 'Error', 'Manual'] as const).entries()) {
    const task = await mate.takeNext('Work');
    assert.ok(task.taskId > 0);
    const r = await mate.post(`/api/${action}`, { taskId: task.taskId, comment: `hand-back ${i}`, reason: 'checked' });
    assert.equal(r.body.succeeded, true, JSON.stringify(r.body));
  }
  const drained = await mate.post('/api/Return', [{ taskId: (await mate.takeNext('Work')).taskId, action: 'Solved', comment: 'last' }]);
  assert.equal(drained.status, 200, JSON.stringify(drained.body));
  const orphans = async () =>
    (
      await sql<{ what: string; n: number }>`
        SELECT 'history' AS what, count(*)::int AS n FROM task_history h WHERE h.tenant_id = ${tenant.tenantId}
          AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.tenant_id = h.tenant_id AND t.id = h.task_id AND t.process_id = h.process_id)
        UNION ALL SELECT 'comments', count(*)::int FROM task_comments c WHERE c.tenant_id = ${tenant.tenantId}
          AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.tenant_id = c.tenant_id AND t.id = c.task_id)
        UNION ALL SELECT 'kpi', count(*)::int FROM kpi_events k WHERE k.tenant_id = ${tenant.tenantId}
          AND NOT EXISTS (SELECT 1 FROM processes p WHERE p.tenant_id = k.tenant_id AND p.id = k.process_id)
        UNION ALL SELECT 'kpi task', count(*)::int FROM kpi_events k WHERE k.tenant_id = ${tenant.tenantId} AND k.task_id IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.tenant_id = k.tenant_id AND t.id = k.task_id AND t.process_id = k.process_id)
        UNION ALL SELECT 'deltas', count(*)::int FROM queue_count_deltas d WHERE d.tenant_id = ${tenant.tenantId}
          AND NOT EXISTS (SELECT 1 FROM processes p WHERE p.tenant_id = d.tenant_id AND p.id = d.process_id)
        UNION ALL SELECT 'events', count(*)::int FROM outbox_events o, unnest(o.history_ids) AS hid WHERE o.tenant_id = ${tenant.tenantId}
          AND NOT EXISTS (SELECT 1 FROM task_history h WHERE h.tenant_id = o.tenant_id AND h.id = hid)
        UNION ALL SELECT 'rows seen', count(*)::int FROM task_history WHERE tenant_id = ${tenant.tenantId}
        UNION ALL SELECT 'comments seen', count(*)::int FROM task_comments WHERE tenant_id = ${tenant.tenantId}`.execute(t.store.db)
    ).rows;
  const counts = Object.fromEntries((await orphans()).map((r) => [r.what, r.n]));
  assert.ok(counts['rows seen'] >= 15 && counts['comments seen'] >= 5, JSON.stringify(counts));
  assert.deepEqual(
    { ...counts, 'rows seen': 0, 'comments seen': 0 },
    { history: 0, comments: 0, kpi: 0, 'kpi task': 0, deltas: 0, events: 0, 'rows seen': 0, 'comments seen': 0 },
  );
});

test('combined calls of two Mates: each hand-back is counted once in its run, which lists both Mates', async () => {
  const { id: processId } = await createProcess(t.store.db, tenant.tenantId, { processKey: 'Pair' });
  await createMate(t.store.db, tenant.tenantId, { username: 'fast-second', password: tenant.matePassword });
  const second = await Mate.signIn(t.app, tenant, 'fast-second', tenant.matePassword);
  for (let i = 0; i < 12; i++) await mate.create('Pair', {});
  const [a, b] = await Promise.all([mate.takeNext('Pair'), second.takeNext('Pair')]);
  assert.ok(a.taskId > 0 && b.taskId > 0 && a.runId === b.runId);
  // the two Mates hand back with takeNext at once, each statement serving both
  const work = async (m: Mate, task: any, action: string) => {
    let n = 0;
    while (task.taskId > 0) {
      const r = await m.post(`/api/${action}`, { taskId: task.taskId, takeNext: 'Pair' });
      assert.equal(r.body.succeeded, true, JSON.stringify(r.body));
      n++;
      task = r.body.next;
    }
    assert.equal(task.code, 'queue_empty');
    return n;
  };
  const [solved, manual] = await Promise.all([work(mate, a, 'Solved'), work(second, b, 'Manual')]);
  assert.equal(solved + manual, 12);
  const { rows } = await sql<{ solved_count: number; manual_count: number; mate_ids: number[]; finished: boolean }>`
    SELECT o.solved_count, o.manual_count, r.mate_ids, r.finished_at IS NOT NULL AS finished
    FROM runs r JOIN run_outcomes o ON o.tenant_id = r.tenant_id AND o.run_id = r.id
    WHERE r.tenant_id = ${tenant.tenantId} AND r.process_id = ${processId}`.execute(t.store.db);
  assert.equal(rows.length, 1);
  assert.equal(rows[0].solved_count, solved);
  assert.equal(rows[0].manual_count, manual);
  assert.equal(rows[0].finished, true, 'the empty queue closed the run');
  assert.equal(rows[0].mate_ids.length, 2);
});

test('a process stopped by errors: the combined call hands back first, and its take sees the new error count', async () => {
  const { id: processId } = await createProcess(t.store.db, tenant.tenantId, { processKey: 'Stops' });
  await sql`UPDATE processes SET stop_on_errors = true, error_limit = 0 WHERE tenant_id = ${tenant.tenantId} AND id = ${processId}`.execute(
    t.store.db,
  );
  const first = await mate.create('Stops', {});
  await mate.create('Stops', {});
  assert.equal((await mate.takeNext('Stops')).taskId, first);
  const r = await mate.post('/api/Error', { taskId: first, reason: 'broken', takeNext: 'Stops' });
  assert.equal(r.body.succeeded, true, JSON.stringify(r.body));
  assert.equal(r.body.queue, 'Manual');
  assert.equal(r.body.next.taskId, -1);
  assert.equal(r.body.next.code, 'stopped_by_errors');
});

test('a Retry with takeNext on a queue of one task answers that task again (the take sees the retry)', async () => {
  await createProcess(t.store.db, tenant.tenantId, { processKey: 'Once' });
  const only = await mate.create('Once', {});
  assert.equal((await mate.takeNext('Once')).taskId, only);
  const r = await mate.post('/api/Retry', { taskId: only, takeNext: 'Once' });
  assert.equal(r.body.succeeded, true, JSON.stringify(r.body));
  assert.equal(r.body.next.taskId, only);
  assert.equal(r.body.next.retryCount, 1);
  const done = await mate.post('/api/Solved', { taskId: only, takeNext: 'Once' });
  assert.equal(done.body.next.code, 'queue_empty');
});
