/**
 * The outbox (docs/events.md): every change writes its events with the change, and event ids
 * increase in the order events become visible, also under concurrent writers whose transactions
 * commit in another order than they drew their row ids (PostgreSQL).
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { testApp, updateSettings, type TestApp } from './helpers/app.js';
import { seedTenant } from './helpers/seed.js';
import { Mate } from './helpers/mate.js';
import { STORE_KIND } from './helpers/db.js';
import { loadProcessByKey } from '../src/processes/store.js';
import { readEvents } from '../src/events/store.js';
import { sweepOnce } from '../src/maintenance/sweep.js';
import { ManualClock } from '../src/lib/clock.js';

const apps: TestApp[] = [];
after(async () => {
  for (const a of apps) await a.close();
});

async function events(t: TestApp, tenantId: number, after = 0) {
  await t.app.services.events.watermark.flush();
  return readEvents(t.store.db, tenantId, after, 10000);
}

test(`${STORE_KIND}: task, run and process changes write their events, numbered in order`, async () => {
  const clock = new ManualClock('2026-03-02T09:00:00.000Z');
  const t = await testApp({ clock });
  apps.push(t);
  const tenant = await seedTenant(t.store, 'ev-a', { processes: [{ processKey: 'Work' }] });
  const proc = (await loadProcessByKey(t.store.db, tenant.tenantId, 'Work'))!;
  const mate = await Mate.signIn(t.app, tenant);

  const id = await mate.create('Work', { n: 1 });
  const taken = await mate.takeNext('Work');
  assert.equal(taken.taskId, id);
  assert.equal((await mate.post('/api/Solved', { taskId: id, comment: 'done' })).body.succeeded, true);
  assert.equal((await mate.post('/api/Failure', { processKey: 'Work', message: 'disk full' })).body.succeeded, true);
  await updateSettings(t, tenant.tenantId, proc.id, { gate_open: false });
  await updateSettings(t, tenant.tenantId, proc.id, { max_retries: 5, lock_timeout_seconds: 60 });
  assert.equal((await mate.takeNext('Work')).taskId < 0, true, 'the gate is closed');

  const evs = await events(t, tenant.tenantId);
  assert.deepEqual(
    evs.map((e) => e.type),
    // a trigger's events follow the statement's task events (AFTER triggers run at its end)
    [
      'task.created',
      'task.taken',
      'run.started',
      'task.solved',
      'process.failure_reported',
      'process.gate',
      'process.settings',
      'process.failure_cleared', // any Mate call clears the Failure state, even a take refused by the gate
    ],
  );
  for (let i = 1; i < evs.length; i++) assert.ok(evs[i].id > evs[i - 1].id, 'ids increase');
  const solved = evs.find((e) => e.type === 'task.solved')!;
  assert.deepEqual(
    { ...solved.payload, actor: undefined, requestId: undefined },
    {
      type: 'task.solved',
      at: '2026-03-02T09:00:00.000Z',
      processId: proc.id,
      taskId: id,
      action: 'Solved',
      queue: 'Solved',
      error: false,
      fromQueue: 'Ready',
      fromError: false,
      reason: null,
      retryCount: 0,
      actor: undefined,
      requestId: undefined,
    },
  );
  assert.deepEqual(solved.payload.actor, { type: 'mate', id: tenant.mateId, name: tenant.mateUsername });
  assert.equal(typeof solved.payload.requestId, 'string');
  assert.deepEqual(evs.find((e) => e.type === 'process.gate')!.payload.open, false);
  assert.deepEqual(evs.find((e) => e.type === 'process.settings')!.payload.changed, ['lock_timeout_seconds', 'max_retries']);
  assert.equal(evs.find((e) => e.type === 'process.failure_reported')!.payload.message, 'disk full');
  assert.equal(evs.find((e) => e.type === 'process.failure_reported')!.payload.processKey, 'Work');

  // a taken task whose lock runs out is recovered by the sweeper
  await updateSettings(t, tenant.tenantId, proc.id, { gate_open: true });
  const id2 = await mate.create('Work', { n: 2 });
  assert.equal((await mate.takeNext('Work')).taskId, id2);
  clock.advance(61);
  assert.equal((await sweepOnce(t.app.services, clock.now())).recovered, 1);
  const later = await events(t, tenant.tenantId, evs[evs.length - 1].id);
  assert.deepEqual(
    later.map((e) => e.type),
    ['process.gate', 'task.created', 'task.taken', 'task.lock_expired'],
  );
  const expired = later[later.length - 1].payload;
  assert.equal(expired.queue, 'Ready');
  assert.equal(expired.retryCount, 1);
  assert.deepEqual(expired.actor, { type: 'system', id: null, name: 'system' });

  // an empty take closes the run
  assert.equal((await mate.takeNext('Work')).taskId, id2);
  assert.equal((await mate.post('/api/Solved', { taskId: id2 })).body.succeeded, true);
  assert.ok((await mate.takeNext('Work')).taskId < 0);
  const last = await events(t, tenant.tenantId, later[later.length - 1].id);
  assert.deepEqual(
    last.map((e) => e.type),
    ['task.taken', 'task.solved', 'run.finished'],
  );
  assert.equal(last[2].payload.reason, 'emptyQueue');
  assert.equal(last[2].payload.solved, 2);
});

test(`${STORE_KIND}: a batch that takes a process with Stop on Errors over its limit writes process.stopped_by_errors`, async () => {
  const t = await testApp();
  apps.push(t);
  const tenant = await seedTenant(t.store, 'ev-b', { processes: [{ processKey: 'Stop' }] });
  const proc = (await loadProcessByKey(t.store.db, tenant.tenantId, 'Stop'))!;
  await updateSettings(t, tenant.tenantId, proc.id, { stop_on_errors: true, error_limit: 1 });
  const mate = await Mate.signIn(t.app, tenant);
  for (let i = 0; i < 3; i++) await mate.create('Stop', { i });
  const types: string[] = [];
  for (let i = 0; i < 3; i++) {
    const task = await mate.takeNext('Stop');
    if (task.taskId < 0) break;
    assert.equal((await mate.post('/api/Error', { taskId: task.taskId, reason: 'bad' })).body.succeeded, true);
  }
  for (const e of await events(t, tenant.tenantId))
    if (e.type.startsWith('process.stop')) types.push(`${e.type}:${e.payload.unresolvedErrors}`);
  assert.deepEqual(types, ['process.stopped_by_errors:2'], 'once, when the second error passes the limit of 1');
});

test(`${STORE_KIND}: concurrent writers: a reader resuming from its last id sees every event once, in id order`, async () => {
  const t = await testApp();
  apps.push(t);
  const tenant = await seedTenant(t.store, 'ev-c');
  const db = t.store.db;
  const WRITERS = 8;
  const PER_WRITER = 25;
  let writing = true;
  // each transaction draws its row id, then holds on before committing: commit order differs from id order
  const committed: number[] = []; // row ids in commit order
  const writer = async (w: number) => {
    for (let i = 0; i < PER_WRITER; i++) {
      const id = await t.app.services.units.transaction(async (tx) => {
        const { rows } = await sql<{ id: number }>`INSERT INTO outbox_events (tenant_id, type, payload, created_at)
          VALUES (${tenant.tenantId}, 'test.write', ${JSON.stringify({ w, i })}::jsonb, now()) RETURNING id`.execute(tx.db);
        if (STORE_KIND === 'postgres') await sql`SELECT pg_sleep(${Math.random() * 0.01})`.execute(tx.db);
        return rows[0].id;
      });
      committed.push(id);
    }
  };
  const seen: number[] = [];
  const keys: string[] = [];
  const reader = async () => {
    let cursor = 0;
    for (;;) {
      const done = !writing;
      // the reader reads whatever is visible so far, while writers are still in flight
      const batch = await readEvents(db, tenant.tenantId, cursor, 1000);
      for (const e of batch) {
        seen.push(e.id);
        keys.push(`${e.payload.w}:${e.payload.i}`);
        cursor = e.id;
      }
      if (done && batch.length === 0) {
        await t.app.services.events.watermark.flush();
        const rest = await readEvents(db, tenant.tenantId, cursor, 1000);
        if (rest.length === 0) return;
        for (const e of rest) {
          seen.push(e.id);
          keys.push(`${e.payload.w}:${e.payload.i}`);
          cursor = e.id;
        }
      }
      await new Promise((r) => setTimeout(r, 2));
    }
  };
  const readerDone = reader();
  await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
  writing = false;
  await readerDone;

  assert.equal(new Set(keys).size, keys.length, 'no event read twice');
  assert.equal(keys.length, WRITERS * PER_WRITER, 'no event missed');
  for (let i = 1; i < seen.length; i++) assert.ok(seen[i] > seen[i - 1], 'ids increase');
  if (STORE_KIND === 'postgres') {
    // the case the ordering exists for did happen: a larger row id committed before a smaller one
    // (a reader paging by row id would have skipped the smaller one)
    assert.ok(
      committed.some((id, i) => i > 0 && id < Math.max(...committed.slice(0, i))),
      'row ids committed out of order',
    );
  }
});

test(`${STORE_KIND}: retention purges old finished deliveries and old events no endpoint still needs`, async () => {
  const t = await testApp();
  apps.push(t);
  const tenant = await seedTenant(t.store, 'ev-p');
  const db = t.store.db;
  const { createSubscription } = await import('../src/events/webhook-subscriptions.js');
  const { purgeOldEvents } = await import('../src/maintenance/outbox-retention.js');
  const old = new Date('2026-01-01T00:00:00Z');
  const now = new Date('2026-01-10T00:00:00Z');
  const insert = async (n: number) => {
    for (let i = 0; i < n; i++)
      await t.app.services.units.autocommit((tx) =>
        sql`INSERT INTO outbox_events (tenant_id, type, payload, created_at) VALUES (${tenant.tenantId}, 'test.old', '{}'::jsonb, ${old})`.execute(
          tx.db,
        ),
      );
    await t.app.services.events.watermark.flush();
  };
  // an endpoint created before the events, still behind them: they are kept for it
  const { subscription } = await createSubscription(db, tenant.tenantId, { url: 'https://example.com/hook' });
  await insert(3);
  assert.deepEqual(await purgeOldEvents(db, now, 48), { events: 0, deliveries: 0, attempts: 0 });
  // once the endpoint is past them (or disabled), they go; an old delivered log row goes too.
  // (The purge keeps the events of the transaction the cursor is in: evs[2] here.)
  const evs = await readEvents(db, tenant.tenantId, 0, 100);
  const rowIds = (
    await sql<{ id: number }>`SELECT id FROM outbox_events WHERE tenant_id = ${tenant.tenantId} ORDER BY xid, id`.execute(db)
  ).rows.map((r) => r.id);
  await sql`UPDATE webhook_subscriptions SET cursor_seq = ${evs[2].id} WHERE id = ${subscription.id}`.execute(db);
  await sql`INSERT INTO webhook_deliveries (tenant_id, subscription_id, event_id, event_row_id, status, created_at)
    VALUES (${tenant.tenantId}, ${subscription.id}, ${evs[0].id}, ${rowIds[0]}, 'delivered', ${old}),
           (${tenant.tenantId}, ${subscription.id}, ${evs[1].id}, ${rowIds[1]}, 'pending', ${old})`.execute(db);
  assert.deepEqual(await purgeOldEvents(db, now, 48), { events: 1, deliveries: 1, attempts: 0 }, 'the pending delivery keeps its event');
  assert.deepEqual(
    (await readEvents(db, tenant.tenantId, 0, 100)).map((e) => e.id),
    [evs[1].id, evs[2].id],
  );
  // nothing younger than the retention is touched
  assert.deepEqual(await purgeOldEvents(db, now, 24 * 365), { events: 0, deliveries: 0, attempts: 0 });
});

test(`${STORE_KIND}: a batch writes ONE outbox row for its task events; readers see each event with its own id, type and payload`, async () => {
  const clock = new ManualClock('2026-03-04T10:00:00.000Z');
  const t = await testApp({ clock });
  apps.push(t);
  const tenant = await seedTenant(t.store, 'ev-batch', { processes: [{ processKey: 'Work' }] });
  const proc = (await loadProcessByKey(t.store.db, tenant.tenantId, 'Work'))!;
  const db = t.store.db;
  const mate = await Mate.signIn(t.app, tenant);
  const taskRows = async () =>
    (
      await sql<{ id: number; type: string; history_ids: number[] | null }>`SELECT id, type, history_ids FROM outbox_events
        WHERE tenant_id = ${tenant.tenantId} AND history_ids IS NOT NULL ORDER BY xid, id`.execute(db)
    ).rows;
  const { visibleSince } = await import('../src/events/watermark.js');
  const { upto: start } = await visibleSince(db, null);

  const created = await mate.post(
    '/api/CreateTasks/Work',
    Array.from({ length: 50 }, (_, i) => ({ i })),
  );
  assert.equal(created.body.succeeded, true, JSON.stringify(created.body));
  const taskIds: number[] = created.body.taskIds;
  assert.equal(taskIds.length, 50);
  const rows = await taskRows();
  assert.equal(rows.length, 1, 'one outbox row for the 50 task events');
  assert.equal(rows[0].type, 'task');
  const hids = rows[0].history_ids!.map(Number);
  assert.equal(hids.length, 50);
  assert.deepEqual(
    hids,
    [...hids].sort((a, b) => a - b),
    'history rows in ascending order',
  );

  const evs = await events(t, tenant.tenantId);
  assert.equal(evs.length, 50);
  assert.equal(new Set(evs.map((e) => e.id)).size, 50, 'distinct ids');
  for (let i = 1; i < evs.length; i++) assert.ok(evs[i].id > evs[i - 1].id, 'ids increase');
  assert.deepEqual(
    evs.map((e) => e.payload.taskId),
    taskIds,
    'one event per task, in the order of the changes',
  );
  for (const e of evs) {
    assert.equal(e.type, 'task.created');
    assert.deepEqual(
      { ...e.payload, taskId: undefined, requestId: undefined },
      {
        type: 'task.created',
        at: '2026-03-04T10:00:00.000Z',
        processId: proc.id,
        taskId: undefined,
        action: 'Created',
        queue: 'Ready',
        error: false,
        fromQueue: null,
        fromError: false,
        reason: null,
        retryCount: 0,
        actor: { type: 'mate', id: tenant.mateId, name: tenant.mateUsername },
        requestId: undefined,
      },
    );
    assert.equal(e.createdAt.toISOString(), '2026-03-04T10:00:00.000Z');
  }
  // resuming from an event inside the row gives the rest of the row, nothing twice
  assert.deepEqual(
    (await readEvents(db, tenant.tenantId, evs[19].id, 100)).map((e) => e.id),
    evs.slice(20).map((e) => e.id),
  );
  assert.deepEqual(
    (await readEvents(db, tenant.tenantId, evs[19].id, 5)).map((e) => e.id),
    evs.slice(20, 25).map((e) => e.id),
  );
  // the watermark counts events, each by its type
  const seen = await visibleSince(db, start);
  assert.equal(seen.batch.types.get('task.created'), 50);
  assert.equal(seen.batch.tenants.get(tenant.tenantId), 50);

  // a take of several: one row for its task events; the run's trigger event follows them
  clock.advance(1);
  const taken = await mate.get('/api/TakeMany/Work?count=7');
  assert.equal(taken.status, 200, JSON.stringify(taken.body));
  assert.equal(taken.body.length, 7);
  const after = await taskRows();
  assert.equal(after.length, 2);
  assert.equal(after[1].history_ids!.length, 7);
  const more = await events(t, tenant.tenantId, evs[evs.length - 1].id);
  assert.deepEqual(
    more.map((e) => e.type),
    [...Array(7).fill('task.taken'), 'run.started'],
  );
  for (let i = 1; i < more.length; i++) assert.ok(more[i].id > more[i - 1].id, 'ids increase');
  assert.ok(more[0].id > evs[evs.length - 1].id);
  assert.deepEqual(
    more.slice(0, 7).map((e) => e.payload.taskId),
    taken.body.map((x: { taskId: number }) => x.taskId),
  );
  assert.equal(more[0].payload.fromQueue, 'Ready');
  assert.equal(more[0].payload.at, '2026-03-04T10:00:01.000Z');

  // retention deletes rows whole and counts their events
  const { purgeOldEvents } = await import('../src/maintenance/outbox-retention.js');
  let total = 0;
  for (const { id } of (await sql<{ id: number }>`SELECT id FROM tenants`.execute(db)).rows)
    total += (await readEvents(db, Number(id), 0, 1000)).length;
  const { rows: counted } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM outbox_events`.execute(db);
  assert.ok(total >= 58 && counted[0].n < total);
  const purged = await purgeOldEvents(db, new Date('2030-01-01T00:00:00Z'), 48);
  assert.equal(purged.events, total, 'the events purged, not the rows');
  assert.deepEqual(await readEvents(db, tenant.tenantId, 0, 1000), []);
});
