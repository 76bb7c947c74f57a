/**
 * Contract tests: the official UiPath activities (docs/mate-api.md §9 C16-C18).
 *
 * What the activities do (anymate/AnymateUiPathSDK: Anymate.UiPath/AnymateClient.cs and
 * Utilities/AnymateClient.cs, Tasks/*.cs, Rules/GetRules.cs, Runs/*.cs, Helpers/*.cs, Models/*.cs):
 * - the client is the .NET one with `/apimate/` paths: GETs `/apimate/<Endpoint>/{pk}`, POSTs with a
 *   ProcessKey `/apimate/<Endpoint>/{pk}`, body-only POSTs `/apimate/<Endpoint>/`; `Accept:
 *   application/json`, `Content-Type: application/json; charset=utf-8`; it does NOT check the status
 *   and deserializes whatever body comes back (Newtonsoft, case-insensitive into models);
 * - Create Task, Create And Take Task and Update Task take a Dictionary<string, string>: every value
 *   a string (.NET's "True" for booleans, the robot's locale for numbers); the activity adds
 *   `comment` (Create) or `newNote` (Update) and, for Update, `taskId` as a string, after the
 *   robot's keys; the Create Task JSON helper writes `activationDate` as DateTime.ToString("s")
 *   (no offset); Create Task sends a JSON array to CreateTasks and keeps the first id;
 * - Take Next Task and Create And Take Task read `JObject.Parse(answer)["taskId"]` (case-sensitive)
 *   with Convert.ToInt64: below 0 means an empty queue;
 * - Solve/Manual/Error Task send ApiAction {TaskId, Reason, Comment, OverwriteSecondsSaved,
 *   OverwriteEntries}, Retry Task ApiRetryAction (+ ActivationDate last), all nulls when the robot
 *   leaves the arguments empty (the activity overwrites the model's Comment = "" default with null);
 *   Finish Run ApiFinishRun {RunId, OverwriteSecondsSaved, OverwriteEntries}; Failure
 *   ApiProcessFailure {ProcessKey, Message} with Message null when not given;
 * - Get Rules parses the answer as a JObject; GetListFromJson reads a key (ignoring case) as
 *   List<string>, GetTableFromJson as List<Dictionary<string, object>>.
 */
import { readTask, readComments } from './helpers/rows.js';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { asPerson, personWithToken } from './helpers/people.js';
import { ManualClock } from '../src/lib/clock.js';
import { createProcess } from '../src/processes/service.js';
import {
  PK_FIELDS,
  PK_RULES,
  PK_TASK_KEYS,
  send,
  assertKeys,
  assertResponse,
  assertJsonHeaders,
  decodeUnverified,
  type Wire,
} from './helpers/contract.js';

// within 366 days of the 2030-01-31 activation dates the activities send
const clock = new ManualClock('2029-12-03T08:00:00.000Z');
let t: TestApp;
let tenant: SeededTenant;
let ui: UiPathClient;
let n = 0;

/** Anymate.UiPath AnymateClient (on premises), request for request. */
class UiPathClient {
  accessToken = '';
  constructor(
    readonly app: FastifyInstance,
    readonly tenant: SeededTenant,
    readonly prefix = '/apimate',
  ) {}

  async refresh(): Promise<void> {
    if (this.accessToken && decodeUnverified(this.accessToken).payload.exp > clock.now().getTime() / 1000 + 15 * 60) return;
    const form = new URLSearchParams({
      client_id: this.tenant.clientId,
      client_secret: this.tenant.apiSecret,
      grant_type: 'password',
      username: this.tenant.mateUsername,
      password: this.tenant.matePassword,
    });
    const r = await send(this.app, {
      method: 'POST',
      url: '/connect/token',
      headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
      payload: form.toString(),
    });
    if (r.status !== 200) throw new Error(`Could not authenticate: ${r.status}`);
    this.accessToken = r.body.access_token;
    assert.equal(decodeUnverified(this.accessToken).payload['auth.anymate.app/CustomerKey'], this.tenant.clientId);
  }

  async get(endpoint: string): Promise<Wire> {
    await this.refresh();
    const r = await send(this.app, {
      method: 'GET',
      url: `${this.prefix}/${endpoint}`,
      headers: { authorization: `Bearer ${this.accessToken}`, accept: 'application/json' },
    });
    assertJsonHeaders(r, endpoint);
    return r;
  }

