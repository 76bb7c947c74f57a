/**
 * Bad input on the Mate API (docs/mate-api.md §3, docs/mate-api.md §5): every fault answered with its status and code, in
 * the endpoint's normal shape, and changing nothing in the database.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { testApp, updateSettings, type TestApp } from './helpers/app.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { Mate, getToken } from './helpers/mate.js';
import { snapshot } from './helpers/snapshot.js';
import { queueIds, randomId } from './helpers/ids.js';
import { ManualClock } from '../src/lib/clock.js';
import { createMate } from '../src/accounts/service.js';
import { createProcess } from '../src/processes/service.js';
import { loadProcessByKey } from '../src/processes/store.js';
import { signClaims, CUSTOMER_KEY_CLAIM, USER_TYPE_CLAIM } from '../src/auth/tokens.js';

const clock = new ManualClock('2026-03-02T09:00:00.000Z'); // a Monday
const FIELDS = [
  { name: 'coreSystemKey', type: 'text' as const },
  { name: 'numberField', type: 'number' as const },
  { name: 'flag', type: 'boolean' as const },
];

let t: TestApp;
let tenant: SeededTenant;
let otherTenant: SeededTenant;
let mate: Mate;
let colleague: Mate;
let mateB: Mate;
/** tasks of process PK: held by `mate`, held by `colleague`, Solved, free in Ready */
let held: number, colleagues: number, solved: number, free: number;
/** a task of the other tenant */
let foreign: number;

before(async () => {
  t = await testApp({ clock });
  tenant = await seedTenant(t.store, 'bad', {
    processes: [{ processKey: 'PK', fields: FIELDS }, { processKey: 'Free' }, { processKey: 'Closed', fields: FIELDS }],
  });
  otherTenant = await seedTenant(t.store, 'other', { processes: [{ processKey: 'OtherKey', fields: FIELDS }] });
  const closed = (await loadProcessByKey(t.store.db, tenant.tenantId, 'Closed'))!;
  await updateSettings(t, tenant.tenantId, closed.id, { gate_open: false });
  await createMate(t.store.db, tenant.tenantId, { username: 'colleague', password: 'colleague-password-1' });
  mate = await Mate.signIn(t.app, tenant);
  colleague = await Mate.signIn(t.app, tenant, 'colleague', 'colleague-password-1');
  mateB = await Mate.signIn(t.app, otherTenant);

  held = await mate.create('PK', { coreSystemKey: 'held' });
  assert.equal((await mate.takeNext('PK')).taskId, held);
  colleagues = await mate.create('PK', { coreSystemKey: 'colleague' });
  assert.equal((await colleague.takeNext('PK')).taskId, colleagues);
  solved = await mate.create('PK', { coreSystemKey: 'solved' });
  assert.equal((await mate.takeNext('PK')).taskId, solved);
  assert.equal((await mate.post('/api/Solved', { taskId: solved })).body.succeeded, true);
  free = await mate.create('PK', { coreSystemKey: 'free' });
  foreign = await mateB.create('OtherKey', { coreSystemKey: 'theirs' });
});
after(() => t.close());

/** Runs a request and asserts that no row of any tenant changed. */
async function unchanged<T>(fn: () => Promise<T>): Promise<T> {
  const before = await snapshot(t.store.db);
  const r = await fn();
  assert.deepEqual(await snapshot(t.store.db), before, 'the request changed nothing');
  return r;
}

interface Raw {
  status: number;
  headers: Record<string, unknown>;
  body: any;
  text: string;
}

/** A request with exactly these headers (no defaults) and a raw body. */
async function raw(
  method: 'GET' | 'POST',
  url: string,
  opts: { token?: string | null; body?: string | Buffer; headers?: Record<string, string> } = {},
): Promise<Raw> {
  const headers: Record<string, string> = {
    ...(opts.token === null ? {} : { authorization: `Bearer ${opts.token ?? mate.token}` }),
    ...opts.headers,
  };
  const res = await t.app.inject({ method, url, headers, payload: opts.body });
  let body: unknown;
  try {
    body = JSON.parse(res.body);
  } catch {
    body = res.body;
  }
  return { status: res.statusCode, headers: res.headers, body, text: res.body };
}

const json = (body: string | Buffer, headers: Record<string, string> = {}) => ({
  body,
  headers: { 'content-type': 'application/json', ...headers },
});

