/**
 * Contract tests: the official Python client (docs/mate-api.md §9 C1-C8).
 *
 * What the client does (anymate/AnymatePythonSDK: anymate/__init__.py, anymate/models.py):
 * - token: requests.post(f'{auth_uri}/connect/token', data={client_id, client_secret, grant_type,
 *   username, password}) (form-encoded, in that order), then AuthResponse(**result.json()) whatever
 *   the status: a class taking exactly access_token, expires_in, token_type, scope;
 * - it decodes the token without verifying it and signs in again when `exp` is less than 5 min away;
 * - every call: path `apimate/<Endpoint>[/<pk>]` with a trailing slash always added, headers
 *   `Authorization: Bearer …` and `Content-type: application/json`, also on GETs (no body);
 * - POST bodies are `data=json.dumps(x)`: a str body (", " and ": " separators, non-ASCII escaped);
 * - answers are read by key into pydantic models (extra keys ignored): AnymateResponse(succeeded:
 *   bool, message: str), AnymateCreateTaskResponse(+ taskId: int), AnymateCreateTasksResponse(+
 *   taskIds: list), AnymateOkToRun(gateOpen, tasksAvailable, notBlockedDate, okToRun: bool),
 *   AnymateRunResponse(processKey: str, runId: int); take_next, create_and_take_task and get_rules
 *   return the dict as is, and workers loop while task['taskId'] > 0.
 * TakeMany, Return and the *Async endpoints are not in the stored client version; they follow
 * docs/mate-api.md §7.6, docs/mate-api.md §7.12, docs/mate-api.md §7.13 and models.py's AnymateReturnTaskAction.
 */
import { readTask } from './helpers/rows.js';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { ManualClock } from '../src/lib/clock.js';
import { createProcess } from '../src/processes/service.js';
import {
  PK_FIELDS,
  PK_RULES,
  PK_TASK_KEYS,
  DATE_TIME,
  send,
  pyDumps,
  assertKeys,
  assertResponse,
  assertJsonHeaders,
  decodeUnverified,
  type Wire,
} from './helpers/contract.js';

const clock = new ManualClock('2026-03-02T09:00:00.000Z');
let t: TestApp;
let tenant: SeededTenant;
let py: PythonClient;
let n = 0;

/** application/x-www-form-urlencoded as Python's urlencode (quote_plus) writes it. */
function quotePlus(s: string): string {
  return encodeURIComponent(s)
    .replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase())
    .replace(/%20/g, '+');
}

const REQUESTS_HEADERS = {
  'user-agent': 'python-requests/2.31.0',
  'accept-encoding': 'gzip, deflate',
  accept: '*/*',
  connection: 'keep-alive',
};

/** The stored Python client, request for request, on the test clock. */
class PythonClient {
  accessToken: string | null = null;
  signIns = 0;
  constructor(
    readonly app: FastifyInstance,
    readonly tenant: SeededTenant,
    readonly prefix = 'apimate',
    readonly password = tenant.matePassword,
    readonly username = tenant.mateUsername,
  ) {}

  tokenRequest(): Promise<Wire> {
    const form = {
      client_id: this.tenant.clientId,
      client_secret: this.tenant.apiSecret,
      grant_type: 'password',
      username: this.username,
      password: this.password,
    };
    const payload = Object.entries(form)
      .map(([k, v]) => `${quotePlus(k)}=${quotePlus(v)}`)
      .join('&');
    return send(this.app, {
      method: 'POST',
      url: '/connect/token',
      headers: { ...REQUESTS_HEADERS, 'content-type': 'application/x-www-form-urlencoded' },
      payload,
    });
  }

  async authenticate(): Promise<void> {
    const r = await this.tokenRequest();
    // AuthResponse(**result.json()): exactly the four keys, or a TypeError
    assertKeys(r.body, ['access_token', 'expires_in', 'token_type', 'scope'], 'AuthResponse(**json)');
    this.accessToken = r.body.access_token;
    this.signIns++;
  }

