/** Idempotency-Key on CreateTask, CreateTasks and CreateAndTakeTask (docs/mate-api.md §8, docs/product.md §5.1). */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sweepOnce } from '../src/maintenance/sweep.js';
import { sql } from 'kysely';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { Mate, type MateResponse } from './helpers/mate.js';
import { snapshot } from './helpers/snapshot.js';
import { ManualClock } from '../src/lib/clock.js';
import { createMate } from '../src/accounts/service.js';

const clock = new ManualClock('2026-03-02T09:00:00.000Z');
const FIELDS = [
  { name: 'coreSystemKey', type: 'text' as const },
  { name: 'numberField', type: 'number' as const },
];

let t: TestApp;
let tenant: SeededTenant;
let otherTenant: SeededTenant;
let mate: Mate;
let colleague: Mate;
let mateB: Mate;
let n = 0;

before(async () => {
  t = await testApp({ clock });
  tenant = await seedTenant(t.store, 'idem', {
    processes: [
      { processKey: 'PK', fields: FIELDS },
      { processKey: 'Other', fields: FIELDS },
      { processKey: 'NoTasks', tasksEnabled: false },
    ],
  });
  otherTenant = await seedTenant(t.store, 'idem-b', { processes: [{ processKey: 'PK', fields: FIELDS }] });
  await createMate(t.store.db, tenant.tenantId, { username: 'colleague', password: 'colleague-password-1' });
  mate = await Mate.signIn(t.app, tenant);
  colleague = await Mate.signIn(t.app, tenant, 'colleague', 'colleague-password-1');
  mateB = await Mate.signIn(t.app, otherTenant);
});
after(() => t.close());

const key = () => `key-${++n}`;

