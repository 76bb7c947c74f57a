/**
 * A worker that dies mid-task (reliability plan #6): it took 50 tasks and solved half when it
 * stopped answering. After its leases end and the sweeper runs, a surviving worker finishes the
 * rest: every task is solved exactly once, none is lost, the recovered ones carry a retry.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { testApp, updateSettings, type TestApp } from './helpers/app.js';
import { seedTenant } from './helpers/seed.js';
import { Mate } from './helpers/mate.js';
import { ManualClock } from '../src/lib/clock.js';
import { createMate } from '../src/accounts/service.js';
import { loadProcessByKey } from '../src/processes/store.js';
import { sweepOnce } from '../src/maintenance/sweep.js';

let t: TestApp | null = null;
after(() => t?.close());

test("a dead worker's tasks come back after the lease; each task is solved exactly once", async () => {
  const clock = new ManualClock('2026-03-02T09:00:00.000Z');
  t = await testApp({ clock });
  const tenant = await seedTenant(t.store, 'crash-w', { processes: [{ processKey: 'Work' }] });
  const proc = (await loadProcessByKey(t.store.db, tenant.tenantId, 'Work'))!;
  await updateSettings(t, tenant.tenantId, proc.id, { lock_timeout_seconds: 60 });
  await createMate(t.store.db, tenant.tenantId, { username: 'survivor', password: 'survivor-password' });
  const doomed = await Mate.signIn(t.app, tenant);
  const survivor = await Mate.signIn(t.app, tenant, 'survivor', 'survivor-password');
  const ids: number[] = (
    await doomed.post(
      '/api/CreateTasks/Work',
      Array.from({ length: 80 }, (_, i) => ({ n: i })),
    )
  ).body.taskIds;

  const held = (await doomed.get('/api/TakeMany/Work?count=50')).body as { taskId: number }[];
  assert.equal(held.length, 50);
  for (const task of held.slice(0, 25)) assert.equal((await doomed.post('/api/Solved', { taskId: task.taskId })).body.succeeded, true);
  // the doomed worker stops here, holding 25 tasks

  const drain = async () => {
    for (;;) {
      const task = await survivor.takeNext('Work');
      if (task.taskId < 0) return;
      assert.equal((await survivor.post('/api/Solved', { taskId: task.taskId })).body.succeeded, true);
    }
  };
  await drain();
  assert.equal(
    (
      await sql<{ n: number }>`SELECT count(*)::int AS n FROM tasks WHERE tenant_id = ${tenant.tenantId} AND queue = 'Solved'`.execute(
        t.store.db,
      )
    ).rows[0].n,
    55,
    'the held tasks wait for their lease',
  );

  clock.advance(61);
  assert.equal((await sweepOnce(t.app.services, clock.now())).recovered, 25);
  await drain();

  const { rows } = await sql<{ id: number; queue: string; retry_count: number; solved: number }>`SELECT t.id, t.queue, t.retry_count,
      (SELECT count(*)::int FROM task_history h WHERE h.tenant_id = t.tenant_id AND h.task_id = t.id AND h.action = 'Solved') AS solved
    FROM tasks t WHERE t.tenant_id = ${tenant.tenantId} ORDER BY t.id`.execute(t.store.db);
  assert.deepEqual(
    rows.map((r) => r.id),
    ids,
    'none lost',
  );
  assert.ok(
    rows.every((r) => r.queue === 'Solved' && r.solved === 1),
    'each solved exactly once',
  );
  const recovered = new Set(held.slice(25).map((x) => x.taskId));
  assert.deepEqual(
    rows
      .filter((r) => r.retry_count === 1)
      .map((r) => r.id)
      .sort(),
    [...recovered].sort(),
    'the recovered tasks carry a retry',
  );
  const late = await doomed.post('/api/Solved', { taskId: held[30].taskId });
  assert.equal(late.body.code, 'task_solved', 'the dead worker coming back cannot hand back again');
});
