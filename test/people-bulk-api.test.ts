/** Bulk actions, jobs and imports through /v1 (over src/bulk/jobs.ts and src/bulk/import.ts). */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { Mate } from './helpers/mate.js';
import { ManualClock } from '../src/lib/clock.js';
import { asPerson, asSession, peopleOfEveryRole, signIn, type TestPerson } from './helpers/people.js';
import type { Role } from '../src/accounts/service.js';

let t: TestApp;
let a: SeededTenant;
let b: SeededTenant;
const clock = new ManualClock('2026-03-02T10:00:00Z');
let people: Record<Role, TestPerson>;
let bAdmin: TestPerson;
let mate: Mate;
let pid: number;

before(async () => {
  t = await testApp({ clock });
  a = await seedTenant(t.store, 'acme', {
    processes: [
      {
        processKey: 'invoices',
        fields: [
          { name: 'invoiceNo', type: 'text', isKey: true, unique: true },
          { name: 'amount', type: 'number', required: true },
        ],
      },
    ],
  });
  b = await seedTenant(t.store, 'bravo');
  people = await peopleOfEveryRole(t.store, a.tenantId, '', clock.now());
  bAdmin = (await peopleOfEveryRole(t.store, b.tenantId, 'b-', clock.now())).admin;
  pid = (await t.store.db.selectFrom('processes').select('id').where('process_key', '=', 'invoices').executeTakeFirstOrThrow()).id;
  mate = await Mate.signIn(t.app, a);
});
after(() => t.close());

const send = (p: TestPerson, method: 'GET' | 'POST', url: string, payload?: unknown) =>
  asPerson(t.app, p, { method, url, payload: payload as never });

test('bulk by filter: count first, then a job that skips the task a Mate holds', async () => {
  for (let i = 0; i < 6; i++) await mate.create('invoices', { invoiceNo: `B-${i}`, amount: i });
  const held = await mate.takeNext('invoices');
  const body = { action: 'move', queue: 'Manual', filter: { queue: 'Ready' } };
  const count = await send(people.agent, 'POST', `/v1/processes/${pid}/tasks/bulk/count`, body);
  assert.equal(count.statusCode, 200, count.body);
  assert.equal(count.json().total, 6);
  const started = await send(people.agent, 'POST', `/v1/processes/${pid}/tasks/bulk`, body);
  assert.equal(started.statusCode, 202, started.body);
  const { jobId, total } = started.json();
  assert.equal(total, 6);
  const job = await t.app.services.bulkJobs.wait(a.tenantId, jobId);
  assert.equal(job?.status, 'done');
  const res = await send(people.viewer, 'GET', `/v1/jobs/${jobId}`);
  assert.equal(res.statusCode, 200);
  assert.deepEqual([res.json().done, res.json().skipped, res.json().failed], [5, 1, 0]);
  assert.equal(res.json().errors[0].taskId, held.taskId);
  assert.equal(res.json().createdBy.id, people.agent.userId);
  const manual = await send(people.viewer, 'GET', `/v1/processes/${pid}/tasks?queue=Manual`);
  assert.equal(manual.json().total, 5);
  // another tenant's job is not found
  assert.equal((await send(bAdmin, 'GET', `/v1/jobs/${jobId}`)).statusCode, 404);
});

