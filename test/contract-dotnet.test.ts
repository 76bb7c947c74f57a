/**
 * Contract tests: the official .NET client and the .NET templates (docs/mate-api.md §9 C9-C15).
 *
 * What the client does (anymate/AnymateDotnetSDK: Anymate/AnymateService.cs, Anymate/Models/*.cs,
 * Anymate/Helpers/TokenValidator.cs):
 * - token: FormUrlEncodedContent of client_id, client_secret, grant_type, username, password, with
 *   `Accept: application/json`; reads access_token (expires_in declared `int`);
 * - before every call it reads the claim `auth.anymate.app/CustomerKey` (throws without it) and signs
 *   in again when `exp` is not more than 15 min away; TokenValidator also wants `aud` ∋ apimate and
 *   `auth.anymate.app/UserType`;
 * - GETs `/api/<Endpoint>/{pk}` (no trailing slash), POSTs with a ProcessKey `/api/<Endpoint>/{pk}`,
 *   body-only POSTs `/api/<Endpoint>/` (trailing slash); `Accept: application/json`; bodies are
 *   StringContent(json, UTF8, "application/json"), i.e. `Content-Type: application/json;
 *   charset=utf-8`; EnsureSuccessStatusCode throws on any non-2xx;
 * - bodies are Newtonsoft JSON of the models: PascalCase, every property, nulls included
 *   (AnymateTaskAction: TaskId, Reason, Comment = "", OverwriteSecondsSaved, OverwriteEntries;
 *   AnymateRetryTaskAction adds ActivationDate as a DateTimeOffset with 7 fraction digits;
 *   AnymateFinishRun: RunId, OverwriteSecondsSaved, OverwriteEntries; AnymateProcessFailure:
 *   ProcessKey, Message); a DataTable becomes an array of row objects keyed by column, DBNull → null.
 * The templates (anymate/AnymateDotnetTemplates: Anymate.Dotnet.Template.Worker/templates/
 * Handlers/FlowControl.cs, Models/AnymateTask.cs, Models/TaskAction.cs, Configuration/Enums.cs):
 * OkToRun → GetRules → StartOrGetRun (RunId stays -1 unless OkToRun said yes) → TakeNext into
 * AnymateTask {long TaskId, string Reason, long RunId, string ProcessKey} while TaskId > 0 → hand
 * back the template's own TaskAction object (with the extra keys AnymateEndpoint, an enum sent as a
 * number, and ActivationDate, and Comment null) → FinishRun(RunId) after TakeNext closed the run;
 * on an exception, Failure(processKey, "Got Exception with msg: … // stackTrace: …").
 */
import { readTask, readComments } from './helpers/rows.js';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import { testApp, updateSettings, type TestApp } from './helpers/app.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { ManualClock } from '../src/lib/clock.js';
import { createProcess } from '../src/processes/service.js';
import { loadProcessByKey, type ProcessSettingsPatch } from '../src/processes/store.js';
import {
  PK_FIELDS,
  PK_RULES,
  PK_TASK_KEYS,
  DATE_TIME,
  send,
  assertKeys,
  assertResponse,
  assertJsonHeaders,
  decodeUnverified,
  type Wire,
} from './helpers/contract.js';

const clock = new ManualClock('2026-03-02T09:00:00.000Z');
let t: TestApp;
let tenant: SeededTenant;
let net: DotnetClient;
let n = 0;

/** FormUrlEncodedContent: Uri.EscapeDataString, spaces as '+'. */
function formEncode(s: string): string {
  return encodeURIComponent(s)
    .replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase())
    .replace(/%20/g, '+');
}

/** AnymateService in on-premises mode, request for request, on the test clock. */
class DotnetClient {
  accessToken = '';
  signIns = 0;
  readonly paths: string[] = [];
  constructor(
    readonly app: FastifyInstance,
    readonly tenant: SeededTenant,
  ) {}

  tokenRequest(): Promise<Wire> {
    const form = {
      client_id: this.tenant.clientId,
      client_secret: this.tenant.apiSecret,
      grant_type: 'password',
      username: this.tenant.mateUsername,
      password: this.tenant.matePassword,
    };
    const payload = Object.entries(form)
      .map(([k, v]) => `${formEncode(k)}=${formEncode(v)}`)
      .join('&');
    return send(this.app, {
      method: 'POST',
      url: '/connect/token',
      headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
      payload,
    });
  }

