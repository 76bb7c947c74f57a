/**
 * Hostile and careless input that once got through (issue 7): each test failed before its fix.
 * Every refusal is a 4xx in the contract's shape (code, requestId) and changes nothing.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { Mate } from './helpers/mate.js';
import { snapshot } from './helpers/snapshot.js';
import { ManualClock } from '../src/lib/clock.js';

const clock = new ManualClock('2026-03-02T09:00:00.000Z');
const FIELDS = [
  { name: 'code', type: 'text' as const, isKey: true, unique: true },
  { name: 'day', type: 'date' as const },
  { name: 'at', type: 'datetime' as const },
];

let t: TestApp;
let tenant: SeededTenant;
let other: SeededTenant;
let mate: Mate;
let mateB: Mate;

before(async () => {
  t = await testApp({ clock });
  // UTC+14 all year: the zone where a date valid as written leaves year 1 or 9999 once converted
  tenant = await seedTenant(t.store, 'hard', {
    timeZone: 'Pacific/Kiritimati',
    processes: [{ processKey: 'PK', fields: FIELDS }, { processKey: 'Free' }],
  });
  other = await seedTenant(t.store, 'hard-b', { processes: [{ processKey: 'BK', fields: FIELDS }] });
  mate = await Mate.signIn(t.app, tenant);
  mateB = await Mate.signIn(t.app, other);
});
after(() => t.close());

/** Asserts a refusal in the contract's shape and returns its body. */
function refused(r: { status: number; body: any; headers: Record<string, unknown> }, status: number, code: string): any {
  assert.equal(r.status, status, JSON.stringify(r.body));
  assert.equal(r.body.code, code, JSON.stringify(r.body));
  assert.equal(r.body.succeeded, false);
  assert.equal(typeof r.body.requestId, 'string');
  assert.equal(r.body.requestId, r.headers['x-request-id']);
  return r.body;
}

/** Runs fn and asserts that the tenant's stored state did not change. */
async function unchanged<T>(fn: () => Promise<T>): Promise<T> {
  const before = await snapshot(t.store.db, tenant.tenantId);
  const out = await fn();
  assert.deepEqual(await snapshot(t.store.db, tenant.tenantId), before, 'a refused request changed nothing');
  return out;
}

function token(form: Record<string, string>, headers: Record<string, string | string[]> = {}) {
  return t.app.inject({
    method: 'POST',
    url: '/connect/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: new URLSearchParams(form).toString(),
  });
}

const form = (over: Record<string, string> = {}) => ({
  grant_type: 'password',
  client_id: tenant.clientId,
  client_secret: tenant.apiSecret,
  username: tenant.mateUsername,
  password: tenant.matePassword,
  ...over,
});

test('item 2: HEAD on the state-changing GET routes runs nothing: 404 route_not_found, no task locked, no run opened', async () => {
  const id = await mate.create('PK', { code: 'head-1' });
  for (const path of ['TakeNext/PK', 'TakeMany/PK?count=5', 'StartOrGetRun/PK', 'StartRun/PK', 'OkToRun/PK', 'GetRules/PK']) {
    for (const prefix of ['/api/', '/apimate/']) {
      const r = await unchanged(() =>
        t.app.inject({ method: 'HEAD', url: prefix + path, headers: { authorization: `Bearer ${mate.token}` } }),
      );
      assert.equal(r.statusCode, 404, `HEAD ${prefix}${path}`);
      assert.equal(r.body, '', 'a HEAD answer has no body');
    }
  }
  const row = await t.store.db.selectFrom('tasks').select(['locked_until', 'run_id']).where('id', '=', id).executeTakeFirstOrThrow();
  assert.deepEqual(row, { locked_until: null, run_id: null });
  const runs = await t.store.db.selectFrom('runs').select('id').where('tenant_id', '=', tenant.tenantId).execute();
  assert.deepEqual(runs, []);
  // GET still works
  assert.equal((await mate.takeNext('PK')).taskId, id);
  const solved = await mate.post('/api/Solved', { taskId: id });
  assert.equal(solved.body.succeeded, true);
});