async function taskCount(tenantId = tenant.tenantId): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM tasks WHERE tenant_id = ${tenantId}`.execute(t.store.db);
  return rows[0].n;
}

function post(m: Mate, url: string, body: string | unknown, idemKey: string, headers: Record<string, string> = {}): Promise<MateResponse> {
  return m.request('POST', url, body, { 'idempotency-key': idemKey, ...headers });
}

function replayed(first: MateResponse, again: MateResponse): void {
  assert.equal(again.status, first.status);
  assert.equal(again.headers['idempotent-replayed'], 'true');
  assert.equal(again.raw.body, first.raw.body, "the stored body, byte for byte (its requestId is the first request's)");
  assert.notEqual(again.headers['x-request-id'], first.headers['x-request-id'], 'the replay is a request of its own');
}

test('CreateTask: first use is processed; the same key and body replays the answer and creates nothing', async () => {
  const k = key();
  const first = await post(mate, '/api/CreateTask/PK', { coreSystemKey: 'A', numberField: 1.5, comment: 'hello' }, k);
  assert.equal(first.status, 200);
  assert.equal(first.body.succeeded, true);
  assert.equal(first.headers['idempotent-replayed'], undefined);
  const count = await taskCount();
  const state = await snapshot(t.store.db);
  // key order and whitespace do not matter
  const again = await post(mate, '/api/CreateTask/PK', '{ "comment" : "hello",\n  "numberField": 1.5, "coreSystemKey": "A" }', k);
  replayed(first, again);
  assert.equal(again.body.taskId, first.body.taskId);
  const third = await post(mate, '/api/createtask/pk/', { numberField: 1.5, coreSystemKey: 'A', comment: 'hello' }, k);
  replayed(first, third);
  // keys match case-insensitively, so the .NET client's PascalCase body is the same request
  const pascal = await post(mate, '/api/CreateTask/PK', { CoreSystemKey: 'A', NumberField: 1.5, Comment: 'hello' }, k);
  replayed(first, pascal);
  assert.equal(await taskCount(), count, 'nothing created again');
  assert.deepEqual(await snapshot(t.store.db), state, 'no history, comment or anything else written');
});

test('the same key with another body, process or endpoint → 422 idempotency_conflict, nothing changed', async () => {
  const k = key();
  const first = await post(mate, '/api/CreateTask/PK', { coreSystemKey: 'B' }, k);
  assert.equal(first.body.succeeded, true);
  const state = await snapshot(t.store.db);
  for (const [url, body] of [
    ['/api/CreateTask/PK', { coreSystemKey: 'B2' }],
    ['/api/CreateTask/PK', { coreSystemKey: 'B', numberField: 1 }],
    ['/api/CreateTask/PK', { coreSystemKey: 'B', comment: null }],
    ['/api/CreateTask/Other', { coreSystemKey: 'B' }],
    ['/api/CreateAndTakeTask/PK', { coreSystemKey: 'B' }],
    ['/api/CreateTasks/PK', [{ coreSystemKey: 'B' }]],
  ] as const) {
    const r = await post(mate, url, body, k);
    assert.equal(r.status, 422, `${url}: ${r.raw.body}`);
    assert.equal(r.body.code, 'idempotency_conflict');
    assert.equal(r.body.succeeded, false);
    assert.equal(r.headers['idempotent-replayed'], undefined);
    assert.ok(r.body.message.length > 0);
    if (url.includes('CreateTask/')) assert.equal(r.body.taskId, -1);
    if (url.includes('CreateTasks/')) assert.deepEqual(r.body.taskIds, []);
    if (url.includes('CreateAndTakeTask/'))
      assert.deepEqual([r.body.taskId, r.body.runId, r.body.reason, r.body.processKey], [-1, -1, null, 'PK']);
  }
  assert.deepEqual(await snapshot(t.store.db), state);
  // the first request still replays
  replayed(first, await post(mate, '/api/CreateTask/PK', { coreSystemKey: 'B' }, k));
});

test('a 400 answer is stored and replayed; a 404 is not stored', async () => {
  const k = key();
  const bad = await post(mate, '/api/CreateTask/PK', { coreSystemKey: 'C', numberField: 'abc' }, k);
  assert.equal(bad.status, 400);
  assert.equal(bad.body.code, 'invalid_field');
  const again = await post(mate, '/api/CreateTask/PK', { numberField: 'abc', coreSystemKey: 'C' }, k);
  replayed(bad, again);
  assert.equal(again.body.code, 'invalid_field');
  // the key is bound to that request
  assert.equal((await post(mate, '/api/CreateTask/PK', { coreSystemKey: 'C', numberField: 1 }, k)).status, 422);
  // a 200 refusal is stored too
  const k2 = key();
  const disabled = await post(mate, '/api/CreateTask/NoTasks', { x: 1 }, k2);
  assert.deepEqual([disabled.status, disabled.body.code], [200, 'tasks_disabled']);
  replayed(disabled, await post(mate, '/api/CreateTask/NoTasks', { x: 1 }, k2));
  assert.equal((await post(mate, '/api/CreateTask/NoTasks', { x: 2 }, k2)).status, 422);
  // 404: not stored, so the same key may be used once the process exists
  const k3 = key();
  const missing = await post(mate, '/api/CreateTask/Later', { coreSystemKey: 'E' }, k3);
  assert.equal(missing.status, 404);
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM idempotency_keys WHERE key = ${k3}`.execute(t.store.db);
  assert.equal(rows[0].n, 0);
  const ok = await post(mate, '/api/CreateTask/PK', { coreSystemKey: 'E' }, k3);
  assert.equal(ok.status, 200);
  assert.equal(ok.body.succeeded, true);
  assert.equal(ok.headers['idempotent-replayed'], undefined);
});

