/**
 * Task and run ids are random and unique within their tenant (migration 0013, src/tasks/funnel.ts,
 * src/runs/store.ts): a drawn id the tenant already has is drawn again, while another tenant's id
 * may be reused (the key is (tenant_id, id)); a batch's ids ascend in input order.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { Mate } from './helpers/mate.js';
import { queueIds, queuedIds, randomId } from './helpers/ids.js';
import { STORE_KIND } from './helpers/db.js';

let t: TestApp;
let a: SeededTenant;
let b: SeededTenant;
let mateA: Mate;
let mateB: Mate;

before(async () => {
  t = await testApp();
  a = await seedTenant(t.store, 'ids-a', { processes: [{ processKey: 'P', fields: [{ name: 'k', type: 'text' }] }] });
  b = await seedTenant(t.store, 'ids-b', { processes: [{ processKey: 'P', fields: [{ name: 'k', type: 'text' }] }] });
  mateA = await Mate.signIn(t.app, a);
  mateB = await Mate.signIn(t.app, b);
});
after(() => t.close());

const taskIds = async (tenantId: number) =>
  (await t.store.db.selectFrom('tasks').select('id').where('tenant_id', '=', tenantId).execute())
    .map((r) => Number(r.id))
    .sort((x, y) => x - y);

test(`${STORE_KIND}: a task id the tenant already has is drawn again; another tenant's id is the tenant's to use`, async () => {
  const first = await mateA.create('P', { k: 'one' });
  // the next draws answer A's existing id twice, then a fresh one: the create gets the fresh one
  const fresh = randomId();
  await queueIds(t.store.db, [first, first, fresh]);
  const second = await mateA.create('P', { k: 'two' });
  assert.equal(second, fresh);
  assert.deepEqual(
    await taskIds(a.tenantId),
    [first, fresh].sort((x, y) => x - y),
  );
  // B may get the same id as A's task: ids are unique per tenant
  await queueIds(t.store.db, [first]);
  assert.equal(await mateB.create('P', { k: 'b-one' }), first);
  assert.equal(await queuedIds(t.store.db), 0);
  // each tenant sees its own task under that id
  const rows = await t.store.db.selectFrom('tasks').select(['tenant_id', 'data']).where('id', '=', first).orderBy('tenant_id').execute();
  assert.deepEqual(
    rows.map((r) => [Number(r.tenant_id), (r.data as { k: string }).k]),
    [
      [a.tenantId, 'one'],
      [b.tenantId, 'b-one'],
    ],
  );
});

test(`${STORE_KIND}: a batch whose draws all collide draws again; its ids are distinct and ascend in input order`, async () => {
  const have = await taskIds(a.tenantId);
  const fresh = [randomId(), randomId(), randomId()];
  // 3 tasks draw 5 candidates: all are taken (or repeat), so a second draw follows
  await queueIds(t.store.db, [have[0], have[1], have[0], have[1], have[0], ...fresh]);
  const res = await mateA.post('/api/CreateTasks/P', [{ k: 'b1' }, { k: 'b2' }, { k: 'b3' }]);
  assert.equal(res.body.succeeded, true, JSON.stringify(res.body));
  assert.deepEqual(
    res.body.taskIds,
    [...fresh].sort((x, y) => x - y),
  );
});

test(`${STORE_KIND}: a run id the tenant already has is passed over for the next candidate`, async () => {
  const taken = await mateA.takeNext('P');
  const firstRun = taken.runId;
  assert.ok(Number.isSafeInteger(firstRun) && firstRun > 0 && firstRun < 2 ** 52);
  assert.equal((await mateA.post('/api/FinishRun', { runId: firstRun })).body.succeeded, true);
  const fresh = randomId();
  await queueIds(t.store.db, [firstRun, fresh]);
  const next = await mateA.takeNext('P');
  assert.equal(next.runId, fresh);
  const runs = await t.store.db.selectFrom('runs').select('id').where('tenant_id', '=', a.tenantId).execute();
  assert.deepEqual(
    runs.map((r) => Number(r.id)).sort((x, y) => x - y),
    [firstRun, fresh].sort((x, y) => x - y),
  );
});