  /** _get_or_refresh_access_token: a new token when none, or `exp` is less than 5 minutes away. */
  async refresh(): Promise<void> {
    if (this.accessToken) {
      const exp = decodeUnverified(this.accessToken).payload.exp ?? 0;
      if (exp - clock.now().getTime() / 1000 >= 5 * 60) return;
    }
    await this.authenticate();
  }

  url(endpoint: string): string {
    let e = `${this.prefix}/${endpoint}`;
    if (!e.endsWith('/')) e += '/';
    return `/${e}`;
  }

  async get(endpoint: string, extraHeaders: Record<string, string> = {}, payload?: string): Promise<Wire> {
    await this.refresh();
    return send(this.app, {
      method: 'GET',
      url: this.url(endpoint),
      headers: { ...REQUESTS_HEADERS, authorization: `Bearer ${this.accessToken}`, 'content-type': 'application/json', ...extraHeaders },
      payload,
    });
  }

  /** A str body: requests sends it as given (ASCII after json.dumps). */
  async post(endpoint: string, payload: string | Buffer): Promise<Wire> {
    await this.refresh();
    return send(this.app, {
      method: 'POST',
      url: this.url(endpoint),
      headers: { ...REQUESTS_HEADERS, authorization: `Bearer ${this.accessToken}`, 'content-type': 'application/json' },
      payload,
    });
  }

  postJson(endpoint: string, x: unknown): Promise<Wire> {
    return this.post(endpoint, pyDumps(x));
  }
}

before(async () => {
  t = await testApp({ clock });
  tenant = await seedTenant(t.store, 'py');
  await createProcess(t.store.db, tenant.tenantId, { processKey: 'Trigger', tasksEnabled: false });
  py = new PythonClient(t.app, tenant);
});
after(() => t.close());

async function freshPk(): Promise<string> {
  const key = `PK${++n}`;
  await createProcess(t.store.db, tenant.tenantId, { processKey: key, fields: PK_FIELDS, rules: PK_RULES });
  return key;
}

const taskRow = (id: number) => readTask(t.store.db, id);

/** create_task: AnymateResponse(**result) plus the id. */
async function createOne(pk: string, data: Record<string, unknown>): Promise<number> {
  const r = await py.postJson(`CreateTask/${pk}`, data);
  assert.equal(r.status, 200, r.text);
  assertResponse(r.body, { succeeded: true, extra: ['taskId', 'queue'] }, 'create_task');
  return r.body.taskId;
}

function assertTaskDict(task: any, pk: string, what: string): void {
  assert.deepEqual(Object.keys(task), PK_TASK_KEYS, `${what}: task keys in order`);
  assert.ok(Number.isInteger(task.taskId) && task.taskId > 0, what);
  assert.ok(Number.isInteger(task.runId) && task.runId > 0, what);
  assert.equal(task.processKey, pk);
  assert.match(task.activationDate, DATE_TIME);
  assert.equal(typeof task.urgent, 'boolean');
  assert.ok(Number.isInteger(task.retryCount));
}

test('C1: the token form as requests sends it gives exactly four keys, expires_in the integer 3600, no-store', async () => {
  const r = await py.tokenRequest();
  assert.equal(r.status, 200, r.text);
  assertKeys(r.body, ['access_token', 'expires_in', 'token_type', 'scope'], 'token answer');
  assert.equal(r.body.expires_in, 3600);
  assert.ok(Number.isInteger(r.body.expires_in), 'an integer, not "3600"');
  assert.equal(r.body.token_type, 'Bearer');
  assert.equal(r.body.scope, 'apimate');
  assert.equal(typeof r.body.access_token, 'string');
  assert.equal(r.headers['cache-control'], 'no-store');
  assert.equal(r.headers.pragma, 'no-cache');
  assert.match(String(r.headers['content-type']), /^application\/json/);
});

