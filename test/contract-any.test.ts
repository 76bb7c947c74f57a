/**
 * Contract tests for every client (docs/mate-api.md §9 C19-C21): path spelling, tenant isolation, tokens.
 * Requests carry what all three clients send alike: `Authorization: Bearer …` and, on POSTs,
 * `Content-Type: application/json`.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { getToken } from './helpers/mate.js';
import { ManualClock } from '../src/lib/clock.js';
import { createMate } from '../src/accounts/service.js';
import { changeMatePassword } from '../src/accounts/service.js';
import { PK_FIELDS, PK_TASK_KEYS, send, assertKeys, assertResponse, type Wire } from './helpers/contract.js';

const clock = new ManualClock('2026-03-02T09:00:00.000Z');
let t: TestApp;
let acme: SeededTenant;
let other: SeededTenant;
let token: string;
let otherToken: string;

before(async () => {
  t = await testApp({ clock });
  acme = await seedTenant(t.store, 'acme', { processes: [{ processKey: 'PK', fields: PK_FIELDS }] });
  other = await seedTenant(t.store, 'other', { processes: [{ processKey: 'Secret', fields: PK_FIELDS }] });
  token = await getToken(t.app, acme);
  otherToken = await getToken(t.app, other);
});
after(() => t.close());

function get(url: string, bearer: string | null = token): Promise<Wire> {
  return send(t.app, { method: 'GET', url, headers: bearer === null ? {} : { authorization: `Bearer ${bearer}` } });
}

function post(url: string, body: unknown, bearer: string | null = token): Promise<Wire> {
  return send(t.app, {
    method: 'POST',
    url,
    headers: { ...(bearer === null ? {} : { authorization: `Bearer ${bearer}` }), 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
}

async function create(url: string, data: Record<string, unknown>, bearer = token): Promise<number> {
  const r = await post(url, data, bearer);
  assert.equal(r.body.succeeded, true, r.text);
  return r.body.taskId;
}

test('C19: /API/takenext/pk and /apimate/TakeNext/PK answer as /api/TakeNext/PK; the key comes back as defined', async () => {
  const ids = [];
  for (let i = 0; i < 4; i++) ids.push(await create('/api/CreateTask/PK', { coreSystemKey: `P${i}` }));
  const spellings = ['/api/TakeNext/PK', '/API/takenext/pk', '/apimate/TakeNext/PK', '/ApiMate/TAKENEXT/Pk/'];
  const taken: number[] = [];
  for (const url of spellings) {
    const r = await get(url);
    assert.equal(r.status, 200, `${url}: ${r.text}`);
    assert.deepEqual(Object.keys(r.body), PK_TASK_KEYS, url);
    assert.equal(r.body.processKey, 'PK', `${url}: the key as defined`);
    taken.push(r.body.taskId);
  }
  assert.deepEqual(taken, ids, 'each spelling took the next task of the same queue');
  const dummy = await get('/API/takenext/pk');
  assert.equal(dummy.body.taskId, -1);
  assert.equal(dummy.body.processKey, 'PK');
  // and not anything else: double slashes, empty segments and unknown endpoints are 404 route_not_found
  for (const url of [
    '/api//TakeNext/PK',
    '/api/TakeNext/PK//',
    '/api/TakeNext//PK',
    '/api/TakeNexts/PK',
    '/api/TakeNext/PK/extra',
    '/apimate/TakeNext/',
  ]) {
    const r = await get(url);
    assert.equal(r.status, 404, url);
    assert.equal(r.body.code, 'route_not_found', url);
  }
});

test("C20: another tenant's task id gives 200 task_not_found, and changes nothing", async () => {
  const theirs = await create('/api/CreateTask/Secret', { coreSystemKey: 'theirs' }, otherToken);
  const taken = await get('/api/TakeNext/Secret', otherToken);
  assert.equal(taken.body.taskId, theirs);
  for (const endpoint of ['Solved', 'Manual', 'Error', 'Retry', 'UpdateTask', 'ExtendLock']) {
    const r = await post(`/api/${endpoint}`, { taskId: theirs, reason: 'not mine', coreSystemKey: 'changed' });
    assert.equal(r.status, 200, endpoint);
    assert.equal(r.body.code, 'task_not_found', `${endpoint}: ${r.text}`);
    assert.equal(r.body.succeeded, false);
  }
  const missing = await post('/api/Solved', { taskId: 99_999_999, reason: 'x' });
  assert.equal(missing.body.code, 'task_not_found');
  assert.equal(
    missing.body.message.replace(/\d+/g, 'N'),
    (await post('/api/Solved', { taskId: theirs, reason: 'x' })).body.message.replace(/\d+/g, 'N'),
    'no hint that the id exists elsewhere',
  );
  const solved = await post('/api/Solved', { taskId: theirs, reason: 'mine' }, otherToken);
  assert.equal(solved.body.succeeded, true, 'the owner still holds it: nothing changed');
});

test("C20: another tenant's ProcessKey gives 404 with the same body as a missing key, except requestId", async () => {
  const cases: [string, (pk: string) => Promise<Wire>][] = [
    ['TakeNext', (pk) => get(`/api/TakeNext/${pk}`)],
    ['OkToRun', (pk) => get(`/api/OkToRun/${pk}`)],
    ['GetRules', (pk) => get(`/api/GetRules/${pk}`)],
    ['StartOrGetRun', (pk) => get(`/api/StartOrGetRun/${pk}`)],
    ['CreateTask', (pk) => post(`/api/CreateTask/${pk}`, { coreSystemKey: 'x' })],
    ['Failure', (pk) => post('/api/Failure', { processKey: pk, message: 'x' })],
  ];
  for (const [what, call] of cases) {
    const theirs = await call('Secret');
    const nowhere = await call('Sekret');
    assert.equal(theirs.status, 404, what);
    assert.equal(nowhere.status, 404, what);
    assert.equal(theirs.body.code, 'process_not_found', what);
    const strip = (b: any) => ({
      ...b,
      requestId: undefined,
      processKey: b.processKey === undefined ? undefined : 'K',
      message: b.message.replace(/Secret|Sekret/g, 'K'),
    });
    assert.deepEqual(strip(theirs.body), strip(nowhere.body), what);
    assert.notEqual(theirs.body.requestId, nowhere.body.requestId);
  }
});

test('C21: no token, an expired one, and one issued before a password change give 401 invalid_token with WWW-Authenticate', async () => {
  const none = await get('/api/TakeNext/PK', null);
  assert.equal(none.status, 401);
  assertResponse(none.body, { succeeded: false, code: 'invalid_token', extra: ['taskId', 'reason', 'runId', 'processKey'] }, 'no token');
  assert.equal(none.body.taskId, -1, "the endpoint's keys are kept");
  assert.equal(none.headers['www-authenticate'], 'Bearer realm="apimate"', 'no error attribute without an Authorization header');

  const m = await createMate(t.store.db, acme.tenantId, { username: 'changer', password: 'first-password-123' });
  const before = await getToken(t.app, acme, 'changer', 'first-password-123');
  assert.equal((await get('/api/OkToRun/PK', before)).status, 200);
  await t.app.services.units.transaction((tx) => changeMatePassword(tx, acme.tenantId, m.id, 'second-password-123', clock.now()));
  const stale = await post('/api/Solved', { taskId: 1 }, before);
  assert.equal(stale.status, 401);
  assertResponse(stale.body, { succeeded: false, code: 'invalid_token' }, 'old credentials');
  assert.match(String(stale.headers['www-authenticate']), /^Bearer realm="apimate", error="invalid_token"/);
  const fresh = await getToken(t.app, acme, 'changer', 'second-password-123');
  assert.equal((await get('/api/OkToRun/PK', fresh)).status, 200);

  const garbage = await get('/api/OkToRun/PK', 'not.a.token');
  assert.equal(garbage.status, 401);
  assert.match(String(garbage.headers['www-authenticate']), /error="invalid_token"/);

  clock.advance(3600 + 31);
  const expired = await get('/api/OkToRun/PK', fresh);
  assert.equal(expired.status, 401);
  assertKeys(
    expired.body,
    ['gateOpen', 'notBlockedDate', 'stoppedByErrors', 'tasksAvailable', 'okToRun', 'succeeded', 'message', 'code', 'requestId'],
    'expired OkToRun',
  );
  assert.equal(expired.body.code, 'invalid_token');
  assert.match(String(expired.headers['www-authenticate']), /^Bearer realm="apimate", error="invalid_token"/);
  assert.equal(expired.headers['content-type'], 'application/json; charset=utf-8');
});