  /** GetOrRefreshAccessTokenAsync + GetCustomerKeyFromToken. */
  async refresh(): Promise<void> {
    if (!this.accessToken || decodeUnverified(this.accessToken).payload.exp <= clock.now().getTime() / 1000 + 15 * 60) {
      const r = await this.tokenRequest();
      if (r.status < 200 || r.status > 299) throw new Error(`Could not authenticate: ${r.status}`);
      this.accessToken = r.body.access_token;
      this.signIns++;
    }
    const claims = decodeUnverified(this.accessToken).payload;
    const customerKey = claims['auth.anymate.app/CustomerKey'];
    if (typeof customerKey !== 'string' || !customerKey.trim()) throw new Error('Token invalid');
  }

  /** EnsureSuccessStatusCode: anything but 2xx throws in the client. */
  private ensureSuccess(r: Wire, path: string): Wire {
    if (r.status < 200 || r.status > 299) throw new Error(`${path}: HTTP ${r.status} ${r.text}`);
    return r;
  }

  async get(path: string): Promise<Wire> {
    await this.refresh();
    this.paths.push(`GET ${path}`);
    const r = await send(this.app, {
      method: 'GET',
      url: path,
      headers: { authorization: `Bearer ${this.accessToken}`, accept: 'application/json' },
    });
    return this.ensureSuccess(r, path);
  }

  async post(path: string, json: string): Promise<Wire> {
    await this.refresh();
    this.paths.push(`POST ${path}`);
    const r = await send(this.app, {
      method: 'POST',
      url: path,
      headers: {
        authorization: `Bearer ${this.accessToken}`,
        accept: 'application/json',
        'content-type': 'application/json; charset=utf-8',
      },
      payload: Buffer.from(json, 'utf8'),
    });
    return this.ensureSuccess(r, path);
  }

  okToRun = (pk: string) => this.get(`/api/OkToRun/${pk}`);
  getRules = (pk: string) => this.get(`/api/GetRules/${pk}`);
  startOrGetRun = (pk: string) => this.get(`/api/StartOrGetRun/${pk}`);
  takeNext = (pk: string) => this.get(`/api/TakeNext/${pk}`);
  createTask = (pk: string, json: string) => this.post(`/api/CreateTask/${pk}`, json);
  createTasks = (pk: string, json: string) => this.post(`/api/CreateTasks/${pk}`, json);
  createAndTakeTask = (pk: string, json: string) => this.post(`/api/CreateAndTakeTask/${pk}`, json);
  updateTask = (json: string) => this.post('/api/UpdateTask/', json);
  action = (endpoint: HandBack, json: string) => this.post(`/api/${endpoint}/`, json);
  finishRun = (json: string) => this.post('/api/FinishRun/', json);
  failure = (json: string) => this.post('/api/Failure/', json);
}

type HandBack = 'Solved' | 'Manual' | 'Error' | 'Retry' | 'SolvedAsync' | 'ManualAsync' | 'ErrorAsync' | 'RetryAsync';

/** Newtonsoft's JSON of AnymateTaskAction. */
function taskAction(
  taskId: number,
  reason: string | null,
  comment: string | null = '',
  seconds: number | null = null,
  entries: number | null = null,
): string {
  return JSON.stringify({ TaskId: taskId, Reason: reason, Comment: comment, OverwriteSecondsSaved: seconds, OverwriteEntries: entries });
}

/** The worker template's own TaskAction, posted as is. */
function templateTaskAction(endpoint: 0 | 1 | 2 | 3, taskId: number, reason: string | null, comment: string | null = null): string {
  return JSON.stringify({
    AnymateEndpoint: endpoint,
    ActivationDate: null,
    TaskId: taskId,
    Reason: reason,
    Comment: comment,
    OverwriteSecondsSaved: null,
    OverwriteEntries: null,
  });
}