test('C2: the token decodes unverified with kid, integer exp = iat + 3600, string sub and jti; reused until < 5 min left', async () => {
  const c = new PythonClient(t.app, tenant);
  await c.authenticate();
  const first = c.accessToken!;
  const { header, payload, signature } = decodeUnverified(first);
  assert.ok(signature.length > 0, 'signed');
  assert.notEqual(header.alg, 'none');
  assert.equal(typeof header.kid, 'string');
  assert.ok(header.kid.length > 0);
  assert.ok(Number.isInteger(payload.iat) && Number.isInteger(payload.exp));
  assert.equal(payload.exp - payload.iat, 3600);
  assert.equal(payload.iat, Math.floor(clock.now().getTime() / 1000));
  assert.equal(typeof payload.sub, 'string');
  assert.equal(payload.sub, String(tenant.mateId));
  assert.equal(typeof payload.jti, 'string');
  assert.ok(Buffer.from(payload.jti, 'base64url').length >= 16, 'jti holds at least 128 bits');

  clock.advance(3600 - 300); // exactly 5 min left: the client keeps its token
  const ok = await c.get('OkToRun/Trigger');
  assert.equal(ok.status, 200, ok.text);
  assert.equal(c.accessToken, first);
  assert.equal(c.signIns, 1);

  clock.advance(1); // under 5 min: the client signs in again and gets a new token
  const again = await c.get('OkToRun/Trigger');
  assert.equal(again.status, 200, again.text);
  assert.equal(c.signIns, 2);
  assert.notEqual(c.accessToken, first);
  assert.notEqual(decodeUnverified(c.accessToken!).payload.jti, payload.jti);
  // the earlier token stays valid until it expires
  const old = await send(t.app, {
    method: 'GET',
    url: '/apimate/OkToRun/Trigger/',
    headers: { authorization: `Bearer ${first}`, 'content-type': 'application/json' },
  });
  assert.equal(old.status, 200, old.text);
  clock.advance(299 + 31); // past exp and the 30 s leeway
  const expired = await send(t.app, {
    method: 'GET',
    url: '/apimate/OkToRun/Trigger/',
    headers: { authorization: `Bearer ${first}`, 'content-type': 'application/json' },
  });
  assert.equal(expired.status, 401);
  assert.equal(expired.body.code, 'invalid_token');
});

