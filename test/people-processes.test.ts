/** Processes through /v1: overview counts, detail, create, rename, archive, settings, gate, fields editor, rules, developer view. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { Mate } from './helpers/mate.js';
import { ManualClock } from '../src/lib/clock.js';
import { asPerson, peopleOfEveryRole, type TestPerson } from './helpers/people.js';
import { snapshot } from './helpers/snapshot.js';
import type { Role } from '../src/accounts/service.js';

let t: TestApp;
let a: SeededTenant;
let b: SeededTenant;
const clock = new ManualClock('2026-03-02T10:00:00Z');
let people: Record<Role, TestPerson>;
let bAdmin: TestPerson;
let mate: Mate;
let invoicesId: number;

before(async () => {
  t = await testApp({ clock });
  a = await seedTenant(t.store, 'acme', {
    processes: [
      {
        processKey: 'invoices',
        name: 'Invoices',
        fields: [
          { name: 'invoiceNo', type: 'text', isKey: true, unique: true },
          { name: 'amount', type: 'number' },
          { name: 'country', type: 'dropdown', options: ['DK', 'SE', 'NO'] },
        ],
      },
      { processKey: 'empty', name: 'An empty one' },
    ],
  });
  b = await seedTenant(t.store, 'bravo', { processes: [{ processKey: 'theirs' }] });
  people = await peopleOfEveryRole(t.store, a.tenantId, '', clock.now());
  bAdmin = (await peopleOfEveryRole(t.store, b.tenantId, 'b-', clock.now())).admin;
  invoicesId = (await t.store.db.selectFrom('processes').select('id').where('process_key', '=', 'invoices').executeTakeFirstOrThrow()).id;
  mate = await Mate.signIn(t.app, a);
});
after(() => t.close());

const get = (p: TestPerson, url: string) => asPerson(t.app, p, { method: 'GET', url });
const send = (p: TestPerson, method: 'POST' | 'PATCH' | 'PUT' | 'DELETE', url: string, payload?: unknown) =>
  asPerson(t.app, p, { method, url, payload: payload as never });

test('the overview counts every queue in one grouped query and reports state, open run and last contact', async () => {
  // 2 Ready (one taken, so locked), 1 not active yet, 1 Manual, 1 Error, 1 Solved, 1 urgent
  for (const n of ['1', '2', '3', '4', '5']) await mate.create('invoices', { invoiceNo: `INV-${n}`, amount: 10 });
  await mate.create('invoices', { invoiceNo: 'INV-6', activationDate: '2026-03-05T00:00:00Z' });
  await mate.create('invoices', { invoiceNo: 'INV-7', urgent: true });
  const taken = [];
  for (let i = 0; i < 4; i++) taken.push(await mate.takeNext('invoices'));
  await mate.post('/api/Solved', { taskId: taken[0].taskId });
  await mate.post('/api/Manual', { taskId: taken[1].taskId, reason: 'needs a person' });
  await mate.post('/api/Error', { taskId: taken[2].taskId, reason: 'broken' });
  // taken[3] stays locked

  const res = await get(people.viewer, '/v1/processes');
  assert.equal(res.statusCode, 200);
  const items = res.json().items;
  assert.deepEqual(
    items.map((p: any) => p.key),
    ['empty', 'invoices'],
  );
  const inv = items.find((p: any) => p.key === 'invoices');
  assert.deepEqual(inv.counts, {
    ready: 3,
    needsData: 0,
    needsApproval: 0,
    manual: 1,
    error: 1,
    solved: 1,
    locked: 1,
    urgent: 0,
    overdue: 0,
    notActiveYet: 1,
  });
  assert.deepEqual(inv.state, { gateOpen: true, blockedToday: false, stoppedByErrors: false, okToRun: true, failure: null });
  assert.equal(inv.openRun.startedAt, clock.now().toISOString());
  assert.equal(inv.lastMateContactAt, clock.now().toISOString());
  assert.equal(inv.archived, false);
  const empty = items.find((p: any) => p.key === 'empty');
  assert.equal(empty.counts.ready, 0);
  assert.equal(empty.openRun, null);
  assert.equal(empty.state.okToRun, false);
  // the counts agree with COUNT(*) per queue
  const { rows } = await sql<{
    queue: string;
    error: boolean;
    n: number;
  }>`SELECT queue, error, count(*)::int AS n FROM tasks WHERE process_id = ${invoicesId} GROUP BY 1, 2`.execute(t.store.db);
  const total = rows.reduce((s, r) => s + Number(r.n), 0);
  const c = inv.counts;
  assert.equal(c.ready + c.notActiveYet + c.needsData + c.needsApproval + c.manual + c.error + c.solved, total);
  // the other tenant sees only its own
  assert.deepEqual(
    (await get(bAdmin, '/v1/processes')).json().items.map((p: any) => p.key),
    ['theirs'],
  );
});

test('detail: summary, fields and every setting; another tenant gets the answer of a missing id', async () => {
  const res = await get(people.agent, `/v1/processes/${invoicesId}`);
  assert.equal(res.statusCode, 200);
  const d = res.json();
  assert.equal(d.key, 'invoices');
  assert.deepEqual(
    d.fields.map((f: any) => [f.name, f.type, f.isKey, f.unique]),
    [
      ['invoiceNo', 'text', true, true],
      ['amount', 'number', false, false],
      ['country', 'dropdown', false, false],
    ],
  );
  assert.deepEqual(Object.keys(d.settings).sort(), [
    'calendar',
    'deadlinesEnabled',
    'defaultActivationOffsetSeconds',
    'defaultDeadlineSeconds',
    'description',
    'errorLimit',
    'gateOpen',
    'kpi',
    'lockTimeoutSeconds',
    'maxRetries',
    'requireApproval',
    'retryAllowed',
    'runTimeoutSeconds',
    'stopOnErrors',
    'tasksEnabled',
  ]);
  const theirs = await get(bAdmin, `/v1/processes/${invoicesId}`);
  const missing = await get(bAdmin, '/v1/processes/987654');
  assert.equal(theirs.statusCode, 404);
  assert.equal(theirs.json().code, 'process_not_found');
  assert.equal(theirs.json().message.replace(/\d+/g, 'N'), missing.json().message.replace(/\d+/g, 'N'));
  const bad = await get(people.agent, '/v1/processes/abc');
  assert.equal(bad.statusCode, 400);
  assert.equal(bad.json().errors[0].field, 'id');
});

test('create, rename, archive (Mates then get process_not_found) and unarchive', async () => {
  const created = await send(people.developer, 'POST', '/v1/processes', {
    processKey: 'orders',
    name: 'Orders',
    fields: [{ name: 'orderNo', type: 'text', required: true }],
  });
  assert.equal(created.statusCode, 201, created.body);
  const id = created.json().id;
  assert.equal(created.json().fields[0].required, true);
  const dup = await send(people.developer, 'POST', '/v1/processes', { processKey: 'ORDERS' });
  assert.equal(dup.statusCode, 409);
  const badField = await send(people.developer, 'POST', '/v1/processes', { processKey: 'x', fields: [{ name: 'taskId', type: 'text' }] });
  assert.equal(badField.statusCode, 400);

  assert.equal((await send(people.developer, 'PATCH', `/v1/processes/${id}`, { name: 'Customer orders' })).json().name, 'Customer orders');
  assert.equal((await mate.get('/api/OkToRun/orders')).status, 200);
  const archived = await send(people.developer, 'PATCH', `/v1/processes/${id}`, { archived: true });
  assert.equal(archived.json().archived, true);
  assert.equal((await mate.get('/api/OkToRun/orders')).status, 404, 'an archived process is unknown to Mates at once');
  assert.ok(!(await get(people.viewer, '/v1/processes')).json().items.some((p: any) => p.id === id));
  assert.ok((await get(people.viewer, '/v1/processes?archived=true')).json().items.some((p: any) => p.id === id));
  await send(people.developer, 'PATCH', `/v1/processes/${id}`, { archived: false });
  assert.equal((await mate.get('/api/OkToRun/orders')).status, 200);
});

test('settings: every §2 setting is changed, checked, audited and seen by Mates at once', async () => {
  const res = await send(people.developer, 'PATCH', `/v1/processes/${invoicesId}/settings`, {
    description: 'Supplier invoices',
    retryAllowed: false,
    maxRetries: 5,
    lockTimeoutSeconds: 120,
    deadlinesEnabled: true,
    defaultDeadlineSeconds: 86400,
    defaultActivationOffsetSeconds: 60,
    requireApproval: 'mateCreated',
    kpi: { secondsSavedPerTask: 300 },
    runTimeoutSeconds: 3600,
    calendar: { blockedDates: ['2026-12-24'], blockedWeekdays: [0, 6] },
  });
  assert.equal(res.statusCode, 200, res.body);
  const s = res.json().settings;
  assert.equal(s.description, 'Supplier invoices');
  assert.equal(s.lockTimeoutSeconds, 120);
  assert.equal(s.kpi.secondsSavedPerTask, 300);
  assert.equal(s.kpi.entriesPerTask, 1, 'other KPI defaults are kept');
  assert.deepEqual(s.calendar, { blockedDates: ['2026-12-24'], blockedWeekdays: [0, 6] });
  assert.equal(res.json().description, 'Supplier invoices');

  const bad = await send(people.developer, 'PATCH', `/v1/processes/${invoicesId}/settings`, {
    lockTimeoutSeconds: 0,
    requireApproval: 'sometimes',
    nonsense: 1,
  });
  assert.equal(bad.statusCode, 400);
  assert.deepEqual(
    bad
      .json()
      .errors.map((e: any) => e.field)
      .sort(),
    ['lockTimeoutSeconds', 'nonsense', 'requireApproval'],
  );
  const badDate = await send(people.developer, 'PATCH', `/v1/processes/${invoicesId}/settings`, {
    calendar: { blockedDates: ['2026-02-30'], blockedWeekdays: [] },
  });
  assert.equal(badDate.statusCode, 400);
  assert.equal(badDate.json().errors[0].field, 'calendar.blockedDates');

  // Stop on Errors: 1 unresolved Error > limit 0
  await send(people.developer, 'PATCH', `/v1/processes/${invoicesId}/settings`, {
    stopOnErrors: true,
    errorLimit: 0,
    requireApproval: 'none',
  });
  assert.equal((await mate.get('/api/OkToRun/invoices')).body.okToRun, false);
  const summary = (await get(people.viewer, `/v1/processes/${invoicesId}`)).json();
  assert.equal(summary.state.stoppedByErrors, true);
  assert.equal(summary.state.okToRun, false);
  await send(people.developer, 'PATCH', `/v1/processes/${invoicesId}/settings`, {
    stopOnErrors: false,
    calendar: { blockedDates: [], blockedWeekdays: [] },
  });
  const audit = (await get(people.admin, '/v1/audit?action=process.settings')).json().items;
  assert.equal(audit.length, 3);
  assert.deepEqual(audit[0].details.after, { stopOnErrors: false, calendar: { blockedDates: [], blockedWeekdays: [] } });
});

test('gate: an agent stops and starts the process; Mates see it at once', async () => {
  const stop = await send(people.agent, 'POST', `/v1/processes/${invoicesId}/gate`, { open: false });
  assert.equal(stop.statusCode, 200, stop.body);
  assert.equal(stop.json().state.gateOpen, false);
  assert.equal(stop.json().state.okToRun, false);
  assert.equal((await mate.get('/api/OkToRun/invoices')).body.gateOpen, false);
  assert.equal((await mate.takeNext('invoices')).taskId, -1);
  const start = await send(people.agent, 'POST', `/v1/processes/${invoicesId}/gate`, { open: true });
  assert.equal(start.json().state.gateOpen, true);
  assert.equal((await mate.get('/api/OkToRun/invoices')).body.gateOpen, true);
  assert.equal((await send(people.viewer, 'POST', `/v1/processes/${invoicesId}/gate`, { open: false })).statusCode, 403);
  const other = await send(bAdmin, 'POST', `/v1/processes/${invoicesId}/gate`, { open: false });
  assert.equal(other.statusCode, 404);
  assert.equal((await mate.get('/api/OkToRun/invoices')).body.gateOpen, true);
});

test('fields editor: a change existing tasks would violate is refused with the count; a safe one applies', async () => {
  const current = (await get(people.developer, `/v1/processes/${invoicesId}`)).json().fields;
  const withChange = (name: string, change: Record<string, unknown>) =>
    current.map((f: any) => (f.name === name ? { ...f, ...change } : f));
  const before = await snapshot(t.store.db, a.tenantId);

  const typeChange = await send(people.developer, 'PUT', `/v1/processes/${invoicesId}/fields`, {
    fields: withChange('amount', { type: 'date' }),
  });
  assert.equal(typeChange.statusCode, 409, typeChange.body);
  assert.equal(typeChange.json().code, 'conflict');
  // INV-1..5 have amounts; INV-1 is Solved, so 4 tasks not Solved hold one
  assert.equal(typeChange.json().affectedTasks, 5);
  assert.match(typeChange.json().errors[0].message, /amount.*5 tasks/);

  const required = await send(people.developer, 'PUT', `/v1/processes/${invoicesId}/fields`, {
    fields: withChange('country', { required: true }),
  });
  assert.equal(required.statusCode, 409);
  assert.equal(required.json().affectedTasks, 6);

  const removed = await send(people.developer, 'PUT', `/v1/processes/${invoicesId}/fields`, {
    fields: current.filter((f: any) => f.name !== 'amount'),
  });
  assert.equal(removed.statusCode, 409);
  const unique = await send(people.developer, 'PUT', `/v1/processes/${invoicesId}/fields`, {
    fields: withChange('invoiceNo', { unique: false }),
  });
  assert.equal(unique.statusCode, 409);
  const invalid = await send(people.developer, 'PUT', `/v1/processes/${invoicesId}/fields`, {
    fields: [...current, { name: 'retryCount', type: 'text' }],
  });
  assert.equal(invalid.statusCode, 400);
  assert.deepEqual(await snapshot(t.store.db, a.tenantId), before, 'refused changes change nothing');

  const ok = await send(people.developer, 'PUT', `/v1/processes/${invoicesId}/fields`, {
    fields: [
      ...withChange('country', { options: ['DK', 'SE', 'NO', 'FI'], label: 'Country' }),
      { name: 'note', type: 'text', default: 'none' },
    ],
  });
  assert.equal(ok.statusCode, 200, ok.body);
  assert.deepEqual(
    ok.json().fields.map((f: any) => f.name),
    ['invoiceNo', 'amount', 'country', 'note'],
  );
  // Mates see the new field at once
  assert.ok(await mate.create('invoices', { invoiceNo: 'INV-8', country: 'FI', note: 'x' }));
});

test('rules: typed values, agents set values only, developers define them', async () => {
  const created = await send(people.developer, 'POST', `/v1/processes/${invoicesId}/rules`, {
    name: 'maxAmount',
    type: 'number',
    value: 5000,
    description: 'approve above',
  });
  assert.equal(created.statusCode, 201, created.body);
  const rule = created.json();
  const wrongType = await send(people.developer, 'POST', `/v1/processes/${invoicesId}/rules`, {
    name: 'countries',
    type: 'list',
    value: ['DK', 3],
  });
  assert.equal(wrongType.statusCode, 400);
  assert.equal(wrongType.json().errors[0].field, 'value');
  const dup = await send(people.developer, 'POST', `/v1/processes/${invoicesId}/rules`, { name: 'MAXAMOUNT', type: 'text' });
  assert.equal(dup.statusCode, 409);

  const value = await send(people.agent, 'PUT', `/v1/processes/${invoicesId}/rules/${rule.id}/value`, { value: 7500 });
  assert.equal(value.statusCode, 200, value.body);
  assert.equal(value.json().value, 7500);
  assert.equal((await send(people.agent, 'PUT', `/v1/processes/${invoicesId}/rules/${rule.id}/value`, { value: 'lots' })).statusCode, 400);
  assert.equal((await send(people.agent, 'PATCH', `/v1/processes/${invoicesId}/rules/${rule.id}`, { name: 'x' })).statusCode, 403);
  assert.deepEqual((await mate.get('/api/GetRules/invoices')).body.maxAmount, 7500);

  const retype = await send(people.developer, 'PATCH', `/v1/processes/${invoicesId}/rules/${rule.id}`, { type: 'list' });
  assert.equal(retype.statusCode, 400, 'a number value does not fit a list');
  const retyped = await send(people.developer, 'PATCH', `/v1/processes/${invoicesId}/rules/${rule.id}`, {
    type: 'table',
    value: [{ country: 'DK', max: 5000 }],
  });
  assert.equal(retyped.statusCode, 200, retyped.body);
  assert.deepEqual((await mate.get('/api/GetRules/invoices')).body.maxAmount, [{ country: 'DK', max: 5000 }]);
  // a table's columns keep the order they were given in (a longer name first), for the Mates and for people
  const ordered = await send(people.agent, 'PUT', `/v1/processes/${invoicesId}/rules/${rule.id}/value`, {
    value: [{ supplierCountry: 'DK', max: 5000, a: 1 }],
  });
  assert.equal(ordered.statusCode, 200, ordered.body);
  assert.deepEqual(Object.keys((await mate.get('/api/GetRules/invoices')).body.maxAmount[0]), ['supplierCountry', 'max', 'a']);
  const read = (await get(people.viewer, `/v1/processes/${invoicesId}/rules`)).json().items[0];
  assert.deepEqual(Object.keys(read.value[0]), ['supplierCountry', 'max', 'a']);
  const list = await get(people.viewer, `/v1/processes/${invoicesId}/rules`);
  assert.equal(list.json().items.length, 1);
  assert.equal((await send(bAdmin, 'DELETE', `/v1/processes/${invoicesId}/rules/${rule.id}`)).statusCode, 404);
  assert.equal((await send(people.developer, 'DELETE', `/v1/processes/${invoicesId}/rules/${rule.id}`)).statusCode, 204);
  assert.equal((await mate.get('/api/GetRules/invoices')).body.maxAmount, undefined);
});

test("developer view: the ProcessKey and requests with this process's fields", async () => {
  const res = await get(people.developer, `/v1/processes/${invoicesId}/developer`);
  assert.equal(res.statusCode, 200);
  const v = res.json();
  assert.equal(v.processKey, 'invoices');
  assert.equal(v.clientId, 'acme');
  assert.deepEqual(Object.keys(v.sampleTask), ['invoiceNo', 'amount', 'country', 'note']);
  assert.match(v.examples.curl, /\/api\/CreateTask\/invoices/);
  assert.match(v.examples.python, /set_on_premises_mode/);
  assert.match(v.examples.python, /"country": "DK"/);
  assert.match(v.examples.dotnet, /new AnymateService\(/);
  assert.match(v.examples.dotnet, /amount = 12\.5m/);
  // the sample task is accepted by the Mate API as it stands
  const created = await mate.post('/api/CreateTask/invoices', { ...v.sampleTask, invoiceNo: 'DEV-1' });
  assert.equal(created.body.succeeded, true, JSON.stringify(created.body));
  assert.equal((await get(people.agent, `/v1/processes/${invoicesId}/developer`)).statusCode, 403);
});