test('item 4: two Authorization headers are refused, on the Mate API (401) and the token endpoint (400)', async () => {
  const r = await unchanged(() =>
    mate.get('/api/TakeNext/PK', { authorization: [`Bearer ${mate.token}`, 'Bearer forged'] as unknown as string }),
  );
  refused(r, 401, 'invalid_token');
  const basic = `Basic ${Buffer.from(`${tenant.clientId}:${tenant.apiSecret}`).toString('base64')}`;
  const tok = await token(
    { grant_type: 'password', username: tenant.mateUsername, password: tenant.matePassword },
    {
      authorization: [basic, 'Basic eDp5'],
    },
  );
  assert.equal(tok.statusCode, 400, tok.body);
  assert.equal(tok.json().error, 'invalid_request');
  // one header still works
  const ok = await token(
    { grant_type: 'password', username: tenant.mateUsername, password: tenant.matePassword },
    { authorization: basic },
  );
  assert.equal(ok.statusCode, 200, ok.body);
});

test('item 5: U+0000 in client_id, username, the ProcessKey path or a free key is a clear 4xx, never a 500', async () => {
  const c = await token(form({ client_id: `${tenant.clientId}\u0000x` }));
  assert.equal(c.statusCode, 401, c.body);
  assert.equal(c.json().error, 'invalid_client');
  const u = await token(form({ username: `${tenant.mateUsername}\u0000` }));
  assert.equal(u.statusCode, 400, u.body);
  assert.equal(u.json().error, 'invalid_grant');

  refused(await unchanged(() => mate.get('/api/TakeNext/P%00K')), 404, 'process_not_found');
  refused(await unchanged(() => mate.post('/api/CreateTask/P%00K', { code: 'x' })), 404, 'process_not_found');
  const body = refused(await unchanged(() => mate.post('/api/CreateTask/Free', '{"a\\u0000b": 1}')), 400, 'invalid_field');
  assert.equal(body.errors[0].field, 'a\u0000b');
  refused(await unchanged(() => mate.post('/api/CreateTask/Free', '{"nested": {"a\\u0000": 1}}')), 400, 'invalid_field');
});

test('item 6: a lone UTF-16 surrogate in any value or key is refused with invalid_field', async () => {
  const bodies: Array<[string, string]> = [
    ['Free', '{"v": "\\ud800"}'],
    ['Free', '{"\\udc00": 1}'],
    ['Free', '{"v": ["ok", {"k": "x\\udbff"}]}'],
    ['PK', '{"code": "\\ud800"}'],
    ['PK', '{"code": "fine", "comment": "\\udfff"}'],
  ];
  for (const [pk, body] of bodies) {
    refused(await unchanged(() => mate.post(`/api/CreateTask/${pk}`, body)), 400, 'invalid_field');
    refused(await unchanged(() => mate.post(`/api/CreateTasks/${pk}`, `[${body}]`)), 400, 'invalid_field');
  }
  // a surrogate pair is a character like any other
  const ok = await mate.post('/api/CreateTask/Free', '{"v": "\\ud83d\\ude00"}');
  assert.equal(ok.body.succeeded, true, JSON.stringify(ok.body));
  const id = await mate.create('PK', { code: 'surrogate-update' });
  await t.store.db.updateTable('tasks').set({ urgent: true }).where('id', '=', id).execute();
  assert.equal((await mate.takeNext('PK')).taskId, id);
  refused(await unchanged(() => mate.post('/api/UpdateTask', `{"taskId": ${id}, "code": "\\ud800"}`)), 400, 'invalid_field');
  refused(await unchanged(() => mate.post('/api/Failure', '{"processKey": "PK", "message": "\\ud800"}')), 400, 'invalid_field');
});

test('item 7: a date valid as written but outside years 1-9999 in UTC is refused with invalid_field', async () => {
  for (const body of [
    { code: 'd1', activationDate: '0001-01-01T00:00+14:00' },
    { code: 'd2', deadline: '0001-01-01T05:00+10:00' },
    { code: 'd3', at: '0001-01-01T00:00:00+14:00' },
    { code: 'd4', at: '9999-12-31T23:59:59-00:01' },
    // a date field: 9999-12-31T23:00Z is a day of year 10000 at UTC+14
    { code: 'd5', day: '9999-12-31T23:00:00Z' },
  ]) {
    const r = await unchanged(() => mate.post('/api/CreateTask/PK', body));
    refused(r, 400, 'invalid_field');
  }
  // the edges themselves are fine
  assert.equal((await mate.post('/api/CreateTask/PK', { code: 'd6', at: '0001-01-01T14:00' })).body.succeeded, true);
  assert.equal((await mate.post('/api/CreateTask/PK', { code: 'd7', day: '9999-12-31' })).body.succeeded, true);
});