  async post(endpoint: string, json: string): Promise<Wire> {
    await this.refresh();
    const r = await send(this.app, {
      method: 'POST',
      url: `${this.prefix}/${endpoint}`,
      headers: {
        authorization: `Bearer ${this.accessToken}`,
        accept: 'application/json',
        'content-type': 'application/json; charset=utf-8',
      },
      payload: Buffer.from(json, 'utf8'),
    });
    assertJsonHeaders(r, endpoint);
    return r;
  }

  /** Take Next Task: TaskId = Convert.ToInt64(jsonObject["taskId"]), QueueIsEmpty = TaskId < 0. */
  async takeNextTask(pk: string): Promise<{ taskId: number; queueIsEmpty: boolean; json: any }> {
    const r = await this.get(`TakeNext/${pk}`);
    return { taskId: toInt64(r.body, 'taskId'), queueIsEmpty: toInt64(r.body, 'taskId') < 0, json: r.body };
  }
}

/** JObject["taskId"] is case-sensitive; Convert.ToInt64 accepts a JSON integer (null would be 0). */
function toInt64(obj: any, key: string): number {
  assert.ok(Object.prototype.hasOwnProperty.call(obj, key), `the key is exactly "${key}": ${JSON.stringify(obj)}`);
  assert.equal(typeof obj[key], 'number', `"${key}" is a number`);
  assert.ok(Number.isInteger(obj[key]));
  return obj[key];
}

/** Newtonsoft's JSON of a Dictionary<string, string>: keys in insertion order, values strings. */
function dict(entries: Record<string, string>): string {
  for (const v of Object.values(entries)) assert.equal(typeof v, 'string');
  return JSON.stringify(entries);
}

/** ApiAction / ApiRetryAction as the activities fill them. */
function apiAction(
  taskId: number,
  reason: string | null = null,
  comment: string | null = null,
  retry?: { activationDate: string | null },
): string {
  const base: Record<string, unknown> = {
    TaskId: taskId,
    Reason: reason,
    Comment: comment,
    OverwriteSecondsSaved: null,
    OverwriteEntries: null,
  };
  if (retry) base.ActivationDate = retry.activationDate;
  return JSON.stringify(base);
}

before(async () => {
  t = await testApp({ clock });
  tenant = await seedTenant(t.store, 'uipath', { timeZone: 'Europe/Copenhagen' });
  ui = new UiPathClient(t.app, tenant);
});
after(() => t.close());

async function freshPk(): Promise<string> {
  const key = `PK${++n}`;
  await createProcess(t.store.db, tenant.tenantId, { processKey: key, fields: PK_FIELDS, rules: PK_RULES });
  return key;
}

const taskRow = (id: number) => readTask(t.store.db, id);

const comments = (id: number) => readComments(t.store.db, id);

/** Create Task with a DictPayload: ApiCreateTaskResponse {Succeeded, Message, TaskId}. */
async function createTask(pk: string, payload: Record<string, string>): Promise<Wire> {
  return ui.post(`CreateTask/${pk}`, dict(payload));
}

test('C17: Create Task with a string dictionary ("12.5", "True", activationDate without offset) stores 12.5, true and 10:00 tenant time', async () => {
  const pk = await freshPk();
  const r = await createTask(pk, {
    coreSystemKey: 'A',
    numberField: '12.5',
    flag: 'True',
    activationDate: '2030-01-31T10:00:00',
    comment: 'from UiPath',
  });
  assert.equal(r.status, 200, r.text);
  assertResponse(r.body, { succeeded: true, extra: ['taskId', 'queue'] }, 'CreateTask');
  const id = toInt64(r.body, 'taskId');
  assert.ok(id > 0);
  const row = await taskRow(id);
  assert.deepEqual(row.data, { coreSystemKey: 'A', numberField: 12.5, flag: true });
  assert.equal(new Date(row.activation_date).toISOString(), '2030-01-31T09:00:00.000Z', '10:00 in Copenhagen (UTC+1 in winter)');
  assert.deepEqual(await comments(id), ['from UiPath']);

  const lower = await createTask(pk, { coreSystemKey: 'B', numberField: '3', flag: 'False' });
  assert.equal((await taskRow(lower.body.taskId)).data.flag, false, '.NET\'s "False"');
});