test('100 concurrent identical requests with one key → exactly one task, identical answers', async () => {
  const k = key();
  const before = await taskCount();
  const answers = await Promise.all(
    Array.from({ length: 100 }, () => post(mate, '/api/CreateTask/PK', { coreSystemKey: 'race', numberField: 7 }, k)),
  );
  assert.equal(await taskCount(), before + 1, 'one task');
  const ok = answers.filter((a) => a.status === 200);
  assert.equal(ok.length, 100, JSON.stringify(answers.filter((a) => a.status !== 200).map((a) => [a.status, a.body.code])));
  assert.equal(new Set(ok.map((a) => a.raw.body)).size, 1, 'every answer is the first one');
  assert.equal(ok.filter((a) => a.headers['idempotent-replayed'] === undefined).length, 1, 'one was processed, 99 replayed');
  const { rows } = await sql<{
    n: number;
  }>`SELECT count(*)::int AS n FROM task_history WHERE tenant_id = ${tenant.tenantId} AND task_id = ${ok[0].body.taskId}`.execute(
    t.store.db,
  );
  assert.equal(rows[0].n, 1);
});

test('keys are scoped per Mate and tenant: another Mate may reuse a key', async () => {
  const k = key();
  const mine = await post(mate, '/api/CreateTask/PK', { coreSystemKey: 'scoped' }, k);
  const theirs = await post(colleague, '/api/CreateTask/PK', { coreSystemKey: 'scoped' }, k);
  assert.equal(theirs.status, 200);
  assert.equal(theirs.headers['idempotent-replayed'], undefined);
  assert.ok(theirs.body.taskId > 0 && theirs.body.taskId !== mine.body.taskId, 'a task of its own');
  const otherTenantAnswer = await post(mateB, '/api/CreateTask/PK', { coreSystemKey: 'scoped' }, k);
  assert.equal(otherTenantAnswer.status, 200);
  assert.equal(otherTenantAnswer.headers['idempotent-replayed'], undefined);
  assert.equal(await taskCount(otherTenant.tenantId), 1);
  // another body under the same key is no conflict for another Mate
  const other = await post(colleague, '/api/CreateTask/PK', { coreSystemKey: 'scoped' }, key());
  assert.equal(other.status, 200);
  replayed(mine, await post(mate, '/api/CreateTask/PK', { coreSystemKey: 'scoped' }, k));
});

test('an invalid key (empty, longer than 255, not visible ASCII) → 400 invalid_field, nothing created', async () => {
  const state = await snapshot(t.store.db);
  const bad = ['', ' ', 'a'.repeat(256), 'clé', 'with space', 'tab\there'];
  for (const k of bad) {
    for (const [url, body, normal] of [
      ['/api/CreateTask/PK', { coreSystemKey: 'K' }, { taskId: -1 }],
      ['/api/CreateTasks/PK', [{ coreSystemKey: 'K' }], { taskIds: [] }],
      ['/api/CreateAndTakeTask/PK', { coreSystemKey: 'K' }, { taskId: -1, runId: -1 }],
    ] as const) {
      const r = await t.app.inject({
        method: 'POST',
        url,
        headers: {
          authorization: `Bearer ${mate.token}`,
          'content-type': 'application/json',
          'idempotency-key': Buffer.from(k, 'utf8').toString('latin1'),
        },
        payload: JSON.stringify(body),
      });
      assert.equal(r.statusCode, 400, `${JSON.stringify(k)}: ${r.body}`);
      const b = r.json();
      assert.equal(b.code, 'invalid_field');
      assert.equal(b.errors[0].field, 'Idempotency-Key');
      for (const [kk, v] of Object.entries(normal)) assert.deepEqual(b[kk], v);
    }
  }
  assert.deepEqual(await snapshot(t.store.db), state);
  // the longest and the odd visible characters are fine
  for (const k of ['a'.repeat(255), '!~{}"\\']) {
    const r = await post(mate, '/api/CreateTask/PK', { coreSystemKey: `ok ${k.length}` }, k);
    assert.equal(r.status, 200, r.raw.body);
  }
});