test('item 9: invalid percent-encoding and an over-long ProcessKey get the contract shape, not the framework body', async () => {
  for (const url of ['/api/TakeNext/%C3', '/api/TakeNext/%zz', '/apimate/CreateTask/a%E0%A4']) {
    const r = await unchanged(() => mate.request(url.includes('Create') ? 'POST' : 'GET', url, url.includes('Create') ? {} : undefined));
    refused(r, 404, 'route_not_found');
  }
  // a ProcessKey of any length the request line can carry is looked up and not found
  for (const n of [101, 2049, 5000, 10_000, 15_000]) {
    const r = await unchanged(() => mate.get(`/api/TakeNext/${'a'.repeat(n)}`));
    refused(r, 404, 'process_not_found');
    assert.equal(r.body.requestId, r.headers['x-request-id']);
    refused(await unchanged(() => mate.post(`/api/CreateTask/${'b'.repeat(n)}`, { code: 'long' })), 404, 'process_not_found');
  }
  // percent-encoded: 10,000 characters of é
  refused(await unchanged(() => mate.get(`/api/TakeNext/${'%C3%A9'.repeat(2000)}`)), 404, 'process_not_found');
});

test('item 13: an X-Request-Id that is not an id (markup, 8 KB) is replaced, never echoed or stored', async () => {
  for (const given of ['<script>x</script>', 'a'.repeat(8 * 1024), 'two words', 'é']) {
    const r = await mate.post('/api/CreateTask/PK', { code: `rid-${given.length}-${given.charCodeAt(0)}` }, { 'x-request-id': given });
    assert.equal(r.body.succeeded, true, JSON.stringify(r.body));
    assert.notEqual(r.headers['x-request-id'], given);
    assert.match(String(r.headers['x-request-id']), /^[0-9a-f-]{36}$/);
    assert.equal(r.body.requestId, r.headers['x-request-id']);
    const h = await t.store.db
      .selectFrom('task_history')
      .select('request_id')
      .where('task_id', '=', r.body.taskId)
      .executeTakeFirstOrThrow();
    assert.equal(h.request_id, r.headers['x-request-id'], 'history keeps the id the answer gave');
  }
  const kept = await mate.get('/api/OkToRun/PK', { 'x-request-id': 'proxy-1.2:3_4' });
  assert.equal(kept.headers['x-request-id'], 'proxy-1.2:3_4');
  assert.equal(kept.body.requestId, 'proxy-1.2:3_4');
});

test('item 14: on a process without fields, numbers JSON cannot carry exactly are refused, not changed', async () => {
  for (const text of ['1e309', '-1e400', '9007199254740993', '-9007199254740993', '1e16']) {
    const body = refused(await unchanged(() => mate.post('/api/CreateTask/Free', `{"n": ${text}}`)), 400, 'invalid_field');
    assert.match(body.message, /"n"/);
    refused(await unchanged(() => mate.post('/api/CreateTask/Free', `{"deep": [{"n": ${text}}]}`)), 400, 'invalid_field');
  }
  const ok = await mate.post('/api/CreateTask/Free', '{"n": 9007199254740991, "f": 0.1, "big": 1.5e-300, "s": "9007199254740993"}');
  assert.equal(ok.body.succeeded, true, JSON.stringify(ok.body));
  const row = await t.store.db.selectFrom('tasks').select('data').where('id', '=', ok.body.taskId).executeTakeFirstOrThrow();
  assert.deepEqual(row.data, { n: 9007199254740991, f: 0.1, big: 1.5e-300, s: '9007199254740993' });
});

test('item 15: the Idempotency-Key hash tells every different body apart (an array of objects vs of pairs)', async () => {
  const key = { 'idempotency-key': 'hash-shape-1' };
  const first = await mate.post('/api/CreateTasks/Free', '[{"k":"v"}]', key);
  assert.equal(first.body.succeeded, true, JSON.stringify(first.body));
  const second = await unchanged(() => mate.post('/api/CreateTasks/Free', '[[["k","v"]]]', key));
  refused(second, 422, 'idempotency_conflict');
  const other = await unchanged(() => mate.post('/api/CreateTasks/Free', '[{"K":"v"}]', key));
  assert.equal(other.headers['idempotent-replayed'], 'true', 'key case still does not matter');
  const key2 = { 'idempotency-key': 'hash-shape-2' };
  assert.equal((await mate.post('/api/CreateTask/Free', '{"a":{"b":1}}', key2)).body.succeeded, true);
  refused(await unchanged(() => mate.post('/api/CreateTask/Free', '{"a":[["b",1]]}', key2)), 422, 'idempotency_conflict');
});