test('C17: a decimal comma ("12,5") is refused with 400 invalid_field naming the field and the value; the answer still deserializes', async () => {
  const pk = await freshPk();
  const r = await createTask(pk, { coreSystemKey: 'A', numberField: '12,5' });
  assert.equal(r.status, 400);
  assertResponse(r.body, { succeeded: false, code: 'invalid_field', extra: ['taskId', 'errors'] }, 'CreateTask 12,5');
  assert.equal(toInt64(r.body, 'taskId'), -1, 'ApiCreateTaskResponse.TaskId is a long');
  assert.equal(r.body.errors.length, 1);
  const [e] = r.body.errors;
  assert.deepEqual([e.field, e.value, e.code], ['numberField', '12,5', 'invalid_field']);
  assert.match(r.body.message, /numberField/);
  assert.match(r.body.message, /12,5/);
  const { rows } = await sql<{
    n: number;
  }>`SELECT count(*)::int AS n FROM tasks t JOIN processes p ON p.id = t.process_id WHERE p.process_key = ${pk}`.execute(t.store.db);
  assert.equal(rows[0].n, 0, 'nothing created');
});

test('C17: a tenant reading numbers with a decimal comma takes "1234,56" and "1.234,56" from a Danish robot, and refuses "1.234" as ambiguous', async () => {
  const dk = await seedTenant(t.store, 'uipath-dk', { timeZone: 'Europe/Copenhagen' });
  const admin = await personWithToken(t.store, dk.tenantId, 'admin', 'admin', clock.now());
  const set = await asPerson(t.app, admin, { method: 'PATCH', url: '/v1/tenant', payload: { numberFormat: 'comma' } });
  assert.equal(set.statusCode, 200, set.body);
  assert.equal(set.json().numberFormat, 'comma');
  await createProcess(t.store.db, dk.tenantId, {
    processKey: 'DK',
    fields: [...PK_FIELDS, { name: 'count', type: 'integer' }],
  });
  const robot = new UiPathClient(t.app, dk);
  const make = (payload: Record<string, string>) => robot.post('CreateTask/DK', dict(payload));

  for (const [sent, stored] of [
    ['1234,56', 1234.56],
    ['1.234,56', 1234.56],
    ['-12.345.678,9', -12345678.9],
    ['1.234.567', 1234567],
    ['42', 42],
  ] as const) {
    const r = await make({ coreSystemKey: sent, numberField: sent });
    assert.equal(r.status, 200, `${sent}: ${JSON.stringify(r.body)}`);
    assertResponse(r.body, { succeeded: true, extra: ['taskId', 'queue'] }, `CreateTask ${sent}`);
    assert.equal((await taskRow(r.body.taskId)).data.numberField, stored, sent);
  }
  const counted = await make({ coreSystemKey: 'int', count: '1.000.000' });
  assert.equal((await taskRow(counted.body.taskId)).data.count, 1_000_000, 'an integer field reads thousands separators too');

  for (const sent of ['1.234', '1234.56', '12,5,0', '1,234.56']) {
    const r = await make({ coreSystemKey: 'x', numberField: sent });
    assert.equal(r.status, 400, `${sent} is refused`);
    assertResponse(r.body, { succeeded: false, code: 'invalid_field', extra: ['taskId', 'errors'] }, `CreateTask ${sent}`);
    assert.deepEqual([r.body.errors[0].field, r.body.errors[0].value], ['numberField', sent]);
  }
  const ambiguous = await make({ coreSystemKey: 'x', numberField: '1.234' });
  assert.match(ambiguous.body.message, /"1\.234" could be 1234 or 1,234/);
  const updated = await robot.post(
    'UpdateTask/',
    dict({ numberField: '2.500,5', newNote: 'da-DK', taskId: String((await robot.takeNextTask('DK')).taskId) }),
  );
  assertResponse(updated.body, { succeeded: true }, 'UpdateTask 2.500,5');

  // the tenant of the other tests still reads "12,5" as no number (the default, point)
  const pk = await freshPk();
  assert.equal((await createTask(pk, { coreSystemKey: 'A', numberField: '12,5' })).status, 400);
  assert.equal((await createTask(pk, { coreSystemKey: 'A', numberField: '1.234' })).status, 200);
});

test('C17: Create Task with a JSON array goes to CreateTasks and keeps the first id', async () => {
  const pk = await freshPk();
  const r = await ui.post(`CreateTasks/${pk}`, '[{"coreSystemKey":"X1","numberField":"1.5"},{"coreSystemKey":"X2","flag":"True"}]');
  assertResponse(r.body, { succeeded: true, extra: ['taskIds'] }, 'CreateTasks');
  assert.equal(r.body.taskIds.length, 2);
  for (const id of r.body.taskIds) assert.ok(Number.isInteger(id) && id > 0);
  assert.equal((await taskRow(r.body.taskIds[0])).data.coreSystemKey, 'X1');
});

