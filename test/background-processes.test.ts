/**
 * The background jobs of several server processes at once (docs/operations.md, "Background
 * jobs"): each "process" here is a store of its own (its own connection pool, its own units of
 * work) on one database, and their sweeps and purges run at the same moment. Every expired lease
 * is recovered exactly once, the queue counters stay exact, and the purges share their rows
 * without failing or waiting. PostgreSQL only: the embedded store has one connection, so its jobs
 * never run at once.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { DATABASE_URL } from './helpers/db.js';
import { testApp, updateSettings, type TestApp } from './helpers/app.js';
import { seedTenant } from './helpers/seed.js';
import { Mate } from './helpers/mate.js';
import { ManualClock } from '../src/lib/clock.js';
import { ChangeNotifier } from '../src/lib/notifier.js';
import { Units } from '../src/db/tx.js';
import { openStore, type Store } from '../src/db/store.js';
import { loadProcessByKey } from '../src/processes/store.js';
import { sweepOnce } from '../src/maintenance/sweep.js';
import { purgeOldEvents } from '../src/maintenance/outbox-retention.js';
import { purgeExpiredIdempotencyKeys } from '../src/maintenance/idempotency-expiry.js';
import { queueDepths } from '../src/metrics/store.js';

let t: TestApp | null = null;
const others: Store[] = [];
after(async () => {
  for (const s of others) await s.close();
  await t?.close();
});

test(
  'three processes sweep at once: each expired lease recovered exactly once, counters exact, purges share their rows',
  { skip: DATABASE_URL ? false : 'PostgreSQL only (set DATABASE_URL): the embedded store has one connection, so its jobs never overlap' },
  async () => {
    const clock = new ManualClock('2026-03-02T09:00:00.000Z');
    t = await testApp({ clock });
    const tenant = await seedTenant(t.store, 'sweepers', { processes: [{ processKey: 'Work' }] });
    const proc = (await loadProcessByKey(t.store.db, tenant.tenantId, 'Work'))!;
    await updateSettings(t, tenant.tenantId, proc.id, { lock_timeout_seconds: 60 });
    const mate = await Mate.signIn(t.app, tenant);
    const N = 1200;
    for (let i = 0; i < N; i += 400) {
      const r = await mate.post(
        '/api/CreateTasks/Work',
        Array.from({ length: 400 }, (_, j) => ({ coreSystemKey: `K-${i + j}` })),
        { 'idempotency-key': `batch-${i}` },
      );
      assert.equal(r.status, 200);
    }
    let held = 0;
    while (held < N) {
      const got = (await mate.get('/api/TakeMany/Work?count=100')).body as unknown[];
      assert.ok(got.length > 0);
      held += got.length;
    }

    // three "processes": the app's store and two more pools on the same database
    const stores = [t.store, ...(await Promise.all([1, 2].map(() => openStore({ databaseUrl: t!.store.url, dataDir: '', poolSize: 4 }))))];
    others.push(...stores.slice(1));
    const deps = stores.map((s) => ({ db: s.db, units: new Units(s.db, new ChangeNotifier()) }));

    const pending = await sql<{ n: number }>`SELECT count(*)::int AS n FROM idempotency_keys WHERE tenant_id = ${tenant.tenantId}`.execute(
      t.store.db,
    );
    assert.equal(pending.rows[0].n, N / 400, 'one idempotency key per create');
    // past the leases and the idempotency keys' 24 h
    const later = new Date(clock.now().getTime() + 25 * 3600 * 1000);
    const sweeps = await Promise.all(deps.map((d) => sweepOnce(d, later)));
    assert.equal(
      sweeps.reduce((n, s) => n + s.recovered, 0),
      N,
      `recovered per process: ${sweeps.map((s) => s.recovered).join(', ')}`,
    );
    const { rows: expired } = await sql<{ task_id: number; n: number }>`SELECT task_id, count(*)::int AS n FROM task_history
      WHERE tenant_id = ${tenant.tenantId} AND action = 'Lock expired' GROUP BY task_id`.execute(t.store.db);
    assert.equal(expired.length, N, 'every task recovered');
    assert.ok(
      expired.every((e) => e.n === 1),
      'none twice',
    );

    // the folds of the three sweeps left the counters exact
    await Promise.all(deps.map((d) => sweepOnce(d, later)));
    const ready = (await queueDepths(t.store.db)).find((d) => d.tenantId === tenant.tenantId && d.queue === 'Ready' && !d.error);
    const { rows: real } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM tasks
      WHERE tenant_id = ${tenant.tenantId} AND queue = 'Ready' AND deleted_at IS NULL`.execute(t.store.db);
    assert.equal(real[0].n, N);
    assert.equal(ready?.n, N, 'the Ready counter');

    // the sweeps' idempotency expiry (24 h) shared the keys; the event purges at once too
    const keys = await sql<{ n: number }>`SELECT count(*)::int AS n FROM idempotency_keys WHERE tenant_id = ${tenant.tenantId}`.execute(
      t.store.db,
    );
    assert.equal(keys.rows[0].n, 0, 'the expired idempotency keys are gone');
    assert.equal(await purgeExpiredIdempotencyKeys(t.store.db, later), 0);
    // far ahead: whichever clock wrote their times, the events are past their retention
    const far = new Date('2100-01-01T00:00:00Z');
    const before = await sql<{ n: number }>`SELECT count(*)::int AS n FROM outbox_events WHERE tenant_id = ${tenant.tenantId}`.execute(
      t.store.db,
    );
    assert.ok(before.rows[0].n > 0);
    const purged = await Promise.all(deps.map((d) => purgeOldEvents(d.db, far, 25)));
    const after = await sql<{ n: number }>`SELECT count(*)::int AS n FROM outbox_events WHERE tenant_id = ${tenant.tenantId}`.execute(
      t.store.db,
    );
    assert.equal(after.rows[0].n, 0, 'every old event purged');
    assert.ok(purged.every((p) => p.events >= 0));
  },
);