/** Asserts a refusal: status, code, the endpoint's normal keys and, for a 400, `errors`. */
function refused(r: Raw, status: number, code: string, normal: Record<string, unknown> = {}): void {
  assert.equal(r.status, status, r.text);
  assert.match(String(r.headers['content-type']), /^application\/json; charset=utf-8$/);
  assert.equal(r.headers['cache-control'], 'no-store');
  assert.equal(r.body.succeeded, false);
  assert.equal(r.body.code, code, r.text);
  assert.equal(typeof r.body.message, 'string');
  assert.ok(r.body.message.length > 0);
  assert.equal(r.body.requestId, r.headers['x-request-id']);
  for (const [k, v] of Object.entries(normal)) assert.deepEqual(r.body[k], v, `${k} in ${r.text}`);
  if (status === 400) {
    assert.ok(Array.isArray(r.body.errors) && r.body.errors.length >= 1 && r.body.errors.length <= 100, r.text);
    for (const e of r.body.errors) {
      assert.equal(typeof e.code, 'string');
      assert.equal(typeof e.message, 'string');
    }
  } else {
    assert.equal(r.body.errors, undefined);
  }
}

const DUMMY = (pk: string) => ({ taskId: -1, reason: null, runId: -1, processKey: pk });

/** Every POST endpoint with its normal keys and a body it takes. */
// bareId: the endpoint also takes a bare positive integer as its id (the .NET client's Solved(taskId), FinishRun(runId))
const POSTS: { url: string; normal: Record<string, unknown>; array: boolean; bareId?: true }[] = [
  { url: '/api/CreateTask/PK', normal: { taskId: -1 }, array: false },
  { url: '/api/CreateTasks/PK', normal: { taskIds: [] }, array: true },
  { url: '/api/CreateAndTakeTask/PK', normal: DUMMY('PK'), array: false },
  { url: '/api/UpdateTask', normal: {}, array: false },
  { url: '/api/FinishRun', normal: {}, array: false, bareId: true },
  { url: '/api/Failure', normal: {}, array: false },
  ...['Solved', 'Manual', 'Error', 'Retry', 'SolvedAsync', 'ManualAsync', 'ErrorAsync', 'RetryAsync'].map((a) => ({
    url: `/api/${a}`,
    normal: {},
    array: false,
    bareId: true as const,
  })),
  { url: '/api/Return', normal: { results: [] }, array: true },
  { url: '/api/ExtendLock', normal: { lockedUntil: null }, array: false },
];

// ------------------------------------------------------------------------------------------------
// The body as a whole

test('malformed JSON, empty body, null and duplicate keys → 400 invalid_body on every POST endpoint', async () => {
  const bodies = [
    '{"coreSystemKey": "A",',
    '{"taskId": 1}}',
    "{'taskId': 1}",
    '[1, 2',
    '',
    '   ',
    'null',
    '{"taskId": 1, "TASKID": 2}',
    '[{"a": 1, "A": 2}]',
    '{"x": {"k": 1, "K": 2}}',
  ];
  for (const { url, normal } of POSTS) {
    for (const body of bodies) {
      const r = await unchanged(() => raw('POST', url, json(body)));
      refused(r, 400, 'invalid_body', normal);
      assert.equal(r.body.errors[0].code, 'invalid_body');
    }
  }
});

test('a syntax error is reported with its position; a duplicate key names both spellings', async () => {
  const r = await raw('POST', '/api/CreateTask/PK', json('{"coreSystemKey": "A" "numberField": 1}'));
  refused(r, 400, 'invalid_body', { taskId: -1 });
  assert.match(r.body.message, /position 22/);
  const d = await raw('POST', '/api/Solved', json(`{"taskId": ${held}, "TaskId": ${held}}`));
  refused(d, 400, 'invalid_body');
  assert.match(d.body.message, /"taskId".*"TaskId"/);
  assert.equal((await taskRow(held)).locked_by_mate_id, tenant.mateId, 'the task is still held');
});

test('wrong top-level type: an array where an object is expected, an object where an array is', async () => {
  for (const { url, normal, array, bareId } of POSTS) {
    // a bare number is an id where the endpoint takes one (contract-dotnet.test.ts); not a positive integer, it is refused there too
    const numbers = bareId ? ['-42', '4.5', '0'] : ['42'];
    const bodies = array
      ? ['{"taskId": 1}', '"x"', ...numbers, 'true']
      : [`[{"taskId": ${held}, "coreSystemKey": "A"}]`, '[]', '"x"', ...numbers, 'false'];
    for (const body of bodies) refused(await unchanged(() => raw('POST', url, json(body))), 400, 'invalid_body', normal);
  }
  const hint = await raw('POST', '/api/CreateTask/PK', json('[{"coreSystemKey": "A"}]'));
  assert.match(hint.body.message, /CreateTasks/, 'the message points an array to CreateTasks');
});