for (const prefix of ['apimate', 'api']) {
  test(`C3: every endpoint under /${prefix}/ with a trailing slash, GETs with Content-type: application/json and no body → routed, 200`, async () => {
    const c = new PythonClient(t.app, tenant, prefix);
    const pk = await freshPk();
    const calls: [string, Wire][] = [];
    const call = async (what: string, w: Promise<Wire>) => {
      const r = await w;
      calls.push([what, r]);
      return r;
    };
    await call('OkToRun', c.get(`OkToRun/${pk}`));
    await call('GetRules', c.get(`GetRules/${pk}`));
    const run = await call('StartOrGetRun', c.get(`StartOrGetRun/${pk}`));
    await call('StartRun', c.get(`StartRun/${pk}`));
    await call('CreateTask', c.postJson(`CreateTask/${pk}`, { coreSystemKey: 'A', numberField: 1, flag: true }));
    await call(
      'CreateTasks',
      c.postJson(
        `CreateTasks/${pk}`,
        Array.from({ length: 9 }, (_, i) => ({ coreSystemKey: `B${i}`, numberField: i })),
      ),
    );
    const cat = await call('CreateAndTakeTask', c.postJson(`CreateAndTakeTask/${pk}`, { coreSystemKey: 'C' }));
    const next = await call('TakeNext', c.get(`TakeNext/${pk}`));
    const many = await call('TakeMany', c.get(`TakeMany/${pk}`));
    const ids: number[] = [next.body.taskId, ...many.body.map((x: any) => x.taskId)];
    assert.equal(ids.length, 10);
    await call('UpdateTask', c.postJson('UpdateTask', { taskId: cat.body.taskId, numberField: 2, comment: 'updated' }));
    await call('Solved', c.postJson('Solved', { taskId: cat.body.taskId, reason: 'ok' }));
    await call('Manual', c.postJson('Manual', { taskId: ids[0], reason: 'manual' }));
    await call('Error', c.postJson('Error', { taskId: ids[1], reason: 'error' }));
    await call('Retry', c.postJson('Retry', { taskId: ids[2], reason: 'retry' }));
    await call('SolvedAsync', c.postJson('SolvedAsync', { taskId: ids[3], reason: 'ok' }));
    await call('ManualAsync', c.postJson('ManualAsync', { taskId: ids[4], reason: 'manual' }));
    await call('ErrorAsync', c.postJson('ErrorAsync', { taskId: ids[5], reason: 'error' }));
    await call('RetryAsync', c.postJson('RetryAsync', { taskId: ids[6], reason: 'retry' }));
    await call('Return', c.postJson('Return', [{ taskId: ids[7], action: 'Solved', reason: 'r' }]));
    await call('ExtendLock', c.postJson('ExtendLock', { taskId: ids[8], seconds: 60 }));
    await call('Failure', c.postJson('Failure', { processKey: pk, message: 'boom' }));
    await call('FinishRun', c.postJson('FinishRun', { runId: run.body.runId }));
    // through a proxy the empty GET body may arrive with Content-Length: 0: still ignored
    await call('OkToRun (Content-Length: 0)', c.get(`OkToRun/${pk}`, { 'content-length': '0' }, ''));
    assert.equal(calls.length, 23);
    for (const [what, r] of calls) {
      assert.equal(r.status, 200, `${what}: ${r.text}`);
      assertJsonHeaders(r, what);
      if (!Array.isArray(r.body) && 'succeeded' in r.body) assert.equal(r.body.succeeded, true, `${what}: ${r.text}`);
    }
  });
}