test('C16: Update Task with a DictPayload, newNote and taskId as a string updates the field and adds the comment', async () => {
  const pk = await freshPk();
  for (const prefix of ['/apimate', '/api']) {
    const c = new UiPathClient(t.app, tenant, prefix);
    const created = await createTask(pk, { coreSystemKey: 'before', numberField: '1' });
    const taken = await c.takeNextTask(pk);
    assert.equal(taken.taskId, created.body.taskId);
    const body = dict({ coreSystemKey: 'x', newNote: 'note', taskId: String(taken.taskId) });
    assert.equal(body, `{"coreSystemKey":"x","newNote":"note","taskId":"${taken.taskId}"}`);
    const r = await c.post('UpdateTask/', body);
    assert.equal(r.status, 200, r.text);
    assertResponse(r.body, { succeeded: true }, `${prefix}/UpdateTask/`);
    const row = await taskRow(taken.taskId);
    assert.equal(row.data.coreSystemKey, 'x');
    assert.equal(row.data.numberField, 1, 'fields not sent are left alone');
    assert.deepEqual(await comments(taken.taskId), ['note']);
    const solved = await c.post('Solved/', apiAction(taken.taskId));
    assert.equal(solved.body.succeeded, true, solved.text);
  }
});

test('C18: Take Next Task and Create And Take Task answer with exactly "taskId", a number; an empty queue gives -1', async () => {
  const pk = await freshPk();
  await createTask(pk, { coreSystemKey: 'T1', numberField: '2.5', flag: 'True' });
  const next = await ui.takeNextTask(pk);
  assert.ok(next.taskId > 0);
  assert.equal(next.queueIsEmpty, false);
  assert.deepEqual(Object.keys(next.json), PK_TASK_KEYS);
  assert.deepEqual([next.json.coreSystemKey, next.json.numberField, next.json.flag], ['T1', 2.5, true]);
  assert.equal(next.json.activationDate, '2029-12-03T09:00:00.000+01:00', "the tenant's time zone with ms and offset");

  const cat = await ui.post(`CreateAndTakeTask/${pk}`, dict({ coreSystemKey: 'T2', numberField: '7', comment: 'made and taken' }));
  assert.equal(cat.status, 200, cat.text);
  const catId = toInt64(cat.body, 'taskId');
  assert.ok(catId > 0, 'Succeeded = taskId > 0');
  assert.deepEqual(Object.keys(cat.body), PK_TASK_KEYS);
  assert.equal(cat.body.numberField, 7);
  assert.equal(Number((await taskRow(catId)).locked_by_mate_id), tenant.mateId);
  assert.deepEqual(await comments(catId), ['made and taken']);

  for (const id of [next.taskId, catId]) assert.equal((await ui.post('Solved/', apiAction(id))).body.succeeded, true);
  const empty = await ui.takeNextTask(pk);
  assert.equal(empty.taskId, -1);
  assert.equal(empty.queueIsEmpty, true);
  assert.equal(toInt64(empty.json, 'runId'), -1);

  const refused = await ui.post('CreateAndTakeTask/NoSuchProcess', dict({ coreSystemKey: 'T3' }));
  assert.equal(refused.status, 404);
  assert.equal(toInt64(refused.body, 'taskId'), -1, 'the activity parses the 404 body too');
});

test('C18: Get Rules answers an object with processKey; lists are string arrays, tables object arrays', async () => {
  const pk = await freshPk();
  const r = await ui.get(`GetRules/${pk}`);
  assert.equal(r.status, 200);
  assertKeys(r.body, ['processKey', ...PK_RULES.map((x) => x.name)], 'GetRules');
  assert.equal(r.body.processKey, pk);
  // GetListFromJson(ArrayKey "Countries"): the key is found ignoring case, read as List<string>
  const listKey = Object.keys(r.body).find((k) => k.toLowerCase() === 'countries')!;
  assert.deepEqual(r.body[listKey], ['DK', 'SE']);
  assert.ok(r.body[listKey].every((x: unknown) => typeof x === 'string'));
  // GetTableFromJson: List<Dictionary<string, object>>
  assert.ok(Array.isArray(r.body.vendors));
  for (const row of r.body.vendors) assert.ok(row !== null && typeof row === 'object' && !Array.isArray(row));
  assert.deepEqual(r.body.vendors, [
    { name: 'Acme', account: '1000' },
    { name: 'Globex', account: '2000' },
  ]);
  assert.equal(r.body.mailTo, 'ops@example.com');
  assert.equal(r.body.limit, 250.5);
  assert.equal(r.body.dryRun, false);
  assert.equal(r.body.notes, '<p>Be <b>careful</b></p>');
  assert.equal(r.body.unsetRule, null);
});

