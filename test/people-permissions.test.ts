/**
 * The one permission table (src/people-api/permissions.ts) guards every /v1 route: every route
 * declares a permission; each role is refused (403 forbidden) exactly on the routes it may not
 * use, before anything is read or changed; no credentials and a Mate's token get 401.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { getToken } from './helpers/mate.js';
import { peopleOfEveryRole, asPerson, type TestPerson } from './helpers/people.js';
import { snapshot } from './helpers/snapshot.js';
import { PEOPLE_ROUTES } from '../src/people-api/plugin.js';
import { allows, isPublic, PERMISSIONS } from '../src/people-api/permissions.js';
import type { Role } from '../src/accounts/service.js';

let t: TestApp;
let a: SeededTenant;
let people: Record<Role, TestPerson>;

before(async () => {
  t = await testApp();
  a = await seedTenant(t.store, 'acme', { processes: [{ processKey: 'p1', fields: [{ name: 'n', type: 'text' }] }] });
  people = await peopleOfEveryRole(t.store, a.tenantId);
});
after(() => t.close());

/** A concrete path for a route: every :param becomes a large id that exists nowhere. */
const pathOf = (url: string) => `/v1${url.replace(/:[A-Za-z]+/g, '987654321')}`;

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

test('each role gets 403 forbidden on every route it may not use, and nothing changes', async () => {
  // tokens record their last use; everything else must stay as it was
  const state = async () => {
    const s = await snapshot(t.store.db);
    delete s.user_tokens;
    return s;
  };
  const before = await state();
  let refused = 0;
  for (const route of PEOPLE_ROUTES) {
    if (isPublic(route.permission)) continue;
    for (const role of ['admin', 'developer', 'agent', 'viewer'] as const) {
      // a write the role may do would happen: only reads are tried for allowed roles
      if (allows(route.permission, role) && route.method !== 'GET') continue;
      const res = await asPerson(t.app, people[role], {
        method: route.method,
        url: pathOf(route.url),
        payload: route.body ? {} : undefined,
      });
      const label = `${role} ${route.method} ${route.url} → ${res.statusCode} ${res.body}`;
      if (allows(route.permission, role)) {
        assert.notEqual(res.statusCode, 403, label);
        assert.notEqual(res.statusCode, 401, label);
      } else {
        assert.equal(res.statusCode, 403, label);
        assert.equal(res.json().code, 'forbidden', label);
        refused++;
      }
    }
  }
  assert.deepEqual(await state(), before);
  assert.ok(refused >= 20, `only ${refused} refusals checked`);
});

test('no credentials and a Mate token get 401 on every route but sign-in', async () => {
  const mateToken = await getToken(t.app, a);
  for (const route of PEOPLE_ROUTES) {
    if (isPublic(route.permission)) continue;
    const none = await t.app.inject({ method: route.method, url: pathOf(route.url) });
    assert.equal(none.statusCode, 401, `${route.method} ${route.url}`);
    assert.equal(none.json().code, 'unauthenticated');
    const mate = await t.app.inject({ method: route.method, url: pathOf(route.url), headers: { authorization: `Bearer ${mateToken}` } });
    assert.equal(mate.statusCode, 401, `${route.method} ${route.url}`);
  }
});