test('after 24 h the key is forgotten: the same request runs anew', async () => {
  const k = key();
  const first = await post(mate, '/api/CreateTask/PK', { coreSystemKey: 'daily' }, k);
  clock.advance(24 * 3600 - 1);
  replayed(first, await post(mate, '/api/CreateTask/PK', { coreSystemKey: 'daily' }, k));
  assert.equal((await post(mate, '/api/CreateTask/PK', { coreSystemKey: 'other' }, k)).status, 422);
  clock.advance(1);
  const fresh = await post(mate, '/api/CreateTask/PK', { coreSystemKey: 'daily' }, k);
  assert.equal(fresh.status, 200);
  assert.equal(fresh.headers['idempotent-replayed'], undefined);
  assert.notEqual(fresh.body.taskId, first.body.taskId, 'a second task');
  replayed(fresh, await post(mate, '/api/CreateTask/PK', { coreSystemKey: 'daily' }, k));
  // and after another 24 h, another body may use it
  clock.advance(24 * 3600);
  assert.equal((await post(mate, '/api/CreateTask/PK', { coreSystemKey: 'other' }, k)).status, 200);
  // the sweeper drops records past their 24 h
  const keys = async () =>
    (await sql<{ n: number }>`SELECT count(*)::int AS n FROM idempotency_keys WHERE key = ${k}`.execute(t.store.db)).rows[0].n;
  assert.equal(await keys(), 1);
  clock.advance(24 * 3600);
  await sweepOnce(t.app.services, clock.now());
  assert.equal(await keys(), 0);
});

test('CreateTasks: replayed with its ids; a stored batch refusal replays too', async () => {
  const k = key();
  const items = [{ coreSystemKey: 'b1' }, { coreSystemKey: 'b2', numberField: '2.5' }];
  const first = await post(mate, '/api/CreateTasks/PK', items, k);
  assert.equal(first.body.taskIds.length, 2);
  const count = await taskCount();
  replayed(first, await post(mate, '/api/CreateTasks/PK', JSON.stringify(items, null, 2), k));
  assert.equal(await taskCount(), count);
  assert.equal((await post(mate, '/api/CreateTasks/PK', [...items].reverse(), k)).status, 422, 'item order matters');
  const k2 = key();
  const bad = await post(mate, '/api/CreateTasks/PK', [{ coreSystemKey: 'ok' }, { numberField: 'x' }], k2);
  assert.equal(bad.status, 400);
  assert.equal(bad.body.errors[0].index, 1);
  replayed(bad, await post(mate, '/api/CreateTasks/PK', [{ coreSystemKey: 'ok' }, { numberField: 'x' }], k2));
  assert.equal(await taskCount(), count);
});

test('CreateAndTakeTask: the task object is replayed as first answered; the task is created and taken once', async () => {
  const k = key();
  const first = await post(mate, '/api/CreateAndTakeTask/PK', { numberField: 3, coreSystemKey: 'take me' }, k);
  assert.ok(first.body.taskId > 0, first.raw.body);
  assert.deepEqual(Object.keys(first.body), [
    'taskId',
    'reason',
    'runId',
    'processKey',
    'coreSystemKey',
    'numberField',
    'activationDate',
    'deadline',
    'urgent',
    'retryCount',
  ]);
  const state = await snapshot(t.store.db);
  const again = await post(mate, '/api/CreateAndTakeTask/PK', { coreSystemKey: 'take me', numberField: 3 }, k);
  replayed(first, again);
  assert.deepEqual(Object.keys(again.body), Object.keys(first.body), 'the keys in task object order (docs/mate-api.md §6.1)');
  assert.deepEqual(await snapshot(t.store.db), state);
  const { rows } = await sql<any>`SELECT locked_by_mate_id, run_id FROM tasks WHERE id = ${first.body.taskId}`.execute(t.store.db);
  assert.deepEqual(rows[0], { locked_by_mate_id: tenant.mateId, run_id: first.body.runId });
  // the other Mate sending the same key and body creates its own
  const theirs = await post(colleague, '/api/CreateAndTakeTask/PK', { coreSystemKey: 'take me', numberField: 3 }, k);
  // (ids are not in creation order: migration 0002)
  assert.ok(theirs.body.taskId > 0 && theirs.body.taskId !== first.body.taskId);
});