test('a GET ignores its body and Content-Type', async () => {
  const r = await raw('GET', '/api/OkToRun/PK', { body: '{not json', headers: { 'content-type': 'text/plain' } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.gateOpen, true);
  const g = await raw('GET', '/api/GetRules/PK', { body: '', headers: { 'content-type': 'application/json' } });
  assert.equal(g.status, 200, g.text);
});

test('oversized body → 413 payload_too_large, with the endpoint keys, nothing created', async () => {
  const big = JSON.stringify({ coreSystemKey: 'x'.repeat(t.config.bodyLimit) });
  const r = await unchanged(() => raw('POST', '/api/CreateTask/PK', json(big)));
  refused(r, 413, 'payload_too_large', { taskId: -1 });
  const many = JSON.stringify(Array.from({ length: 2 }, () => ({ coreSystemKey: 'y'.repeat(t.config.bodyLimit / 2) })));
  refused(await unchanged(() => raw('POST', '/api/CreateTasks/PK', json(many))), 413, 'payload_too_large', { taskIds: [] });
  // just under the limit is read
  const fits = JSON.stringify({ coreSystemKey: 'z'.repeat(t.config.bodyLimit - 100) });
  const ok = await raw('POST', '/api/CreateTask/PK', json(fits));
  assert.equal(ok.status, 200);
  assert.equal(ok.body.succeeded, true);
});

test('too many items: CreateTasks above 10,000 and Return above 1,000 → 400 invalid_body', async () => {
  refused(
    await unchanged(() => raw('POST', '/api/CreateTasks/PK', json(JSON.stringify(Array.from({ length: 10_001 }, () => ({})))))),
    400,
    'invalid_body',
    { taskIds: [] },
  );
  refused(
    await unchanged(() =>
      raw('POST', '/api/Return', json(JSON.stringify(Array.from({ length: 1_001 }, () => ({ taskId: held, action: 'Solved' }))))),
    ),
    400,
    'invalid_body',
    { results: [] },
  );
});

test('wrong or missing content type on a POST → 415 unsupported_media_type', async () => {
  const body = JSON.stringify({ coreSystemKey: 'A' });
  for (const type of [
    'text/plain',
    'application/x-www-form-urlencoded',
    'application/xml',
    'multipart/form-data; boundary=x',
    'application/jsonx',
    'json',
  ]) {
    refused(
      await unchanged(() => raw('POST', '/api/CreateTask/PK', { body, headers: { 'content-type': type } })),
      415,
      'unsupported_media_type',
      { taskId: -1 },
    );
  }
  // no Content-Type at all, with a body and without one
  refused(await unchanged(() => raw('POST', '/api/CreateTask/PK', { body })), 415, 'unsupported_media_type', { taskId: -1 });
  refused(await unchanged(() => raw('POST', '/api/Solved', {})), 415, 'unsupported_media_type');
  refused(await unchanged(() => raw('POST', '/api/CreateTasks/PK', {})), 415, 'unsupported_media_type', { taskIds: [] });
  // the accepted forms
  for (const type of [
    'application/json; charset=utf-8',
    'Application/JSON',
    'application/vnd.api+json',
    'application/json;charset=UTF-8',
  ]) {
    const r = await raw('POST', '/api/Solved', { body: JSON.stringify({ taskId: -5 }), headers: { 'content-type': type } });
    assert.equal(r.status, 200, `${type}: ${r.text}`);
    assert.equal(r.body.code, 'task_not_found');
  }
});

// ------------------------------------------------------------------------------------------------
// Values

test('unknown field → 400 unknown_field naming it; nothing created', async () => {
  const r = await unchanged(() => raw('POST', '/api/CreateTask/PK', json(JSON.stringify({ coreSystemKey: 'A', bogus: 1 }))));
  refused(r, 400, 'unknown_field', { taskId: -1 });
  assert.deepEqual(r.body.errors, [{ field: 'bogus', value: 1, code: 'unknown_field', message: r.body.errors[0].message }]);
  assert.match(r.body.message, /bogus/);
  // a null unknown key is ignored (the .NET client sends every property)
  const ok = await mate.post('/api/CreateAndTakeTask/PK', { coreSystemKey: 'nullable', bogus: null });
  assert.ok(ok.body.taskId > 0, JSON.stringify(ok.body));
  assert.equal((await mate.post('/api/Solved', { taskId: ok.body.taskId })).body.succeeded, true);
  // UpdateTask: refused before anything is written, the lock is not extended
  const u = await unchanged(() => raw('POST', '/api/UpdateTask', json(JSON.stringify({ taskId: held, Bogus: 'x', comment: 'c' }))));
  refused(u, 400, 'unknown_field');
  assert.equal(u.body.errors[0].field, 'Bogus', 'the key is named as sent');
});

test('unconvertible values → 400 invalid_field naming field and value', async () => {
  for (const [field, value] of [
    ['numberField', 'abc'],
    ['numberField', '12,5'],
    ['numberField', '1.234,5'],
    ['numberField', '1,000'],
    ['flag', 'yes'],
    ['numberField', { a: 1 }],
    ['coreSystemKey', ['a']],
    ['coreSystemKey', 'nul\u0000'],
    ['activationDate', '31/01/2024'],
    ['urgent', 'maybe'],
  ] as const) {
    const r = await unchanged(() => raw('POST', '/api/CreateTask/PK', json(JSON.stringify({ coreSystemKey: 'A', [field]: value }))));
    refused(r, 400, 'invalid_field', { taskId: -1 });
    assert.equal(r.body.errors.length, 1);
    assert.deepEqual(r.body.errors[0], { field, value, code: 'invalid_field', message: r.body.errors[0].message });
    assert.ok(r.body.message.includes(field), r.body.message);
    if (typeof value === 'string' && !value.includes('\u0000')) assert.ok(r.body.message.includes(value), r.body.message);
  }
  // every problem is listed; the message names the first
  const r = await unchanged(() => raw('POST', '/api/CreateTask/PK', json(JSON.stringify({ numberField: 'abc', flag: 'maybe', bogus: 1 }))));
  refused(r, 400, 'invalid_field', { taskId: -1 });
  assert.deepEqual(
    r.body.errors.map((e: any) => [e.field, e.value, e.code]),
    [
      ['numberField', 'abc', 'invalid_field'],
      ['flag', 'maybe', 'invalid_field'],
      ['bogus', 1, 'unknown_field'],
    ],
  );
  assert.equal(r.body.message, r.body.errors[0].message);
  // the same on UpdateTask, CreateAndTakeTask and the action values
  refused(
    await unchanged(() => raw('POST', '/api/UpdateTask', json(JSON.stringify({ taskId: held, numberField: '12,5' })))),
    400,
    'invalid_field',
  );
  refused(
    await unchanged(() => raw('POST', '/api/CreateAndTakeTask/PK', json(JSON.stringify({ numberField: 'abc' })))),
    400,
    'invalid_field',
    DUMMY('PK'),
  );
  for (const [key, value] of [
    ['overwriteEntries', -1],
    ['overwriteSecondsSaved', 2 ** 31],
    ['overwriteEntries', '1.5'],
    ['reason', { a: 1 }],
    ['comment', [1]],
  ] as const) {
    const s = await unchanged(() => raw('POST', '/api/Solved', json(JSON.stringify({ taskId: held, [key]: value }))));
    refused(s, 400, 'invalid_field');
    assert.deepEqual([s.body.errors[0].field, s.body.errors[0].value], [key, value]);
  }
  for (const seconds of [0, 86_401, 'abc', 1.5]) {
    const e = await unchanged(() => raw('POST', '/api/ExtendLock', json(JSON.stringify({ taskId: held, seconds }))));
    refused(e, 400, 'invalid_field', { lockedUntil: null });
    assert.deepEqual(e.body.errors[0].value, seconds);
  }
});

test('taskId, runId and processKey: absent or null → missing_field; unreadable → invalid_field', async () => {
  const taskRoutes = [
    'UpdateTask',
    'Solved',
    'Manual',
    'Error',
    'Retry',
    'SolvedAsync',
    'ManualAsync',
    'ErrorAsync',
    'RetryAsync',
    'ExtendLock',
  ];
  for (const name of taskRoutes) {
    for (const body of [{ reason: 'r' }, { taskId: null }]) {
      const r = await unchanged(() => raw('POST', `/api/${name}`, json(JSON.stringify(body))));
      refused(r, 400, 'missing_field');
      assert.equal(r.body.errors[0].field, 'taskId');
      assert.equal(r.body.errors[0].code, 'missing_field');
    }
    for (const taskId of ['abc', 1.5, '12x', true, [held], 2 ** 53, '']) {
      const r = await unchanged(() => raw('POST', `/api/${name}`, json(JSON.stringify({ taskId }))));
      refused(r, 400, 'invalid_field');
      assert.deepEqual([r.body.errors[0].field, r.body.errors[0].value], ['taskId', taskId], r.text);
    }
  }
  refused(await unchanged(() => raw('POST', '/api/FinishRun', json('{"overwriteEntries": 1}'))), 400, 'missing_field');
  const fr = await unchanged(() => raw('POST', '/api/FinishRun', json('{"RunId": "x"}')));
  refused(fr, 400, 'invalid_field');
  assert.deepEqual([fr.body.errors[0].field, fr.body.errors[0].value], ['runId', 'x']);
  for (const body of ['{"message": "m"}', '{"processKey": null}', '{"processKey": ""}']) {
    const f = await unchanged(() => raw('POST', '/api/Failure', json(body)));
    refused(f, 400, 'missing_field');
    assert.equal(f.body.errors[0].field, 'processKey');
  }
});

test('TakeMany count 0, 101, abc or 1.5 → 400 invalid_field, nothing taken', async () => {
  for (const count of ['0', '101', 'abc', '1.5', '-1']) {
    const r = await unchanged(() => raw('GET', `/api/TakeMany/PK?count=${count}`));
    refused(r, 400, 'invalid_field');
    assert.ok(!Array.isArray(r.body), 'a refusal is an object');
    assert.deepEqual([r.body.errors[0].field, r.body.errors[0].value], ['count', count]);
  }
});

test('CreateTasks with one bad item → 400 naming its index; nothing created', async () => {
  const r = await unchanged(() =>
    raw(
      'POST',
      '/api/CreateTasks/PK',
      json(JSON.stringify([{ coreSystemKey: 'a' }, { coreSystemKey: 'b', numberField: 'abc' }, { coreSystemKey: 'c' }])),
    ),
  );
  refused(r, 400, 'invalid_field', { taskIds: [] });
  assert.deepEqual(
    r.body.errors.map((e: any) => [e.index, e.field, e.value, e.code]),
    [[1, 'numberField', 'abc', 'invalid_field']],
  );
  assert.match(r.body.message, /1/);
  const notObject = await unchanged(() => raw('POST', '/api/CreateTasks/PK', json('[{"coreSystemKey": "a"}, "b", [1], null]')));
  refused(notObject, 400, 'invalid_body', { taskIds: [] });
  assert.deepEqual(
    notObject.body.errors.map((e: any) => e.index),
    [1, 2, 3],
  );
  // at most 100 problems are listed
  const many = await unchanged(() =>
    raw(
      'POST',
      '/api/CreateTasks/PK',
      json(JSON.stringify(Array.from({ length: 150 }, (_, i) => ({ coreSystemKey: `k${i}`, numberField: 'abc' })))),
    ),
  );
  refused(many, 400, 'invalid_field', { taskIds: [] });
  assert.equal(many.body.errors.length, 100);
  assert.deepEqual(
    many.body.errors.slice(0, 3).map((e: any) => e.index),
    [0, 1, 2],
  );
});

test('Return: bad items fail alone with 200 items_failed; a good item still runs', async () => {
  const r = await unchanged(() =>
    mate.post('/api/Return', [
      { action: 'Solved' },
      'x',
      { taskId: 'abc', action: 'Solved' },
      { taskId: held, action: 'Nope' },
      { taskId: held },
      { taskId: colleagues, action: 'solved' },
    ]),
  );
  assert.equal(r.status, 200);
  assert.equal(r.body.code, 'items_failed');
  assert.deepEqual(
    r.body.results.map((x: any) => [x.taskId, x.code]),
    [
      [null, 'missing_field'],
      [null, 'invalid_field'],
      [null, 'invalid_field'],
      [held, 'invalid_field'],
      [held, 'missing_field'],
      [colleagues, 'task_not_locked_by_you'],
    ],
  );
});

// ------------------------------------------------------------------------------------------------
// State: task refusals change nothing

async function taskRow(id: number): Promise<any> {
  const { rows } = await sql<any>`SELECT * FROM tasks WHERE id = ${id}`.execute(t.store.db);
  return rows[0];
}

test('a task not locked by the caller, a Solved task, a nonexistent one → 200 refusal, nothing changed', async () => {
  const cases: [number, string][] = [
    [colleagues, 'task_not_locked_by_you'],
    [free, 'task_not_locked_by_you'],
    [solved, 'task_solved'],
    [999_999_999, 'task_not_found'],
    [0, 'task_not_found'],
    [-1, 'task_not_found'],
  ];
  for (const [taskId, code] of cases) {
    for (const name of ['Solved', 'Manual', 'Error', 'Retry', 'SolvedAsync', 'RetryAsync']) {
      const r = await unchanged(() =>
        raw('POST', `/api/${name}`, json(JSON.stringify({ taskId, reason: 'r', comment: 'c', overwriteEntries: 3 }))),
      );
      refused(r, 200, code);
    }
    refused(await unchanged(() => raw('POST', '/api/ExtendLock', json(JSON.stringify({ taskId, seconds: 60 })))), 200, code, {
      lockedUntil: null,
    });
    if (taskId !== free)
      refused(await unchanged(() => raw('POST', '/api/UpdateTask', json(JSON.stringify({ taskId, coreSystemKey: 'changed' })))), 200, code);
  }
  // Retry with an unreadable activation date: the task stays locked by the caller
  const retry = await unchanged(() => raw('POST', '/api/Retry', json(JSON.stringify({ taskId: held, activationDate: 'soon' }))));
  refused(retry, 200, 'invalid_activation_date');
  assert.equal((await taskRow(held)).locked_by_mate_id, tenant.mateId);
});

test("another tenant's task id → 200 task_not_found, the same answer as a nonexistent id", async () => {
  const before = await snapshot(t.store.db, otherTenant.tenantId);
  // an id no task has: ask for it while it does not exist, then once it is the other tenant's (the
  // next random id drawn is made this one: test/helpers/ids.ts)
  const next = randomId();
  const ask = () => raw('POST', '/api/Solved', json(JSON.stringify({ taskId: next, reason: 'mine now' })));
  const missing = await ask();
  await queueIds(t.store.db, [next]);
  const theirs = await mateB.create('OtherKey', { coreSystemKey: 'theirs too' });
  assert.equal(theirs, next);
  const after1 = await snapshot(t.store.db, otherTenant.tenantId);
  const foreignAnswer = await unchanged(ask);
  refused(foreignAnswer, 200, 'task_not_found');
  const strip = (r: Raw) => r.text.replace(String(r.body.requestId), '<requestId>');
  assert.equal(strip(foreignAnswer), strip(missing));
  assert.notDeepEqual(after1, before);
  // the first foreign task, also through UpdateTask and ExtendLock
  refused(
    await unchanged(() => raw('POST', '/api/UpdateTask', json(JSON.stringify({ taskId: foreign, coreSystemKey: 'x' })))),
    200,
    'task_not_found',
  );
  refused(await unchanged(() => raw('POST', '/api/ExtendLock', json(JSON.stringify({ taskId: foreign })))), 200, 'task_not_found', {
    lockedUntil: null,
  });
});

// ------------------------------------------------------------------------------------------------
// Token, process, route

test("no token, garbage, expired, forged or another tenant's tampered token → 401 invalid_token with WWW-Authenticate", async () => {
  const none = await unchanged(() => raw('POST', '/api/CreateTask/PK', { token: null, ...json('{"coreSystemKey": "A"}') }));
  refused(none, 401, 'invalid_token', { taskId: -1 });
  assert.equal(none.headers['www-authenticate'], 'Bearer realm="apimate"');
  const withError = 'Bearer realm="apimate", error="invalid_token"';
  const tokenB = mateB.token;
  const [h, p, s] = tokenB.split('.');
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
  const tampered = `${h}.${Buffer.from(JSON.stringify({ ...claims, [CUSTOMER_KEY_CLAIM]: tenant.clientId, sub: String(tenant.mateId) })).toString('base64url')}.${s}`;
  const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${p}.`;
  const authorizations = [
    'Bearer garbage',
    'Bearer ',
    'Bearer',
    `Basic ${Buffer.from('a:b').toString('base64')}`,
    `Bearer ${tampered}`,
    `Bearer ${unsigned}`,
    `Token ${mate.token}`,
    `Bearer ${mate.token}x`,
  ];
  for (const authorization of authorizations) {
    const r = await unchanged(() =>
      raw('POST', '/api/CreateTask/PK', { token: null, ...json('{"coreSystemKey": "A"}', { authorization }) }),
    );
    refused(r, 401, 'invalid_token', { taskId: -1 });
    assert.equal(r.headers['www-authenticate'], withError, authorization);
  }
  // in the query only: not read
  refused(await raw('GET', `/api/OkToRun/PK?access_token=${mate.token}`, { token: null }), 401, 'invalid_token', {
    okToRun: false,
    gateOpen: false,
  });
  // expired: past exp plus the 30 s leeway
  const old = await getToken(t.app, tenant);
  clock.advance(3600 + 31);
  const expired = await unchanged(() => raw('GET', '/api/TakeNext/PK', { token: old }));
  refused(expired, 401, 'invalid_token', DUMMY('PK'));
  assert.equal(expired.headers['www-authenticate'], withError);
  assert.match(expired.body.message, /expired/);
  // a person's token (valid signature, not a Mate's) → 403 insufficient_scope
  const now = Math.floor(clock.now().getTime() / 1000);
  const person = await signClaims(t.app.services.auth.keys, {
    ...claims,
    iat: now,
    exp: now + 3600,
    [CUSTOMER_KEY_CLAIM]: tenant.clientId,
    [USER_TYPE_CLAIM]: 'User',
  });
  const p403 = await unchanged(() => raw('GET', '/api/StartRun/PK', { token: person }));
  refused(p403, 403, 'insufficient_scope', { processKey: 'PK', runId: -1 });
  assert.equal(p403.headers['www-authenticate'], 'Bearer error="insufficient_scope", scope="apimate"');
  // the clock moved past every token: sign in again for the tests that follow
  mate.token = await getToken(t.app, tenant);
  mateB.token = await getToken(t.app, otherTenant);
});

test("unknown ProcessKey → 404 process_not_found; another tenant's key gets the same body", async () => {
  for (const [method, url, normal] of [
    ['GET', '/api/OkToRun/Nope', { gateOpen: false, notBlockedDate: false, stoppedByErrors: false, tasksAvailable: false, okToRun: false }],
    ['GET', '/api/StartOrGetRun/Nope', { processKey: 'Nope', runId: -1 }],
    ['GET', '/api/TakeNext/Nope', DUMMY('Nope')],
    ['GET', '/api/TakeMany/Nope', {}],
    ['GET', '/api/GetRules/Nope', { processKey: 'Nope' }],
    ['POST', '/api/CreateTask/Nope', { taskId: -1 }],
    ['POST', '/api/CreateTasks/Nope', { taskIds: [] }],
    ['POST', '/api/CreateAndTakeTask/Nope', DUMMY('Nope')],
  ] as const) {
    const r = await unchanged(() => raw(method, url, method === 'POST' ? json(url.includes('Tasks/') ? '[]' : '{}') : {}));
    refused(r, 404, 'process_not_found', normal);
  }
  refused(await unchanged(() => raw('POST', '/api/Failure', json('{"processKey": "Nope", "message": "m"}'))), 404, 'process_not_found');
  // the same key before and after another tenant defines it: byte-identical but for the requestId
  const strip = (r: Raw) => r.text.replaceAll(String(r.body.requestId), '<requestId>');
  const urls = ['/api/TakeNext/Later', '/api/OkToRun/later', '/api/GetRules/Later'];
  const missing = await Promise.all(urls.map((u) => raw('GET', u)));
  const failureBefore = await raw('POST', '/api/Failure', json('{"processKey": "Later", "message": "m"}'));
  await createProcess(t.store.db, otherTenant.tenantId, { processKey: 'Later' });
  for (const [i, u] of urls.entries()) {
    const r = await unchanged(() => raw('GET', u));
    refused(r, 404, 'process_not_found');
    assert.equal(strip(r), strip(missing[i]));
  }
  const failureAfter = await unchanged(() => raw('POST', '/api/Failure', json('{"processKey": "Later", "message": "m"}')));
  assert.equal(strip(failureAfter), strip(failureBefore));
});

test('unknown route and wrong method → 404 route_not_found, before the token and the body are looked at', async () => {
  const cases: ['GET' | 'POST', string][] = [
    ['GET', '/api/Nope'],
    ['GET', '/api/Nope/PK'],
    ['POST', '/api/TakeNext/PK'],
    ['GET', '/api/CreateTask/PK'],
    ['GET', '/api/Solved'],
    ['GET', '/api/TakeNext'],
    ['GET', '/api/TakeNext/PK/extra'],
    ['GET', '/api//TakeNext/PK'],
    ['POST', '/api/CreateTask'],
    ['POST', '/api/Solved/PK'],
    ['GET', '/apimate/Nope'],
    ['GET', '/api/OkToRun//PK'],
  ];
  for (const [method, url] of cases) {
    for (const token of [mate.token, null, 'garbage']) {
      for (const body of method === 'POST'
        ? [json('{"taskId": 1}'), json('{bad'), { body: 'x', headers: { 'content-type': 'text/plain' } }]
        : [{}]) {
        const r = await unchanged(() => raw(method, url, { token, ...body }));
        assert.equal(r.status, 404, `${method} ${url}: ${r.text}`);
        assert.equal(r.body.code, 'route_not_found', `${method} ${url}: ${r.text}`);
        assert.equal(r.body.succeeded, false);
        assert.equal(r.body.requestId, r.headers['x-request-id']);
      }
    }
  }
});

test('check order: route, token, content type and size, JSON syntax, process, values, state', async () => {
  const noToken = { token: null };
  // bad token before content type, size and JSON
  refused(await raw('POST', '/api/CreateTask/PK', { ...noToken, ...json('{bad') }), 401, 'invalid_token', { taskId: -1 });
  refused(
    await raw('POST', '/api/CreateTask/PK', { token: 'garbage', body: '{bad', headers: { 'content-type': 'text/plain' } }),
    401,
    'invalid_token',
  );
  refused(
    await raw('POST', '/api/CreateTask/Nope', { ...noToken, ...json(JSON.stringify({ x: 'y'.repeat(t.config.bodyLimit) })) }),
    401,
    'invalid_token',
  );
  // content type before JSON syntax and process
  refused(
    await raw('POST', '/api/CreateTask/Nope', { body: '{bad', headers: { 'content-type': 'text/plain' } }),
    415,
    'unsupported_media_type',
  );
  // JSON syntax and top-level type before process
  refused(await raw('POST', '/api/CreateTask/Nope', json('{bad')), 400, 'invalid_body', { taskId: -1 });
  refused(await raw('POST', '/api/CreateTasks/Nope', json('{}')), 400, 'invalid_body', { taskIds: [] });
  refused(await raw('POST', '/api/CreateTask/Nope', json('{"a": 1, "A": 2}')), 400, 'invalid_body');
  // process before values
  refused(await unchanged(() => raw('POST', '/api/CreateTask/Nope', json('{"numberField": "abc"}'))), 404, 'process_not_found', {
    taskId: -1,
  });
  refused(await unchanged(() => raw('POST', '/api/CreateTasks/Nope', json('[{"numberField": "abc"}]'))), 404, 'process_not_found', {
    taskIds: [],
  });
  refused(
    await unchanged(() => raw('POST', '/api/CreateAndTakeTask/Nope', json('{"numberField": "abc"}'))),
    404,
    'process_not_found',
    DUMMY('Nope'),
  );
  refused(await unchanged(() => raw('GET', '/api/TakeMany/Nope?count=abc')), 404, 'process_not_found');
  refused(
    await unchanged(() => raw('POST', '/api/Failure', json('{"processKey": "Nope", "message": {"not": "text"}}'))),
    404,
    'process_not_found',
  );
  refused(
    await unchanged(() => raw('POST', '/api/CreateTask/Nope', json('{"numberField": "abc"}', { 'idempotency-key': '' }))),
    404,
    'process_not_found',
  );
  // values before state: a bad value on a closed gate, on a foreign or solved task
  const closed = await unchanged(() => raw('POST', '/api/CreateAndTakeTask/Closed', json('{"numberField": "abc"}')));
  refused(closed, 400, 'invalid_field', DUMMY('Closed'));
  refused(
    await unchanged(() => raw('POST', '/api/Solved', json(JSON.stringify({ taskId: solved, overwriteEntries: 'many' })))),
    400,
    'invalid_field',
  );
  refused(
    await unchanged(() => raw('POST', '/api/ExtendLock', json(JSON.stringify({ taskId: foreign, seconds: 0 })))),
    400,
    'invalid_field',
    { lockedUntil: null },
  );
  // and with good values, the state refusal
  const gate = await unchanged(() => raw('POST', '/api/CreateAndTakeTask/Closed', json('{"numberField": 1}')));
  assert.equal(gate.status, 200);
  assert.deepEqual([gate.body.taskId, gate.body.runId, gate.body.code], [-1, -1, 'gate_closed']);
});

// ------------------------------------------------------------------------------------------------
// Encoding and keys

test('a body that is not UTF-8 is read as ISO-8859-1', async () => {
  const body = Buffer.from('{"coreSystemKey":"\u00c6ble \u00c5s","numberField":"12.5"}', 'latin1');
  assert.ok(body.includes(0xc6) && body.includes(0xc5), 'Æ is the byte C6, Å the byte C5');
  const r = await raw('POST', '/api/CreateTask/PK', json(body));
  assert.equal(r.status, 200, r.text);
  const row = await taskRow(r.body.taskId);
  assert.deepEqual(row.data, { coreSystemKey: 'Æble Ås', numberField: 12.5 });
  // valid UTF-8 stays UTF-8
  const utf8 = await raw('POST', '/api/CreateTask/PK', json(Buffer.from('{"coreSystemKey":"Æble"}', 'utf8')));
  assert.equal((await taskRow(utf8.body.taskId)).data.coreSystemKey, 'Æble');
});

test('__proto__, constructor and prototype are ordinary keys: no prototype is polluted', async () => {
  const body = '{"__proto__": {"polluted": "yes"}, "constructor": {"prototype": {"polluted": "yes"}}, "prototype": 1, "a": 1}';
  const r = await raw('POST', '/api/CreateTask/Free', json(body));
  assert.equal(r.status, 200, r.text);
  assert.equal(({} as any).polluted, undefined);
  assert.equal((Object.prototype as any).polluted, undefined);
  const { rows } = await sql<{
    keys: string[];
  }>`SELECT array(SELECT jsonb_object_keys(data) ORDER BY 1) AS keys FROM tasks WHERE id = ${r.body.taskId}`.execute(t.store.db);
  assert.deepEqual(rows[0].keys, ['__proto__', 'a', 'constructor', 'prototype']);
  const task = await raw('GET', '/api/TakeNext/Free');
  assert.equal(task.body.taskId, r.body.taskId);
  assert.ok(Object.hasOwn(task.body, '__proto__'), 'answered as an own key');
  assert.deepEqual(task.body.__proto__, { polluted: 'yes' });
  assert.equal(({} as any).polluted, undefined);
  // on a process with fields they are unknown fields, named as sent
  const f = await unchanged(() => raw('POST', '/api/CreateTask/PK', json('{"coreSystemKey": "A", "__proto__": {"x": 1}}')));
  refused(f, 400, 'unknown_field', { taskId: -1 });
  assert.equal(f.body.errors[0].field, '__proto__');
  const u = await unchanged(() =>
    raw('POST', '/api/Solved', json(`{"taskId": ${colleagues}, "__proto__": {"taskId": ${held}}, "constructor": 1}`)),
  );
  refused(u, 200, 'task_not_locked_by_you');
  assert.equal(({} as any).taskId, undefined);
});