test("C4: successes of every endpoint fit the client's models: succeeded, message, taskId, taskIds, processKey, runId, OkToRun booleans", async () => {
  const pk = await freshPk();
  const ok = await py.get(`OkToRun/${pk}`);
  // AnymateOkToRun(**result): four booleans (plus the ext stoppedByErrors and requestId)
  assertKeys(ok.body, ['gateOpen', 'notBlockedDate', 'stoppedByErrors', 'tasksAvailable', 'okToRun', 'requestId'], 'ok_to_run');
  for (const k of ['gateOpen', 'notBlockedDate', 'stoppedByErrors', 'tasksAvailable', 'okToRun'])
    assert.equal(typeof ok.body[k], 'boolean', k);
  assert.deepEqual([ok.body.gateOpen, ok.body.tasksAvailable, ok.body.okToRun], [true, false, false], 'nothing to do yet');

  const run = await py.get(`StartOrGetRun/${pk}`);
  // AnymateRunResponse(processKey: str, runId: int)
  assertKeys(run.body, ['processKey', 'runId', 'requestId'], 'start_or_get_run');
  assert.equal(run.body.processKey, pk);
  assert.ok(Number.isInteger(run.body.runId) && run.body.runId > 0);

  const created = await py.postJson(`CreateTask/${pk}`, { coreSystemKey: 'K-1', numberField: 3.5, flag: false });
  assertResponse(created.body, { succeeded: true, extra: ['taskId', 'queue'] }, 'create_task');
  assert.ok(Number.isInteger(created.body.taskId) && created.body.taskId > 0);
  assert.equal(created.body.queue, 'Ready');

  const batch = await py.postJson(`CreateTasks/${pk}`, [{ coreSystemKey: 'K-2' }, { coreSystemKey: 'K-3' }, { coreSystemKey: 'K-4' }]);
  assertResponse(batch.body, { succeeded: true, extra: ['taskIds'] }, 'create_tasks');
  assert.ok(Array.isArray(batch.body.taskIds));
  assert.equal(batch.body.taskIds.length, 3);
  assert.ok(batch.body.taskIds.every((id: unknown) => Number.isInteger(id)));
  const none = await py.postJson(`CreateTasks/${pk}`, []);
  assertResponse(none.body, { succeeded: true, extra: ['taskIds'] }, 'create_tasks []');
  assert.deepEqual(none.body.taskIds, []);

  const ok2 = await py.get(`OkToRun/${pk}`);
  assert.deepEqual([ok2.body.tasksAvailable, ok2.body.okToRun], [true, true]);

  const rules = await py.get(`GetRules/${pk}`);
  assert.equal(rules.body.processKey, pk);
  assert.deepEqual(rules.body.countries, ['DK', 'SE']);

  const task = await py.get(`TakeNext/${pk}`);
  assertTaskDict(task.body, pk, 'take_next');
  assert.equal(task.body.taskId, created.body.taskId);
  assert.equal(task.body.runId, run.body.runId, 'taken in the open run');
  assert.deepEqual([task.body.coreSystemKey, task.body.numberField, task.body.flag], ['K-1', 3.5, false]);

  const upd = await py.postJson('UpdateTask', { taskId: task.body.taskId, numberField: 4 });
  assertResponse(upd.body, { succeeded: true }, 'update_task');
  for (const action of ['Solved', 'Manual', 'Error', 'Retry']) {
    const tk = action === 'Solved' ? task.body : (await py.get(`TakeNext/${pk}`)).body;
    assert.ok(tk.taskId > 0, `a task for ${action}`);
    const r = await py.postJson(action, { taskId: tk.taskId, reason: action, comment: '' });
    assertResponse(r.body, { succeeded: true, extra: ['queue', 'error'] }, action);
    assert.equal(typeof r.body.error, 'boolean');
    assert.equal(typeof r.body.queue, 'string');
  }

  const cat = await py.postJson(`CreateAndTakeTask/${pk}`, { coreSystemKey: 'K-5', flag: 'true' });
  assertTaskDict(cat.body, pk, 'create_and_take_task');
  assert.equal(cat.body.flag, true);

  const fail = await py.postJson('Failure', { processKey: pk, message: 'Traceback (most recent call last): ...' });
  assertResponse(fail.body, { succeeded: true }, 'failure');
  const fin = await py.postJson('FinishRun', { runId: run.body.runId, overwriteSecondsSaved: null, overwriteEntries: null });
  assertResponse(fin.body, { succeeded: true }, 'finish_run');
});