test('bulk by ids; delete in bulk needs the delete permission; bad bodies are named', async () => {
  const ids = (await send(people.viewer, 'GET', `/v1/processes/${pid}/tasks?queue=Manual`)).json().items.map((x: any) => x.id);
  const urgent = await send(people.agent, 'POST', `/v1/processes/${pid}/tasks/bulk`, {
    action: 'urgent',
    urgent: true,
    ids: ids.slice(0, 2),
  });
  assert.equal(urgent.statusCode, 202);
  await t.app.services.bulkJobs.wait(a.tenantId, urgent.json().jobId);
  assert.equal((await send(people.viewer, 'GET', `/v1/processes/${pid}/tasks?urgent=true`)).json().total, 2);
  const del = await send(people.agent, 'POST', `/v1/processes/${pid}/tasks/bulk`, { action: 'delete', ids });
  assert.equal(del.statusCode, 403);
  assert.equal(del.json().code, 'forbidden');
  const bad = await send(people.agent, 'POST', `/v1/processes/${pid}/tasks/bulk`, { action: 'explode', ids });
  assert.equal(bad.statusCode, 400);
  assert.equal(bad.json().errors[0].field, 'action');
  const viewer = await send(people.viewer, 'POST', `/v1/processes/${pid}/tasks/bulk`, { action: 'urgent', urgent: true, ids });
  assert.equal(viewer.statusCode, 403);
  const theirs = await send(bAdmin, 'POST', `/v1/processes/${pid}/tasks/bulk/count`, { action: 'urgent', urgent: true, ids });
  assert.equal(theirs.statusCode, 404);
});

const CSV = 'invoiceNo,amount\nI-1,10\nI-2,20.5\nI-3,30\n';

function upload(p: TestPerson, query: string, payload: string | Buffer, contentType = 'text/csv') {
  return asPerson(t.app, p, {
    method: 'POST',
    url: `/v1/processes/${pid}/tasks/import${query}`,
    headers: { 'content-type': contentType },
    payload,
  });
}

test('import: a dry run lists per-row errors and creates nothing; a good file is created whole', async () => {
  const before = (await send(people.viewer, 'GET', `/v1/processes/${pid}/tasks`)).json().total;
  const bad = await upload(people.agent, '?dryRun=true', 'invoiceNo,amount\nX-1,10\nX-2,lots\nX-1,5\n');
  assert.equal(bad.statusCode, 200, bad.body);
  assert.equal(bad.json().dryRun, true);
  assert.equal(bad.json().invalid, 2);
  assert.deepEqual(
    bad.json().errors.map((e: any) => [e.row, e.field ?? null, e.code]),
    [
      [3, 'amount', 'invalid_field'],
      [4, null, 'duplicate_key'],
    ],
  );
  const refused = await upload(people.agent, '', 'invoiceNo,amount\nX-1,10\nX-2,lots\n');
  assert.equal(refused.statusCode, 400);
  assert.equal((await send(people.viewer, 'GET', `/v1/processes/${pid}/tasks`)).json().total, before, 'nothing created');

  const dry = await upload(people.agent, '?dryRun=true', CSV);
  assert.equal(dry.json().valid, 3);
  const done = await upload(people.agent, '', CSV);
  assert.equal(done.statusCode, 200, done.body);
  assert.equal(done.json().created, 3);
  assert.equal((await send(people.viewer, 'GET', `/v1/processes/${pid}/tasks`)).json().total, before + 3);

  const mapped = await upload(
    people.agent,
    `?mapping=${encodeURIComponent(JSON.stringify({ Ref: 'invoiceNo', Sum: 'amount' }))}`,
    'Ref;Sum\nM-1;7\n',
  );
  assert.equal(mapped.statusCode, 200, mapped.body);
  assert.equal(mapped.json().created, 1);
  const noType = await upload(people.agent, '', CSV, 'application/octet-stream');
  assert.equal(noType.statusCode, 415);
  assert.equal((await upload(people.viewer, '', CSV)).statusCode, 403);
  // a cookie upload needs the CSRF token too
  const s = await signIn(t.app, 'acme', 'agent');
  const noCsrf = await t.app.inject({
    method: 'POST',
    url: `/v1/processes/${pid}/tasks/import?dryRun=true`,
    headers: { cookie: s.cookie, 'content-type': 'text/csv' },
    payload: CSV,
  });
  assert.equal(noCsrf.statusCode, 403);
  const withCsrf = await asSession(t.app, s, {
    method: 'POST',
    url: `/v1/processes/${pid}/tasks/import?dryRun=true`,
    headers: { 'content-type': 'text/csv' },
    payload: CSV,
  });
  assert.equal(withCsrf.statusCode, 200);
});