before(async () => {
  t = await testApp({ clock });
  tenant = await seedTenant(t.store, 'dotnet');
  net = new DotnetClient(t.app, tenant);
});
after(() => t.close());

async function freshPk(patch: ProcessSettingsPatch = {}): Promise<string> {
  const key = `PK${++n}`;
  const p = await createProcess(t.store.db, tenant.tenantId, { processKey: key, fields: PK_FIELDS, rules: PK_RULES });
  if (Object.keys(patch).length) await updateSettings(t, tenant.tenantId, p.id, patch);
  return key;
}

const taskRow = (id: number) => readTask(t.store.db, id);

const comments = (id: number) => readComments(t.store.db, id);

/** JsonConvert.DeserializeObject<AnymateTask>: long TaskId and long RunId must not be null. */
function asAnymateTask(body: any): { TaskId: number; Reason: string | null; RunId: number; ProcessKey: string } {
  for (const k of ['taskId', 'runId']) {
    assert.ok(Number.isInteger(body[k]), `${k} must be an integer for a long, got ${JSON.stringify(body[k])}`);
  }
  assert.ok(body.reason === null || typeof body.reason === 'string');
  assert.equal(typeof body.processKey, 'string');
  return { TaskId: body.taskId, Reason: body.reason, RunId: body.runId, ProcessKey: body.processKey };
}

test('C13: the token carries CustomerKey = Client Id, aud ∋ apimate, UserType Mate, and more than 15 min to live', async () => {
  const r = await net.tokenRequest();
  assert.equal(r.status, 200);
  assert.ok(Number.isInteger(r.body.expires_in), 'expires_in is declared int');
  const { payload } = decodeUnverified(r.body.access_token);
  assert.equal(payload['auth.anymate.app/CustomerKey'], tenant.clientId);
  const aud = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
  assert.ok(aud.includes('apimate'), `aud ${JSON.stringify(payload.aud)}`);
  assert.equal(payload['auth.anymate.app/UserType'], 'Mate');
  assert.ok(payload.exp - clock.now().getTime() / 1000 > 15 * 60, 'otherwise the client signs in before every call');

  // the client reuses the token until 15 min are left, then signs in again; both tokens work
  const c = new DotnetClient(t.app, tenant);
  const pk = await freshPk();
  await c.okToRun(pk);
  const first = c.accessToken;
  clock.advance(45 * 60 - 1);
  await c.okToRun(pk);
  assert.equal(c.signIns, 1);
  clock.advance(1);
  await c.okToRun(pk);
  assert.equal(c.signIns, 2);
  assert.notEqual(c.accessToken, first);
  const old = await send(t.app, {
    method: 'GET',
    url: `/api/OkToRun/${pk}`,
    headers: { authorization: `Bearer ${first}`, accept: 'application/json' },
  });
  assert.equal(old.status, 200);
});

test('C9: Solved/ with the client\'s TaskAction (Comment "", null overrides) solves with no comment and the default KPI', async () => {
  const pk = await freshPk({
    kpi: {
      secondsSavedPerTask: 120,
      entriesPerTask: 1,
      secondsSavedPerEntry: null,
      secondsSavedManual: 0,
      secondsSavedError: 0,
      secondsSavedRetry: 0,
    },
  });
  const created = await net.createTask(pk, JSON.stringify({ CoreSystemKey: 'S-9', NumberField: 9, Flag: true }));
  const task = asAnymateTask((await net.takeNext(pk)).body);
  assert.equal(task.TaskId, created.body.taskId);
  const body = taskAction(task.TaskId, 'x');
  assert.equal(body, `{"TaskId":${task.TaskId},"Reason":"x","Comment":"","OverwriteSecondsSaved":null,"OverwriteEntries":null}`);
  const r = await net.action('Solved', body);
  assert.equal(r.status, 200);
  assertJsonHeaders(r);
  assertResponse(r.body, { succeeded: true, extra: ['queue', 'error'] }, 'Solved');
  assert.deepEqual([r.body.queue, r.body.error], ['Solved', false]);
  const row = await taskRow(task.TaskId);
  assert.deepEqual([row.queue, row.reason, row.locked_by_mate_id], ['Solved', 'x', null]);
  assert.deepEqual(await comments(task.TaskId), [], 'Comment "" is no comment');
  const { rows } = await sql<{
    outcome: string;
    entries: number;
    seconds_saved: string;
  }>`SELECT outcome, entries, seconds_saved FROM kpi_events WHERE task_id = ${task.TaskId}`.execute(t.store.db);
  assert.deepEqual(
    rows.map((k) => [k.outcome, k.entries, Number(k.seconds_saved)]),
    [['Solved', 1, 120]],
  );
});