test("C4: refusals keep each endpoint's keys: taskId -1, taskIds [], run processKey and runId -1, OkToRun booleans false", async () => {
  const pk = await freshPk();
  // 404 on an unknown process: the client ignores the status and reads the keys
  const ok = await py.get('OkToRun/NoSuchProcess');
  assert.equal(ok.status, 404);
  assertKeys(
    ok.body,
    ['gateOpen', 'notBlockedDate', 'stoppedByErrors', 'tasksAvailable', 'okToRun', 'succeeded', 'message', 'code', 'requestId'],
    'ok_to_run 404',
  );
  for (const k of ['gateOpen', 'notBlockedDate', 'stoppedByErrors', 'tasksAvailable', 'okToRun']) assert.equal(ok.body[k], false, k);
  assert.equal(ok.body.code, 'process_not_found');

  const run = await py.get('StartOrGetRun/NoSuchProcess');
  assert.equal(run.status, 404);
  assertResponse(run.body, { succeeded: false, code: 'process_not_found', extra: ['processKey', 'runId'] }, 'start_or_get_run 404');
  assert.equal(run.body.processKey, 'NoSuchProcess', 'the key as sent, never null');
  assert.equal(run.body.runId, -1);

  // take_next returns the dict: a worker's `while task['taskId'] > 0` must end on a 404 too
  const next = await py.get('TakeNext/NoSuchProcess');
  assert.equal(next.status, 404);
  assertKeys(next.body, ['taskId', 'reason', 'runId', 'processKey', 'succeeded', 'message', 'code', 'requestId'], 'take_next 404');
  assert.deepEqual([next.body.taskId, next.body.runId, next.body.processKey], [-1, -1, 'NoSuchProcess']);
  const many = await py.get('TakeMany/NoSuchProcess');
  assert.equal(many.status, 404);
  assertResponse(many.body, { succeeded: false, code: 'process_not_found' }, 'take_many 404 (an object)');
  const rules = await py.get('GetRules/NoSuchProcess');
  assert.equal(rules.status, 404);
  assert.equal(rules.body.processKey, 'NoSuchProcess');
  const badCount = await send(t.app, {
    method: 'GET',
    url: `/apimate/TakeMany/${pk}/?count=101`,
    headers: { authorization: `Bearer ${py.accessToken}`, 'content-type': 'application/json' },
  });
  assert.equal(badCount.status, 400);
  assert.equal(badCount.body.code, 'invalid_field');

  const disabled = await py.postJson('CreateTask/Trigger', { anything: 1 });
  assert.equal(disabled.status, 200);
  assertResponse(disabled.body, { succeeded: false, code: 'tasks_disabled', extra: ['taskId'] }, 'create_task tasks_disabled');
  assert.equal(disabled.body.taskId, -1);

  const bad = await py.postJson(`CreateTask/${pk}`, { coreSystemKey: 'x', numberField: 'abc' });
  assert.equal(bad.status, 400);
  assertResponse(bad.body, { succeeded: false, code: 'invalid_field', extra: ['taskId', 'errors'] }, 'create_task 400');
  assert.equal(bad.body.taskId, -1);

  const badBatch = await py.postJson(`CreateTasks/${pk}`, [{ coreSystemKey: 'ok' }, { numberField: 'abc' }]);
  assert.equal(badBatch.status, 400);
  assertResponse(badBatch.body, { succeeded: false, code: 'invalid_field', extra: ['taskIds', 'errors'] }, 'create_tasks 400');
  assert.deepEqual(badBatch.body.taskIds, []);
  assert.equal(badBatch.body.errors[0].index, 1);
  const disabledBatch = await py.postJson('CreateTasks/Trigger', [{ a: 1 }]);
  assertResponse(disabledBatch.body, { succeeded: false, code: 'tasks_disabled', extra: ['taskIds'] }, 'create_tasks tasks_disabled');
  assert.deepEqual(disabledBatch.body.taskIds, []);

  const cat = await py.postJson('CreateAndTakeTask/Trigger', { a: 1 });
  assert.equal(cat.status, 200);
  assert.equal(cat.body.taskId, -1);
  assert.equal(cat.body.runId, -1);
  assert.equal(cat.body.code, 'tasks_disabled');

  const fin = await py.postJson('FinishRun', { runId: 987654 });
  assertResponse(fin.body, { succeeded: false, code: 'run_not_found' }, 'finish_run');
  const failure = await py.postJson('Failure', { message: 'no key' });
  assert.equal(failure.status, 400);
  assertResponse(failure.body, { succeeded: false, code: 'missing_field', extra: ['errors'] }, 'failure 400');
  const upd = await py.postJson('UpdateTask', { taskId: 987654, numberField: 1 });
  assertResponse(upd.body, { succeeded: false, code: 'task_not_found' }, 'update_task');
  const noId = await py.postJson('UpdateTask', { numberField: 1 });
  assert.equal(noId.status, 400);
  assertResponse(noId.body, { succeeded: false, code: 'missing_field', extra: ['errors'] }, 'update_task without taskId');
  const ext = await py.postJson('ExtendLock', { taskId: 987654 });
  assertResponse(ext.body, { succeeded: false, code: 'task_not_found', extra: ['lockedUntil'] }, 'extend_lock');
  assert.equal(ext.body.lockedUntil, null);
  const id = await createOne(pk, { coreSystemKey: 'free' });
  for (const action of ['Solved', 'Manual', 'Error', 'Retry']) {
    const r = await py.postJson(action, { taskId: id, reason: 'r' });
    assert.equal(r.status, 200);
    assertResponse(r.body, { succeeded: false, code: 'task_not_locked_by_you' }, action);
  }
  assert.equal((await taskRow(id)).queue, 'Ready', 'refusals change nothing');
});

