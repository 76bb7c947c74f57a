/**
 * The embedded store's vacuum (src/maintenance/embedded-vacuum.ts): a pass over the hot tables
 * once enough task rows changed, none before; the store keeps serving while it runs.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant } from './helpers/seed.js';
import { Mate } from './helpers/mate.js';
import { EmbeddedVacuum, HOT_TABLES } from '../src/maintenance/embedded-vacuum.js';
import { JobRunner } from '../src/maintenance/runner.js';

let t: TestApp;
after(async () => {
  await t?.close();
});

async function vacuumed(): Promise<string[]> {
  const { rows } = await sql<{ relname: string }>`SELECT relname FROM pg_stat_user_tables
    WHERE last_vacuum IS NOT NULL AND last_analyze IS NOT NULL AND relname = ANY(${[...HOT_TABLES]}::text[]) ORDER BY relname`.execute(
    t.store.db,
  );
  return rows.map((r) => r.relname);
}

test('a pass over the hot tables once enough task rows changed, none before', async () => {
  t = await testApp();
  const tenant = await seedTenant(t.store, 'vac', { processes: [{ processKey: 'P' }] });
  const mate = await Mate.signIn(t.app, tenant);
  const vacuum = new EmbeddedVacuum(t.app.services.db, t.app.services.notifier, { minChanges: 30 });
  // the job on a runner of its own (the test app runs none)
  const runner = new JobRunner({ clock: t.app.services.clock, log: t.app.log }).add(vacuum);
  runner.start();
  try {
    const few = await mate.post(
      '/api/CreateTasks/P',
      Array.from({ length: 20 }, () => ({})),
    );
    assert.equal(few.body.succeeded, true);
    await runner.settled();
    assert.equal(vacuum.passes, 0);
    assert.deepEqual(await vacuumed(), []);

    // 20 + 10 changed rows reach the threshold; takes count as changes too
    const task = await mate.takeNext('P');
    const more = await mate.post(
      '/api/CreateTasks/P',
      Array.from({ length: 9 }, () => ({})),
    );
    assert.equal(more.body.succeeded, true);
    // served while the pass may run
    assert.equal((await mate.post('/api/Solved', { taskId: task.taskId })).body.succeeded, true);
    await runner.settled();
    assert.equal(vacuum.passes, 1);
    assert.deepEqual(await vacuumed(), [...HOT_TABLES].sort());
  } finally {
    await runner.stop();
  }
});
