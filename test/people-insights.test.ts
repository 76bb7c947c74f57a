/** Notifications (read/unread) and KPI reports through /v1. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { Mate } from './helpers/mate.js';
import { ManualClock } from '../src/lib/clock.js';
import { asPerson, peopleOfEveryRole, type TestPerson } from './helpers/people.js';
import type { Role } from '../src/accounts/service.js';

let t: TestApp;
let a: SeededTenant;
let b: SeededTenant;
const clock = new ManualClock('2026-03-02T22:30:00Z');
let people: Record<Role, TestPerson>;
let bAdmin: TestPerson;
let mate: Mate;
let pid: number;

before(async () => {
  t = await testApp({ clock });
  a = await seedTenant(t.store, 'acme', {
    timeZone: 'Europe/Copenhagen',
    processes: [{ processKey: 'p1', fields: [{ name: 'n', type: 'text' }] }],
  });
  b = await seedTenant(t.store, 'bravo');
  people = await peopleOfEveryRole(t.store, a.tenantId, '', clock.now());
  bAdmin = (await peopleOfEveryRole(t.store, b.tenantId, 'b-', clock.now())).admin;
  pid = (await t.store.db.selectFrom('processes').select('id').where('process_key', '=', 'p1').executeTakeFirstOrThrow()).id;
  mate = await Mate.signIn(t.app, a);
  await t.app.services.units.autocommit((tx) =>
    tx.db
      .updateTable('processes')
      .set({
        kpi: JSON.stringify({
          secondsSavedPerTask: 60,
          entriesPerTask: 1,
          secondsSavedPerEntry: null,
          secondsSavedManual: 5,
          secondsSavedError: 0,
          secondsSavedRetry: 0,
        }),
      })
      .execute(),
  );
});
after(() => t.close());

const get = (p: TestPerson, url: string) => asPerson(t.app, p, { method: 'GET', url });

test('a Failure becomes an unread notification; agents mark it read, viewers may not; other tenants do not see it', async () => {
  await mate.post('/api/Failure', { processKey: 'p1', message: 'the ERP is down' });
  const list = await get(people.viewer, `/v1/notifications?unread=true&processId=${pid}`);
  assert.equal(list.statusCode, 200, list.body);
  assert.equal(list.json().unread, 1);
  const n = list.json().items[0];
  assert.deepEqual([n.kind, n.message, n.processId, n.readAt], ['failure', 'the ERP is down', pid, null]);
  assert.equal((await asPerson(t.app, people.viewer, { method: 'POST', url: `/v1/notifications/${n.id}/read` })).statusCode, 403);
  assert.equal((await asPerson(t.app, bAdmin, { method: 'POST', url: `/v1/notifications/${n.id}/read` })).statusCode, 404);
  assert.equal((await get(bAdmin, '/v1/notifications')).json().items.length, 0);
  assert.equal((await asPerson(t.app, people.agent, { method: 'POST', url: `/v1/notifications/${n.id}/read` })).statusCode, 204);
  assert.equal((await get(people.viewer, '/v1/notifications?unread=true')).json().unread, 0);
  await asPerson(t.app, people.agent, { method: 'POST', url: `/v1/notifications/${n.id}/read`, payload: { read: false } });
  const all = await asPerson(t.app, people.agent, { method: 'POST', url: '/v1/notifications/read-all', payload: { processId: pid } });
  assert.equal(all.json().marked, 1);
});

test("KPIs by day in the tenant's time zone, per process and for the tenant", async () => {
  // 22:30 UTC on 2 March is 23:30 in Copenhagen: still 2 March; 23:30 UTC is 3 March there
  for (const at of ['2026-03-02T22:30:00Z', '2026-03-02T23:30:00Z']) {
    clock.set(at);
    await mate.create('p1', { n: at });
    const task = await mate.takeNext('p1');
    await mate.post('/api/Solved', { taskId: task.taskId });
  }
  const res = await get(people.viewer, `/v1/kpis?from=2026-03-01&to=2026-03-03&by=day&processId=${pid}`);
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.json().timeZone, 'Europe/Copenhagen');
  assert.deepEqual(
    res.json().items.map((r: any) => [r.period, r.outcome, r.events, r.secondsSaved]),
    [
      ['2026-03-02', 'Solved', 1, 60],
      ['2026-03-03', 'Solved', 1, 60],
    ],
  );
  const month = await get(people.viewer, '/v1/kpis?from=2026-03-01&to=2026-03-31&by=month&perProcess=false');
  assert.deepEqual(
    month.json().items.map((r: any) => [r.period, r.processId, r.events, r.secondsSaved]),
    [['2026-03-01', null, 2, 120]],
  );
  const bad = await get(people.viewer, '/v1/kpis?from=2026-03-31&to=2026-03-01&by=year');
  assert.equal(bad.statusCode, 400);
  assert.equal((await get(bAdmin, `/v1/kpis?from=2026-03-01&to=2026-03-03&processId=${pid}`)).statusCode, 404);
});

test('KPI events export: CSV of the range, one line per event', async () => {
  const res = await get(people.viewer, `/v1/kpis/export?from=2026-03-01&to=2026-03-03&processId=${pid}`);
  assert.equal(res.statusCode, 200, res.body);
  assert.match(String(res.headers['content-type']), /^text\/csv/);
  const lines = res.body.trim().split('\r\n');
  assert.equal(lines[0], 'id,at,processId,processKey,taskId,runId,mateId,outcome,entries,secondsSaved');
  assert.equal(lines.length, 3);
  assert.ok(lines.slice(1).every((l) => l.includes(',p1,') && l.includes(',Solved,1,60')));
  const none = await get(people.viewer, '/v1/kpis/export?from=2026-03-01&to=2026-03-01');
  assert.equal(none.body.trim().split('\r\n').length, 1);
  assert.equal((await get(bAdmin, `/v1/kpis/export?from=2026-03-01&to=2026-03-03`)).body.trim().split('\r\n').length, 1);
});