test('item 16: a full disk (PostgreSQL 53100) is 503 unavailable with Retry-After, not 500', async () => {
  await sql`CREATE FUNCTION qm_test_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full'; END $$`.execute(t.store.db);
  await sql`CREATE TRIGGER qm_test_disk_full BEFORE INSERT ON tasks FOR EACH ROW EXECUTE FUNCTION qm_test_disk_full()`.execute(t.store.db);
  try {
    const r = await unchanged(() => mate.post('/api/CreateTask/Free', { v: 1 }));
    refused(r, 503, 'unavailable');
    assert.equal(r.headers['retry-after'], '5');
    const many = await unchanged(() => mate.post('/api/CreateTasks/Free', [{ v: 1 }, { v: 2 }]));
    refused(many, 503, 'unavailable');
  } finally {
    await sql`DROP TRIGGER qm_test_disk_full ON tasks`.execute(t.store.db);
    await sql`DROP FUNCTION qm_test_disk_full()`.execute(t.store.db);
  }
  assert.equal((await mate.post('/api/CreateTask/Free', { v: 1 })).body.succeeded, true);
});

test('item 3: task and run ids reveal nothing of another tenant: not in creation order, gaps unrelated to its creates', async () => {
  const mine: number[] = [];
  const theirs: number[] = [];
  for (let i = 0; i < 12; i++) {
    mine.push(await mate.create('Free', { i }));
    // tenant B creates i tasks between two of A's
    for (let j = 0; j < i; j++) theirs.push(await mateB.create('BK', { code: `b-${i}-${j}` }));
  }
  for (const id of [...mine, ...theirs]) assert.ok(Number.isSafeInteger(id) && id > 0, `${id} is a positive integer below 2^53`);
  assert.equal(new Set([...mine, ...theirs]).size, mine.length + theirs.length, 'ids are distinct');
  const gaps = mine.slice(1).map((id, i) => id - mine[i]);
  assert.ok(
    gaps.some((g) => g < 0),
    'the ids of consecutive creates are not increasing',
  );
  assert.ok(!gaps.every((g, i) => g === i + 2), "the gaps do not count the other tenant's creates");
  assert.ok(gaps.filter((g) => Math.abs(g) < 1000).length <= 1, 'consecutive ids are not close to each other');

  // a batch's ids still follow its input order, and the take order among equals is creation order
  const batch = await mate.post('/api/CreateTasks/PK', [{ code: 'o1' }, { code: 'o2' }, { code: 'o3' }]);
  const ids: number[] = batch.body.taskIds;
  assert.deepEqual(
    [...ids].sort((a, b) => a - b),
    ids,
  );
  const single = [
    await mate.create('PK', { code: 'o4' }),
    await mate.create('PK', { code: 'o5' }),
    await mate.create('PK', { code: 'o6' }),
  ];
  const pending = await t.store.db
    .selectFrom('tasks')
    .select('id')
    .where('tenant_id', '=', tenant.tenantId)
    .where('queue', '=', 'Ready')
    .where(
      'process_id',
      '=',
      (
        await t.store.db
          .selectFrom('processes')
          .select('id')
          .where('process_key', '=', 'PK')
          .where('tenant_id', '=', tenant.tenantId)
          .executeTakeFirstOrThrow()
      ).id,
    )
    .where('locked_until', 'is', null)
    .orderBy('seq')
    .execute();
  const taken: number[] = [];
  for (let i = 0; i < pending.length; i++) taken.push((await mate.takeNext('PK')).taskId);
  assert.deepEqual(taken.slice(-6), [...ids, ...single], 'tasks created at the same instant are taken in creation order');

  // runs too: two runs of A around B's runs are not consecutive numbers
  const r1 = (await mate.get('/api/StartOrGetRun/Free')).body.runId;
  await mate.post('/api/FinishRun', { runId: r1 });
  for (let i = 0; i < 3; i++) {
    const rb = (await mateB.get('/api/StartOrGetRun/BK')).body.runId;
    await mateB.post('/api/FinishRun', { runId: rb });
  }
  const r2 = (await mate.get('/api/StartOrGetRun/Free')).body.runId;
  assert.ok(Number.isSafeInteger(r1) && Number.isSafeInteger(r2) && r1 > 0 && r2 > 0);
  assert.ok(Math.abs(r2 - r1) > 1000, `run ids ${r1} and ${r2} are not consecutive counters`);
});