test('C9: the worker template posts its own TaskAction (AnymateEndpoint, ActivationDate, Comment null): extra keys are ignored', async () => {
  const pk = await freshPk();
  await net.createTasks(pk, JSON.stringify([{ CoreSystemKey: 'W-1' }, { CoreSystemKey: 'W-2' }]));
  const a = asAnymateTask((await net.takeNext(pk)).body);
  const manual = await net.action('Manual', templateTaskAction(1, a.TaskId, 'needs a person', 'see the PDF'));
  assertResponse(manual.body, { succeeded: true, extra: ['queue', 'error'] }, 'Manual');
  assert.deepEqual([manual.body.queue, manual.body.error], ['Manual', false]);
  assert.deepEqual(await comments(a.TaskId), ['see the PDF']);
  const b = asAnymateTask((await net.takeNext(pk)).body);
  const solved = await net.action('Solved', templateTaskAction(0, b.TaskId, null));
  assertResponse(solved.body, { succeeded: true, extra: ['queue', 'error'] }, 'Solved');
  const row = await taskRow(b.TaskId);
  assert.deepEqual([row.queue, row.reason], ['Solved', null], 'Reason null = no reason');
  assert.deepEqual(await comments(b.TaskId), []);
});

test("C9, C11: the client's id-only overloads: Solved(taskId) … RetryAsync(taskId) and FinishRun(runId) send a bare number, read as { taskId } / { runId }", async () => {
  // C# overload resolution picks Solved<T>(T action) for a long: Newtonsoft writes the number alone
  const pk = await freshPk();
  const expected: Record<HandBack, string> = {
    Solved: 'Solved',
    Manual: 'Manual',
    Error: 'Manual',
    Retry: 'Ready',
    SolvedAsync: 'Solved',
    ManualAsync: 'Manual',
    ErrorAsync: 'Manual',
    RetryAsync: 'Ready',
  };
  const run = await net.startOrGetRun(pk);
  for (const [endpoint, queue] of Object.entries(expected) as [HandBack, string][]) {
    await net.createTask(pk, JSON.stringify({ CoreSystemKey: endpoint }));
    const task = asAnymateTask((await net.takeNext(pk)).body);
    const r = await net.action(endpoint, JSON.stringify(task.TaskId));
    assertResponse(r.body, { succeeded: true, extra: ['queue', 'error'] }, `${endpoint}(taskId)`);
    const row = await taskRow(task.TaskId);
    assert.deepEqual([row.queue, row.locked_by_mate_id], [queue, null], endpoint);
    assert.equal(row.error, endpoint.startsWith('Error'), `${endpoint}: the Error flag`);
  }
  const fin = await net.finishRun(JSON.stringify(run.body.runId));
  assertResponse(fin.body, { succeeded: true }, 'FinishRun(runId)');
  const again = await net.finishRun(JSON.stringify(run.body.runId));
  assertResponse(again.body, { succeeded: false, code: 'run_finished' }, 'FinishRun(runId) twice');

  // only a positive whole number stands for an id; anything else is still no object
  for (const body of ['0', '-5', '1.5', '"12"', 'true']) {
    const r = await send(t.app, {
      method: 'POST',
      url: '/api/Solved/',
      headers: { authorization: `Bearer ${net.accessToken}`, 'content-type': 'application/json; charset=utf-8' },
      payload: body,
    });
    assert.equal(r.status, 400, body);
    assert.equal(r.body.code, 'invalid_body', body);
    assert.match(r.body.message, /a bare positive taskId/);
  }
  // endpoints without an id-only overload keep refusing a number
  const upd = await send(t.app, {
    method: 'POST',
    url: '/api/UpdateTask/',
    headers: { authorization: `Bearer ${net.accessToken}`, 'content-type': 'application/json; charset=utf-8' },
    payload: '5',
  });
  assert.equal(upd.status, 400);
});

