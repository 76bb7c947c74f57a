/** The /v1 task routes over src/tasks/people.ts and src/task-lists/: list, detail, create and every action, by HTTP. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { Mate } from './helpers/mate.js';
import { ManualClock } from '../src/lib/clock.js';
import { asPerson, asSession, peopleOfEveryRole, signIn, type TestPerson } from './helpers/people.js';
import { snapshot } from './helpers/snapshot.js';
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
          { name: 'country', type: 'dropdown', options: ['DK', 'SE'] },
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

const get = (p: TestPerson, url: string) => asPerson(t.app, p, { method: 'GET', url });
const send = (p: TestPerson, method: 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) =>
  asPerson(t.app, p, { method, url, payload: payload as never });

test('create: a complete task goes to Ready, an incomplete one to NeedsData; bad values are named', async () => {
  const ok = await send(people.agent, 'POST', `/v1/processes/${pid}/tasks`, { invoiceNo: 'A-1', amount: '12.5', country: 'DK' });
  assert.equal(ok.statusCode, 201, ok.body);
  assert.equal(ok.json().queue, 'Ready');
  assert.equal(ok.json().data.amount, 12.5);
  const incomplete = await send(people.agent, 'POST', `/v1/processes/${pid}/tasks`, { invoiceNo: 'A-2' });
  assert.equal(incomplete.json().queue, 'NeedsData');
  const bad = await send(people.agent, 'POST', `/v1/processes/${pid}/tasks`, { invoiceNo: 'A-3', amount: 'lots', nope: 1 });
  assert.equal(bad.statusCode, 400);
  assert.deepEqual(
    bad
      .json()
      .errors.map((e: any) => e.field)
      .sort(),
    ['amount', 'nope'],
  );
  const dup = await send(people.agent, 'POST', `/v1/processes/${pid}/tasks`, { invoiceNo: 'a-1', amount: 1 });
  assert.equal(dup.statusCode, 409);
  assert.equal(dup.json().code, 'duplicate_key');
  assert.equal((await send(bAdmin, 'POST', `/v1/processes/${pid}/tasks`, { invoiceNo: 'X' })).statusCode, 404);
});

test('list: filters, sort and keyset pages that cover every task once', async () => {
  for (let i = 0; i < 7; i++) await mate.create('invoices', { invoiceNo: `M-${i}`, amount: i, country: i % 2 ? 'SE' : 'DK' });
  const all = await get(people.viewer, `/v1/processes/${pid}/tasks?limit=100`);
  assert.equal(all.statusCode, 200, all.body);
  assert.equal(all.json().total, 9);
  const seen: number[] = [];
  let cursor: string | null = null;
  do {
    const url = `/v1/processes/${pid}/tasks?limit=4&sort=f.amount${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const page: any = (await get(people.viewer, url)).json();
    assert.equal(page.total, 9);
    seen.push(...page.items.map((x: any) => x.id));
    cursor = page.nextCursor;
  } while (cursor);
  assert.equal(seen.length, 9);
  assert.equal(new Set(seen).size, 9);
  const se = await get(people.viewer, `/v1/processes/${pid}/tasks?f.country=SE&queue=Ready`);
  assert.equal(se.json().total, 3);
  assert.ok(se.json().items.every((x: any) => x.data.country === 'SE'));
  const bad = await get(people.viewer, `/v1/processes/${pid}/tasks?queue=Nowhere&limit=0`);
  assert.equal(bad.statusCode, 400);
  assert.deepEqual(
    bad
      .json()
      .errors.map((e: any) => e.field)
      .sort(),
    ['limit', 'queue'],
  );
  assert.equal((await get(bAdmin, `/v1/processes/${pid}/tasks`)).statusCode, 404);
});

test('actions: move, edit, comment, urgent, clear error, unlock, reopen, approve and reject, each in the history with the user', async () => {
  const id = (await send(people.agent, 'POST', `/v1/processes/${pid}/tasks`, { invoiceNo: 'B-1' })).json().id;
  const edited = await send(people.agent, 'PATCH', `/v1/tasks/${id}`, { data: { amount: 5 }, urgent: true, comment: 'filled in' });
  assert.equal(edited.statusCode, 200, edited.body);
  assert.equal(edited.json().queue, 'Ready', 'a NeedsData task that becomes complete moves to Ready');
  assert.equal(edited.json().urgent, true);
  const moved = await send(people.agent, 'POST', `/v1/tasks/${id}/move`, { queue: 'Manual', error: true, comment: 'broken' });
  assert.equal(moved.json().queue, 'Manual');
  assert.equal(moved.json().error, true);
  const cleared = await send(people.agent, 'POST', `/v1/tasks/${id}/clear-error`);
  assert.equal(cleared.json().error, false);
  const commented = await send(people.agent, 'POST', `/v1/tasks/${id}/comments`, { text: 'called them' });
  assert.equal(commented.statusCode, 200);
  const solved = await send(people.agent, 'POST', `/v1/tasks/${id}/move`, { queue: 'Solved' });
  assert.equal(solved.json().queue, 'Solved');
  const reopened = await send(people.agent, 'POST', `/v1/tasks/${id}/reopen`, { queue: 'Manual' });
  assert.equal(reopened.json().queue, 'Manual');

  const detail = await get(people.viewer, `/v1/tasks/${id}`);
  assert.equal(detail.statusCode, 200);
  const d = detail.json();
  assert.ok(d.history.length >= 6);
  assert.ok(d.history.slice(1).every((h: any) => h.actor.type === 'user' && h.actor.id === people.agent.userId && h.requestId));
  assert.deepEqual(
    d.comments.map((c: any) => c.text),
    ['filled in', 'broken', 'called them'],
  );

  // a task a Mate holds: refused until unlocked, then the Mate's hand-back is refused
  await send(people.agent, 'POST', `/v1/tasks/${id}/move`, { queue: 'Ready' });
  const taken = await mate.takeNext('invoices');
  assert.equal(taken.taskId, id, 'urgent first');
  const locked = await send(people.agent, 'POST', `/v1/tasks/${id}/move`, { queue: 'Manual' });
  assert.equal(locked.statusCode, 409);
  assert.equal(locked.json().code, 'task_locked');
  const unlocked = await send(people.agent, 'POST', `/v1/tasks/${id}/unlock`);
  assert.equal(unlocked.json().lockedBy, null);
  assert.equal((await mate.post('/api/Solved', { taskId: id })).body.succeeded, false);

  // approval
  await asPerson(t.app, people.developer, {
    method: 'PATCH',
    url: `/v1/processes/${pid}/settings`,
    payload: { requireApproval: 'mateCreated' },
  });
  const waiting = await mate.create('invoices', { invoiceNo: 'C-1', amount: 1 });
  const waiting2 = await mate.create('invoices', { invoiceNo: 'C-2', amount: 1 });
  assert.equal((await get(people.viewer, `/v1/tasks/${waiting}`)).json().queue, 'NeedsApproval');
  assert.equal((await send(people.agent, 'POST', `/v1/tasks/${waiting}/approve`)).json().queue, 'Ready');
  assert.equal((await send(people.agent, 'POST', `/v1/tasks/${waiting2}/reject`, { comment: 'no' })).json().queue, 'Manual');
  const again = await send(people.agent, 'POST', `/v1/tasks/${waiting}/approve`);
  assert.equal(again.statusCode, 409);
  assert.equal(again.json().code, 'invalid_transition');
});

test('delete is for admins; another tenant, a missing and a deleted task answer the same 404; nothing changes', async () => {
  const id = (await send(people.agent, 'POST', `/v1/processes/${pid}/tasks`, { invoiceNo: 'D-1', amount: 1 })).json().id;
  assert.equal((await send(people.agent, 'DELETE', `/v1/tasks/${id}`)).statusCode, 403);
  const before = await snapshot(t.store.db, a.tenantId);
  for (const [method, url, payload] of [
    ['GET', `/v1/tasks/${id}`, undefined],
    ['PATCH', `/v1/tasks/${id}`, { urgent: true }],
    ['POST', `/v1/tasks/${id}/move`, { queue: 'Solved' }],
    ['POST', `/v1/tasks/${id}/comments`, { text: 'hi' }],
    ['POST', `/v1/tasks/${id}/approve`, undefined],
    ['POST', `/v1/tasks/${id}/reject`, undefined],
    ['POST', `/v1/tasks/${id}/clear-error`, undefined],
    ['POST', `/v1/tasks/${id}/unlock`, undefined],
    ['POST', `/v1/tasks/${id}/reopen`, { queue: 'Ready' }],
    ['DELETE', `/v1/tasks/${id}`, undefined],
  ] as const) {
    const theirs = await asPerson(t.app, bAdmin, { method, url, payload: payload as never });
    const missing = await asPerson(t.app, bAdmin, { method, url: url.replace(String(id), '987654321'), payload: payload as never });
    assert.equal(theirs.statusCode, 404, `${method} ${url} ${theirs.body}`);
    assert.equal(theirs.json().code, 'task_not_found');
    assert.equal(theirs.json().message.replace(/\d+/g, 'N'), missing.json().message.replace(/\d+/g, 'N'));
  }
  const after = await snapshot(t.store.db, a.tenantId);
  delete before.user_tokens;
  delete after.user_tokens;
  assert.deepEqual(after, before);
  const del = await send(people.admin, 'DELETE', `/v1/tasks/${id}`);
  assert.equal(del.statusCode, 200);
  assert.equal((await get(people.admin, `/v1/tasks/${id}`)).statusCode, 404);
});

test('a cookie session works the queues with its CSRF token, and is refused without it', async () => {
  const s = await signIn(t.app, 'acme', 'agent');
  const id = (
    await asSession(t.app, s, { method: 'POST', url: `/v1/processes/${pid}/tasks`, payload: { invoiceNo: 'E-1', amount: 1 } })
  ).json().id;
  const refused = await t.app.inject({
    method: 'POST',
    url: `/v1/tasks/${id}/move`,
    headers: { cookie: s.cookie },
    payload: { queue: 'Solved' },
  });
  assert.equal(refused.statusCode, 403);
  assert.equal(refused.json().code, 'csrf_failed');
  assert.equal((await get(people.viewer, `/v1/tasks/${id}`)).json().queue, 'Ready');
});

test('export: CSV of every task matching the filter, quoted where needed, across chunks', async () => {
  await send(people.agent, 'POST', `/v1/processes/${pid}/tasks`, { invoiceNo: '=HYPERLINK("x"), "quoted"', amount: 1 });
  const all = (await get(people.viewer, `/v1/processes/${pid}/tasks?limit=1`)).json().total;
  const res = await get(people.viewer, `/v1/processes/${pid}/tasks/export`);
  assert.equal(res.statusCode, 200, res.body);
  assert.match(String(res.headers['content-disposition']), /invoices-tasks\.csv/);
  const lines = res.body.trim().split('\r\n');
  assert.equal(
    lines[0],
    'id,queue,error,reason,urgent,retryCount,activationDate,deadline,lockedUntil,createdAt,updatedAt,invoiceNo,amount,country',
  );
  assert.equal(lines.length, all + 1);
  assert.ok(
    lines.some((l) => l.includes(`"'=HYPERLINK(""x""), ""quoted"""`)),
    'quoted, and a formula defused',
  );
  const manual = await get(people.viewer, `/v1/processes/${pid}/tasks/export?queue=Manual`);
  const manualTotal = (await get(people.viewer, `/v1/processes/${pid}/tasks?queue=Manual`)).json().total;
  assert.equal(manual.body.trim().split('\r\n').length, manualTotal + 1);
  assert.equal((await get(people.viewer, `/v1/processes/${pid}/tasks/export?queue=Nowhere`)).statusCode, 400);
  assert.equal((await get(bAdmin, `/v1/processes/${pid}/tasks/export`)).statusCode, 404);
});