test('C5: a raw string body with numberField "12.5" is stored as the number 12.5; Æble in ISO-8859-1 and escaped by json.dumps is stored as Æble', async () => {
  const pk = await freshPk();
  const r = await py.post(`CreateTask/${pk}`, '{"coreSystemKey":"S-1","numberField":"12.5"}');
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.succeeded, true);
  const task = (await py.get(`TakeNext/${pk}`)).body;
  assert.equal(task.taskId, r.body.taskId);
  assert.equal(task.numberField, 12.5);
  assert.equal(typeof task.numberField, 'number');

  const latin1 = Buffer.from('{"coreSystemKey":"Æble","numberField":"1.5"}', 'latin1');
  assert.equal(latin1.length, 44, 'Æ is the single byte 0xC6');
  const a = await py.post(`CreateTask/${pk}`, latin1);
  assert.equal(a.status, 200, a.text);
  const escaped = pyDumps({ coreSystemKey: 'Æble' });
  assert.equal(escaped, '{"coreSystemKey": "\\u00c6ble"}');
  const b = await py.post(`CreateTask/${pk}`, escaped);
  assert.equal(b.status, 200, b.text);
  for (const id of [a.body.taskId, b.body.taskId]) assert.equal((await taskRow(id)).data.coreSystemKey, 'Æble');
  const next = (await py.get(`TakeNext/${pk}`)).body;
  assert.equal(next.coreSystemKey, 'Æble');
  assert.equal(next.numberField, 1.5);
});

