/**
 * The one permission table (src/people-api/permissions.ts) guards every /v1 route: every route
 * declares a permission; the shared route walker (test/helpers/route-walker.ts) then walks every
 * route: each role is refused (403 forbidden) exactly on the routes it may not use, before
 * anything is read or changed; no credentials and a Mate's token get 401; a person of another
 * tenant naming this tenant's ids gets the 404 a missing id gets.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { getToken, Mate } from './helpers/mate.js';
import { peopleOfEveryRole, personWithToken, type TestPerson } from './helpers/people.js';
import { personCaller } from './helpers/person.js';
import { walkOtherTenant, walkRoles, walkWithoutPerson, walkedRoutes, type RouteIds } from './helpers/route-walker.js';
import { PEOPLE_ROUTES } from '../src/people-api/plugin.js';
import { PERMISSIONS } from '../src/people-api/permissions.js';
import type { Role } from '../src/accounts/service.js';
import { createSubscription, setAllowPrivateTargets } from '../src/events/webhook-subscriptions.js';
import { loadProcessById } from '../src/processes/store.js';
import { bulkRequestFrom } from '../src/bulk/jobs.js';

let t: TestApp;
let a: SeededTenant;
let people: Record<Role, TestPerson>;
let stranger: TestPerson;
/** an id of every kind the routes name, each existing in tenant a */
let ids: RouteIds;

before(async () => {
  t = await testApp();
  a = await seedTenant(t.store, 'acme', {
    processes: [{ processKey: 'p1', fields: [{ name: 'n', type: 'text' }], rules: [{ name: 'limit', type: 'number', value: 5 }] }],
  });
  const b = await seedTenant(t.store, 'bravo', { processes: [{ processKey: 'p1', fields: [{ name: 'n', type: 'text' }] }] });
  people = await peopleOfEveryRole(t.store, a.tenantId);
  // an admin of the other tenant: no permission stands between them and any route
  stranger = await personWithToken(t.store, b.tenantId, 'admin', 'b-admin');
  const db = t.store.db;
  const proc = (await db.selectFrom('processes').select('id').where('tenant_id', '=', a.tenantId).executeTakeFirstOrThrow()).id;
  const rule = (await db.selectFrom('process_rules').select('id').where('tenant_id', '=', a.tenantId).executeTakeFirstOrThrow()).id;
  const mate = await Mate.signIn(t.app, a);
  const task = await mate.create('p1', { n: 'x' });
  const token = (
    await db
      .selectFrom('user_tokens')
      .select('id')
      .where('tenant_id', '=', a.tenantId)
      .where('user_id', '=', people.viewer.userId)
      .executeTakeFirstOrThrow()
  ).id;
  const notification = (
    await db
      .insertInto('notifications')
      .values({ tenant_id: a.tenantId, process_id: proc, kind: 'info', message: 'hello', mate_id: null, created_at: new Date() })
      .returning('id')
      .executeTakeFirstOrThrow()
  ).id;
  await setAllowPrivateTargets(db, a.tenantId, true);
  const hook = (await createSubscription(db, a.tenantId, { url: 'http://127.0.0.1:9/hook', eventTypes: ['task.solved'] })).subscription.id;
  const delivery = (
    await db
      .insertInto('webhook_deliveries')
      .values({ tenant_id: a.tenantId, subscription_id: hook, event_id: 1, status: 'failed', created_at: new Date() })
      .returning('id')
      .executeTakeFirstOrThrow()
  ).id;
  const procDef = (await loadProcessById(db, a.tenantId, proc))!;
  const caller = personCaller(a.tenantId, { id: people.agent.userId, username: 'agent' }, new Date());
  const job = (
    await t.app.services.bulkJobs.start(caller, procDef, bulkRequestFrom({ action: 'urgent', urgent: true, ids: [task] }, procDef, 'UTC'))
  ).jobId;
  await t.app.services.bulkJobs.wait(a.tenantId, job);
  ids = {
    processes: proc,
    rules: rule,
    tasks: task,
    tokens: token,
    users: people.viewer.userId,
    mates: a.mateId,
    jobs: job,
    notifications: notification,
    webhooks: hook,
    deliveries: delivery,
  };
  assert.equal(
    (await sql<{ n: number }>`SELECT count(*)::int AS n FROM tasks WHERE tenant_id = ${a.tenantId} AND urgent`.execute(db)).rows[0].n,
    1,
  );
});
after(() => t.close());

test('every /v1 route in the OpenAPI document is a route of the table, with a known permission', async () => {
  const spec = t.app.swagger() as { paths: Record<string, Record<string, unknown>> };
  const documented = Object.entries(spec.paths)
    .filter(([p]) => p.startsWith('/v1/'))
    .flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`))
    .sort();
  const declared = PEOPLE_ROUTES.map((r) => `${r.method} /v1${r.url.replace(/:([A-Za-z]+)/g, '{$1}')}`).sort();
  assert.deepEqual(documented, declared);
  for (const r of PEOPLE_ROUTES) assert.ok(r.permission in PERMISSIONS, `${r.method} ${r.url}`);
  assert.equal(new Set(declared).size, declared.length, 'a route is declared twice');
});

test('a route without a permission does not register', async () => {
  const { peopleApi } = await import('../src/people-api/plugin.js');
  const Fastify = (await import('fastify')).default;
  const app = Fastify();
  app.register(async (inner) => {
    await peopleApi(inner, { services: t.app.services });
    inner.get('/unguarded', async () => ({}));
  });
  await assert.rejects(async () => {
    await app.ready();
  }, /declares no permission/);
});

test('each role gets 403 forbidden on every route it may not use, with ids that exist, and nothing changes', async () => {
  const refused = await walkRoles(t.app, t.store.db, ids, people);
  assert.ok(refused >= 60, `only ${refused} refusals checked`);
});

test('no credentials and a Mate token get 401 on every route but sign-in', async () => {
  const n = await walkWithoutPerson(t.app, t.store.db, ids, await getToken(t.app, a));
  assert.equal(n, 2 * walkedRoutes().length);
});

test("a person of another tenant naming this tenant's ids gets the 404 a missing id gets, on every route with an id", async () => {
  const n = await walkOtherTenant(t.app, t.store.db, ids, stranger);
  assert.ok(n >= 40, `only ${n} routes with an id walked`);
});