test('C11: FinishRun with RunId -1 (OkToRun said no) answers 200 run_not_found', async () => {
  const body = JSON.stringify({ RunId: -1, OverwriteSecondsSaved: null, OverwriteEntries: null });
  assert.equal(body, '{"RunId":-1,"OverwriteSecondsSaved":null,"OverwriteEntries":null}');
  const r = await net.finishRun(body);
  assert.equal(r.status, 200, 'EnsureSuccessStatusCode would throw otherwise');
  assertResponse(r.body, { succeeded: false, code: 'run_not_found' }, 'FinishRun -1');
});

test('C11, C12, C14: the worker template end to end: routed paths, the dummy task, FinishRun after TakeNext closed the run', async () => {
  const net = new DotnetClient(t.app, tenant);
  const pk = await freshPk();
  const created = await net.createTasks(
    pk,
    JSON.stringify([
      { CoreSystemKey: 'T-1', NumberField: 1.25, Flag: false },
      { CoreSystemKey: 'T-2', NumberField: 2, Flag: true },
    ]),
  );
  assertResponse(created.body, { succeeded: true, extra: ['taskIds'] }, 'CreateTasks');

  // InitializeAnymate
  const ok = await net.okToRun(pk);
  assertKeys(ok.body, ['gateOpen', 'notBlockedDate', 'stoppedByErrors', 'tasksAvailable', 'okToRun', 'requestId'], 'OkToRun');
  assert.equal(ok.body.okToRun, true);
  const rules = await net.getRules(pk);
  assert.equal(rules.body.processKey, pk);
  const run = await net.startOrGetRun(pk);
  assertKeys(run.body, ['processKey', 'runId', 'requestId'], 'StartOrGetRun');
  assert.ok(run.body.runId >= 1);
  const runId: number = run.body.runId;

  // the work loop
  let task = asAnymateTask((await net.takeNext(pk)).body);
  const handled: number[] = [];
  while (task.TaskId > 0) {
    assert.equal(task.RunId, runId);
    assert.equal(task.ProcessKey, pk);
    const r = await net.action('Solved', templateTaskAction(0, task.TaskId, 'Solved by worker'));
    assert.equal(r.body.succeeded, true, r.text);
    handled.push(task.TaskId);
    task = asAnymateTask((await net.takeNext(pk)).body);
  }
  assert.deepEqual(handled, created.body.taskIds);

  // C14: the dummy: -1 ids, no field keys, no null integers
  const dummy = await net.takeNext(pk);
  assertKeys(dummy.body, ['taskId', 'reason', 'runId', 'processKey', 'message', 'code', 'requestId'], 'dummy task');
  assert.deepEqual([dummy.body.taskId, dummy.body.runId, dummy.body.reason, dummy.body.code], [-1, -1, null, 'queue_empty']);
  assert.ok(dummy.body.message.length > 0);

  // ShutDown: FinishRun(RunId) after the empty TakeNext closed the run
  const fin = await net.finishRun(JSON.stringify({ RunId: runId, OverwriteSecondsSaved: null, OverwriteEntries: null }));
  assertResponse(fin.body, { succeeded: false, code: 'run_finished' }, 'FinishRun after close');

  // C12: exactly the client's paths, every one answered 2xx (ensureSuccess)
  assert.deepEqual(
    [...new Set(net.paths)].sort(),
    [
      `GET /api/GetRules/${pk}`,
      `GET /api/OkToRun/${pk}`,
      `GET /api/StartOrGetRun/${pk}`,
      `GET /api/TakeNext/${pk}`,
      `POST /api/CreateTasks/${pk}`,
      'POST /api/FinishRun/',
      'POST /api/Solved/',
    ].sort(),
  );
  const { rows } = await sql<{
    finish_reason: string;
    solved_count: number;
  }>`SELECT r.finish_reason, o.solved_count FROM runs r JOIN run_outcomes o ON o.tenant_id = r.tenant_id AND o.run_id = r.id
    WHERE r.id = ${runId}`.execute(t.store.db);
  assert.deepEqual(rows[0], { finish_reason: 'emptyQueue', solved_count: 2 });
});