test('C6: Solved on a Solved task answers 200, succeeded false, a message and task_solved', async () => {
  const pk = await freshPk();
  const id = await createOne(pk, { coreSystemKey: 'once' });
  const task = (await py.get(`TakeNext/${pk}`)).body;
  assert.equal(task.taskId, id);
  const first = await py.postJson('Solved', { taskId: id, reason: 'done' });
  assert.equal(first.body.succeeded, true);
  const second = await py.postJson('Solved', { taskId: id, reason: 'again', comment: 'twice' });
  assert.equal(second.status, 200);
  assertResponse(second.body, { succeeded: false, code: 'task_solved' }, 'solved twice');
  const row = await taskRow(id);
  assert.equal(row.reason, 'done', 'the refused call changed nothing');
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM task_comments WHERE task_id = ${id}`.execute(t.store.db);
  assert.equal(rows[0].n, 0);
});

test('C7: TakeMany/PK/ without count takes at most 10 locked tasks, then the rest, then []', async () => {
  const pk = await freshPk();
  const created = await py.postJson(
    `CreateTasks/${pk}`,
    Array.from({ length: 12 }, (_, i) => ({ coreSystemKey: `M${i}`, numberField: i })),
  );
  assert.equal(created.body.taskIds.length, 12);
  const first = await py.get(`TakeMany/${pk}`);
  assert.equal(first.status, 200);
  assert.ok(Array.isArray(first.body));
  assert.equal(first.body.length, 10, 'default count is 10');
  assert.deepEqual(
    first.body.map((x: any) => x.taskId),
    created.body.taskIds.slice(0, 10),
    'TakeNext order',
  );
  for (const task of first.body) assertTaskDict(task, pk, 'take_many item');
  assert.equal(new Set(first.body.map((x: any) => x.runId)).size, 1, 'one run');
  for (const task of first.body) assert.equal(Number((await taskRow(task.taskId)).locked_by_mate_id), tenant.mateId);
  const rest = await py.get(`TakeMany/${pk}`);
  assert.equal(rest.body.length, 2);
  const empty = await py.get(`TakeMany/${pk}`);
  assert.equal(empty.status, 200);
  assert.deepEqual(empty.body, []);
});

test('C7: Return and each *Async answer with Response keys (Return adds results)', async () => {
  const pk = await freshPk();
  await py.postJson(
    `CreateTasks/${pk}`,
    Array.from({ length: 6 }, (_, i) => ({ coreSystemKey: `R${i}` })),
  );
  const tasks = (await py.get(`TakeMany/${pk}`)).body;
  assert.equal(tasks.length, 6);

  const ret = await py.post('Return', `[{"taskId":${tasks[0].taskId},"action":"Solved","reason":"r"}]`);
  assert.equal(ret.status, 200, ret.text);
  assertResponse(ret.body, { succeeded: true, extra: ['results'] }, 'return');
  assert.equal(ret.body.results.length, 1);
  assert.equal(ret.body.results[0].taskId, tasks[0].taskId);
  assert.equal(ret.body.results[0].succeeded, true);
  assert.equal(typeof ret.body.results[0].message, 'string');
  assert.equal((await taskRow(tasks[0].taskId)).queue, 'Solved');
  assert.equal((await taskRow(tasks[0].taskId)).reason, 'r');

  // an AnymateReturnTaskAction as pydantic dumps it: every key, defaults included
  const full = await py.postJson('Return', [
    {
      taskId: tasks[1].taskId,
      action: 'Retry',
      reason: 'later',
      comment: '',
      activationDate: null,
      overwriteSecondsSaved: null,
      overwriteEntries: null,
    },
  ]);
  assertResponse(full.body, { succeeded: true, extra: ['results'] }, 'return (full model)');
  assert.equal((await taskRow(tasks[1].taskId)).retry_count, 1);

  const mixed = await py.postJson('Return', [
    { taskId: tasks[2].taskId, action: 'Manual', reason: 'm' },
    { taskId: tasks[0].taskId, action: 'Solved', reason: 'again' },
  ]);
  assert.equal(mixed.status, 200);
  assertResponse(mixed.body, { succeeded: false, code: 'items_failed', extra: ['results'] }, 'return with a failed item');
  assert.deepEqual(
    mixed.body.results.map((r: any) => [r.taskId, r.succeeded, r.code]),
    [
      [tasks[2].taskId, true, undefined],
      [tasks[0].taskId, false, 'task_solved'],
    ],
  );

  const expected: Record<string, [string, boolean]> = {
    SolvedAsync: ['Solved', false],
    ManualAsync: ['Manual', false],
    ErrorAsync: ['Manual', true],
  };
  let i = 3;
  for (const [endpoint, [queue, error]] of Object.entries(expected)) {
    const id = tasks[i++].taskId;
    const r = await py.postJson(endpoint, { taskId: id, reason: endpoint, comment: '' });
    assertResponse(r.body, { succeeded: true, extra: ['queue', 'error'] }, endpoint);
    assert.deepEqual([r.body.queue, r.body.error], [queue, error], endpoint);
    const row = await taskRow(id);
    assert.deepEqual([row.queue, row.error, row.locked_by_mate_id], [queue, error, null], `${endpoint} is done before the answer`);
  }
  const retryAsync = await py.postJson('RetryAsync', { taskId: tasks[1].taskId, reason: 'not mine any more' });
  assertResponse(retryAsync.body, { succeeded: false, code: 'task_not_locked_by_you' }, 'RetryAsync refusal');
});

test('C8: a wrong password and an unknown user give 400 invalid_grant with identical bodies', async () => {
  const wrong = await new PythonClient(t.app, tenant, 'apimate', 'not-the-password').tokenRequest();
  const unknown = await new PythonClient(t.app, tenant, 'apimate', 'whatever-password', 'nobody-here').tokenRequest();
  for (const r of [wrong, unknown]) {
    assert.equal(r.status, 400);
    assertKeys(r.body, ['error', 'error_description'], 'token error');
    assert.equal(r.body.error, 'invalid_grant');
    assert.equal(r.headers['cache-control'], 'no-store');
  }
  assert.equal(wrong.text, unknown.text, 'byte-identical bodies');
});