test('Solve, Manual, Error and Retry Task send every property with nulls; Retry with a DateTimeOffset or null ActivationDate', async () => {
  const pk = await freshPk();
  const created = await ui.post(`CreateTasks/${pk}`, JSON.stringify(Array.from({ length: 5 }, (_, i) => ({ coreSystemKey: `H${i}` }))));
  const ids: number[] = created.body.taskIds;
  const taken: number[] = [];
  for (let i = 0; i < 5; i++) taken.push((await ui.takeNextTask(pk)).taskId);
  assert.deepEqual(taken, ids);

  const solve = await ui.post('Solved/', apiAction(ids[0]));
  assert.equal(apiAction(ids[0]), `{"TaskId":${ids[0]},"Reason":null,"Comment":null,"OverwriteSecondsSaved":null,"OverwriteEntries":null}`);
  assertResponse(solve.body, { succeeded: true, extra: ['queue', 'error'] }, 'Solve Task');
  const manual = await ui.post('Manual/', apiAction(ids[1], 'check', 'a comment'));
  assertResponse(manual.body, { succeeded: true, extra: ['queue', 'error'] }, 'Manual Task');
  const error = await ui.post('Error/', apiAction(ids[2], 'boom'));
  assert.deepEqual([error.body.queue, error.body.error], ['Manual', true]);
  const retryNow = await ui.post('Retry/', apiAction(ids[3], 'again', null, { activationDate: null }));
  assert.deepEqual([retryNow.body.succeeded, retryNow.body.queue], [true, 'Ready']);
  // Newtonsoft writes a DateTimeOffset without trailing zero digits
  const retryLater = await ui.post('Retry/', apiAction(ids[4], 'later', null, { activationDate: '2030-01-31T10:00:00+01:00' }));
  assert.deepEqual([retryLater.body.succeeded, retryLater.body.queue], [true, 'Ready'], retryLater.text);

  const rows = await Promise.all(ids.map(taskRow));
  assert.deepEqual(
    rows.map((r) => [r.queue, r.error, r.reason, r.retry_count]),
    [
      ['Solved', false, null, 0],
      ['Manual', false, 'check', 0],
      ['Manual', true, 'boom', 0],
      ['Ready', false, 'again', 1],
      ['Ready', false, 'later', 1],
    ],
  );
  assert.equal(new Date(rows[4].activation_date).toISOString(), '2030-01-31T09:00:00.000Z');
  assert.deepEqual(await comments(ids[0]), []);
  assert.deepEqual(await comments(ids[1]), ['a comment']);

  const again = await ui.post('Solved/', apiAction(ids[0]));
  assert.equal(again.status, 200);
  assertResponse(again.body, { succeeded: false, code: 'task_solved' }, 'Solve Task twice');
});

test('Ok To Run, Start Or Get Run, Finish Run and Failure (Message null) as the activities send them', async () => {
  const pk = await freshPk();
  const ok = await ui.get(`OkToRun/${pk}`);
  assert.equal(typeof ok.body.okToRun, 'boolean');
  assert.equal(ok.body.okToRun, false, 'no tasks yet');
  const run = await ui.get(`StartOrGetRun/${pk}`);
  assertKeys(run.body, ['processKey', 'runId', 'requestId'], 'StartOrGetRun');
  assert.ok(toInt64(run.body, 'runId') > 0);
  const failure = await ui.post('Failure/', JSON.stringify({ ProcessKey: pk, Message: null }));
  assertResponse(failure.body, { succeeded: true }, 'Failure');
  const { rows } = await sql<{
    message: string;
  }>`SELECT message FROM notifications WHERE kind = 'failure' ORDER BY id DESC LIMIT 1`.execute(t.store.db);
  assert.equal(rows[0].message, '', 'an absent message is ""');
  const fin = await ui.post('FinishRun/', JSON.stringify({ RunId: run.body.runId, OverwriteSecondsSaved: null, OverwriteEntries: null }));
  assertResponse(fin.body, { succeeded: true }, 'FinishRun');
  const again = await ui.post('FinishRun/', JSON.stringify({ RunId: run.body.runId, OverwriteSecondsSaved: null, OverwriteEntries: null }));
  assertResponse(again.body, { succeeded: false, code: 'run_finished' }, 'FinishRun twice');
});