test('C11: Failure with a 10 kB Message, as the templates send it, succeeds and keeps the whole message', async () => {
  const pk = await freshPk();
  const trace = Array.from({ length: 200 }, (_, i) => `   at Worker.Step${i}() in C:\\src\\Worker.cs:line ${i}`).join('\r\n');
  const message =
    `Got Exception with msg: Object reference not set to an instance of an object. // from: Worker // stackTrace: ${trace}`.padEnd(
      10_240,
      '.',
    );
  assert.ok(message.length >= 10_240);
  const r = await net.failure(JSON.stringify({ ProcessKey: pk, Message: message }));
  assertResponse(r.body, { succeeded: true }, 'Failure');
  const { rows } = await sql<{
    message: string;
  }>`SELECT message FROM notifications WHERE kind = 'failure' ORDER BY id DESC LIMIT 1`.execute(t.store.db);
  assert.equal(rows[0].message, message);
  const p = (await loadProcessByKey(t.store.db, tenant.tenantId, pk))!;
  const { rows: procRows } = await sql<{ failure_message: string }>`SELECT failure_message FROM processes WHERE id = ${p.id}`.execute(
    t.store.db,
  );
  assert.equal(procRows[0].failure_message, message);
});

test('C12: the allocator template: GETs and process-key POSTs without the slash, body-only POSTs with it, charset=utf-8', async () => {
  const trigger = `Alloc${++n}`;
  await createProcess(t.store.db, tenant.tenantId, { processKey: trigger, tasksEnabled: false });
  const target = await freshPk();
  const ok = await net.okToRun(trigger);
  assert.equal(ok.body.okToRun, true, 'a process without tasks runs while its gate is open');
  const run = await net.startOrGetRun(trigger);
  const created = await net.createTasks(
    target,
    JSON.stringify([{ CoreSystemKey: 'Ø-1', NumberField: 10.5, Flag: true, ActivationDate: null, Comment: null }]),
  );
  assertResponse(created.body, { succeeded: true, extra: ['taskIds'] }, 'CreateTasks');
  const id = created.body.taskIds[0];
  assert.equal((await taskRow(id)).data.coreSystemKey, 'Ø-1', 'UTF-8 body read as UTF-8');
  const cat = await net.createAndTakeTask(
    target,
    JSON.stringify({ CoreSystemKey: 'Å-2', NumberField: null, Flag: null, ActivationDate: null, Comment: null }),
  );
  assert.deepEqual(Object.keys(cat.body), PK_TASK_KEYS);
  assert.equal(cat.body.coreSystemKey, 'Å-2');
  assert.equal(cat.body.numberField, null);
  const upd = await net.updateTask(JSON.stringify({ TaskId: cat.body.taskId, NumberField: 3, Comment: 'from .NET' }));
  assertResponse(upd.body, { succeeded: true }, 'UpdateTask');
  assert.deepEqual(await comments(cat.body.taskId), ['from .NET']);
  const fin = await net.finishRun(JSON.stringify({ RunId: run.body.runId, OverwriteSecondsSaved: 600, OverwriteEntries: 1 }));
  assertResponse(fin.body, { succeeded: true }, 'FinishRun');
  const { rows } = await sql<{
    outcome: string;
    entries: number;
    seconds_saved: string;
  }>`SELECT outcome, entries, seconds_saved FROM kpi_events WHERE run_id = ${run.body.runId}`.execute(t.store.db);
  assert.deepEqual(
    rows.map((k) => [k.outcome, k.entries, Number(k.seconds_saved)]),
    [['Run', 1, 600]],
  );
});

test('C14: the dummy for a closed gate has the same shape: TakeNext deserializes into AnymateTask', async () => {
  const pk = await freshPk({ gate_open: false });
  await net.createTask(pk, JSON.stringify({ CoreSystemKey: 'G-1' }));
  const r = await net.takeNext(pk);
  assert.equal(r.status, 200);
  assertKeys(r.body, ['taskId', 'reason', 'runId', 'processKey', 'message', 'code', 'requestId'], 'gate_closed dummy');
  const task = asAnymateTask(r.body);
  assert.deepEqual([task.TaskId, task.RunId, task.ProcessKey, r.body.code], [-1, -1, pk, 'gate_closed']);
  const ok = await net.okToRun(pk);
  assert.deepEqual([ok.body.gateOpen, ok.body.tasksAvailable, ok.body.okToRun], [false, true, false]);
});

test('C15: CreateTasks with a DataTable row (PascalCase, DBNull as null) and CreateTask with null system keys and a null unknown key', async () => {
  const pk = await freshPk();
  const dt = await net.createTasks(pk, '[{"CoreSystemKey":"A","NumberField":1.5,"Flag":null}]');
  assertResponse(dt.body, { succeeded: true, extra: ['taskIds'] }, 'CreateTasks');
  assert.equal(dt.body.taskIds.length, 1);
  const row = await taskRow(dt.body.taskIds[0]);
  assert.deepEqual(row.data, { coreSystemKey: 'A', numberField: 1.5 }, 'bound to the defined names; the null Flag left out');
  assert.equal(row.queue, 'Ready');

  const one = await net.createTask(pk, '{"CoreSystemKey":"A","ActivationDate":null,"Comment":null,"Extra":null}');
  assertResponse(one.body, { succeeded: true, extra: ['taskId', 'queue'] }, 'CreateTask');
  assert.ok(Number.isInteger(one.body.taskId) && one.body.taskId > 0);
  const r2 = await taskRow(one.body.taskId);
  assert.deepEqual(r2.data, { coreSystemKey: 'A' });
  assert.equal(new Date(r2.activation_date).getTime(), clock.now().getTime(), 'a null ActivationDate is the default (now + offset 0)');
  assert.deepEqual(await comments(one.body.taskId), [], 'a null Comment is none');

  // a non-null unknown key is refused: the null one above was ignored, not tolerated by accident
  const bad = await send(t.app, {
    method: 'POST',
    url: `/api/CreateTask/${pk}`,
    headers: { authorization: `Bearer ${net.accessToken}`, accept: 'application/json', 'content-type': 'application/json; charset=utf-8' },
    payload: '{"CoreSystemKey":"A","Extra":"x"}',
  });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.code, 'unknown_field');
  assert.equal(bad.body.taskId, -1);
});

test('C10: Retry with ActivationDate "2030-01-31T10:00:00.1234567+01:00" → Ready, retryCount 1, not taken before then', async () => {
  clock.set('2029-12-03T08:00:00.000Z'); // within the 366 days Retry accepts
  const pk = await freshPk();
  await net.createTask(pk, JSON.stringify({ CoreSystemKey: 'R-1', NumberField: 1, Flag: true }));
  const task = asAnymateTask((await net.takeNext(pk)).body);
  const body = JSON.stringify({
    TaskId: task.TaskId,
    Reason: 'try later',
    Comment: '',
    ActivationDate: '2030-01-31T10:00:00.1234567+01:00',
    OverwriteSecondsSaved: null,
    OverwriteEntries: null,
  });
  const r = await net.action('Retry', body);
  assertResponse(r.body, { succeeded: true, extra: ['queue', 'error'] }, 'Retry');
  assert.deepEqual([r.body.queue, r.body.error], ['Ready', false]);
  const row = await taskRow(task.TaskId);
  assert.equal(row.retry_count, 1);
  assert.equal(new Date(row.activation_date).toISOString(), '2030-01-31T09:00:00.123Z', 'kept to the ms');

  const early = await net.takeNext(pk);
  assert.equal(early.body.taskId, -1);
  clock.set('2030-01-31T09:00:00.122Z');
  assert.equal((await net.takeNext(pk)).body.taskId, -1, 'not taken a millisecond early');
  clock.set('2030-01-31T09:00:00.123Z');
  const again = await net.takeNext(pk);
  assert.equal(again.body.taskId, task.TaskId);
  assert.equal(again.body.retryCount, 1);
  assert.equal(again.body.reason, 'try later');
  assert.match(again.body.activationDate, DATE_TIME);
  assert.equal(again.body.activationDate, '2030-01-31T09:00:00.123+00:00');
});
