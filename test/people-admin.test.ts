/** Tenant administration through /v1: settings, API secret rotation, users, Mates, audit log (docs/people-api.md §3). */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { getToken } from './helpers/mate.js';
import { ManualClock } from '../src/lib/clock.js';
import { asPerson, peopleOfEveryRole, signIn, asSession, type TestPerson } from './helpers/people.js';
import { snapshot } from './helpers/snapshot.js';
import type { Role } from '../src/accounts/service.js';

let t: TestApp;
let a: SeededTenant;
let b: SeededTenant;
const clock = new ManualClock('2026-03-02T10:00:00Z');
let people: Record<Role, TestPerson>;
let bAdmin: TestPerson;

before(async () => {
  t = await testApp({ clock });
  a = await seedTenant(t.store, 'acme', { processes: [{ processKey: 'p1' }] });
  b = await seedTenant(t.store, 'bravo');
  people = await peopleOfEveryRole(t.store, a.tenantId, '', clock.now());
  bAdmin = (await peopleOfEveryRole(t.store, b.tenantId, 'b-', clock.now())).admin;
});
after(() => t.close());

const admin = () => people.admin;

test('tenant settings: read by anyone, changed by an admin with an audit entry; a bad time zone is named', async () => {
  const read = await asPerson(t.app, people.viewer, { method: 'GET', url: '/v1/tenant' });
  assert.deepEqual(read.json(), { id: a.tenantId, clientId: 'acme', name: 'acme', timeZone: 'UTC', numberFormat: 'point' });
  const bad = await asPerson(t.app, admin(), { method: 'PATCH', url: '/v1/tenant', payload: { timeZone: 'Mars/Olympus' } });
  assert.equal(bad.statusCode, 400);
  assert.equal(bad.json().errors[0].field, 'timeZone');
  const badFormat = await asPerson(t.app, admin(), { method: 'PATCH', url: '/v1/tenant', payload: { numberFormat: 'danish' } });
  assert.equal(badFormat.statusCode, 400);
  assert.match(badFormat.body, /numberFormat/);
  const ok = await asPerson(t.app, admin(), {
    method: 'PATCH',
    url: '/v1/tenant',
    payload: { name: 'Acme Corp', timeZone: 'Europe/Copenhagen', numberFormat: 'comma' },
  });
  assert.equal(ok.statusCode, 200);
  assert.equal(ok.json().timeZone, 'Europe/Copenhagen');
  assert.equal(ok.json().numberFormat, 'comma');
  const session = await asPerson(t.app, people.agent, { method: 'GET', url: '/v1/session' });
  assert.equal(session.json().tenant.timeZone, 'Europe/Copenhagen');
  const log = await asPerson(t.app, admin(), { method: 'GET', url: '/v1/audit?action=tenant.update' });
  const entry = log.json().items[0];
  assert.deepEqual(entry.details, {
    before: { name: 'acme', timeZone: 'UTC', numberFormat: 'point' },
    after: { name: 'Acme Corp', timeZone: 'Europe/Copenhagen', numberFormat: 'comma' },
  });
  assert.deepEqual(entry.actor, { type: 'user', id: admin().userId, name: 'admin' });
  assert.ok(entry.requestId);
  assert.equal(b.tenantId !== a.tenantId, true);
  const other = await asPerson(t.app, bAdmin, { method: 'GET', url: '/v1/audit' });
  assert.equal(other.json().items.length, 0, "another tenant's audit log is not visible");
});

test('rotating the API secret: shown once, the old one works for the grace period, then not', async () => {
  const oldToken = await getToken(t.app, a);
  const res = await asPerson(t.app, admin(), { method: 'POST', url: '/v1/tenant/api-secret', payload: { graceSeconds: 600 } });
  assert.equal(res.statusCode, 200, res.body);
  const { apiSecret, secretVersion, previousValidUntil } = res.json();
  assert.equal(secretVersion, 2);
  assert.equal(previousValidUntil, '2026-03-02T10:10:00.000Z');
  // old secret and old token still work within the grace period; the new secret works
  assert.ok(await getToken(t.app, a));
  assert.ok(await getToken(t.app, { ...a, apiSecret }));
  assert.equal(
    (await t.app.inject({ method: 'GET', url: '/api/OkToRun/p1', headers: { authorization: `Bearer ${oldToken}` } })).statusCode,
    200,
  );
  clock.advance(601);
  await assert.rejects(getToken(t.app, a), /401/);
  assert.equal(
    (await t.app.inject({ method: 'GET', url: '/api/OkToRun/p1', headers: { authorization: `Bearer ${oldToken}` } })).statusCode,
    401,
  );
  a = { ...a, apiSecret };
  // the default grace is a day
  const again = await asPerson(t.app, admin(), { method: 'POST', url: '/v1/tenant/api-secret' });
  assert.equal(again.json().previousValidUntil, new Date(clock.now().getTime() + 86_400_000).toISOString());
  const tooLong = await asPerson(t.app, admin(), { method: 'POST', url: '/v1/tenant/api-secret', payload: { graceSeconds: 10_000_000 } });
  assert.equal(tooLong.statusCode, 400);
  const audit = await asPerson(t.app, admin(), { method: 'GET', url: '/v1/audit?action=tenant.rotateApiSecret' });
  assert.equal(audit.json().items.length, 2);
  assert.equal(JSON.stringify(audit.json()).includes(apiSecret), false, 'no secret in the audit log');
});

test('users: create with a generated password shown once, change role, disable, reset password', async () => {
  const created = await asPerson(t.app, admin(), {
    method: 'POST',
    url: '/v1/users',
    payload: { username: 'erin', role: 'viewer', name: 'Erin E.' },
  });
  assert.equal(created.statusCode, 201, created.body);
  const { user, password } = created.json();
  assert.equal(user.role, 'viewer');
  assert.equal(user.name, 'Erin E.');
  assert.equal(typeof password, 'string');
  const dup = await asPerson(t.app, admin(), { method: 'POST', url: '/v1/users', payload: { username: 'ERIN', role: 'agent' } });
  assert.equal(dup.statusCode, 409);
  const badRole = await asPerson(t.app, admin(), { method: 'POST', url: '/v1/users', payload: { username: 'x', role: 'owner' } });
  assert.equal(badRole.statusCode, 400);
  assert.equal(badRole.json().errors[0].field, 'role');

  const s = await signIn(t.app, 'acme', 'erin', password);
  assert.equal(s.body.user.role, 'viewer');
  const promote = await asPerson(t.app, admin(), { method: 'PATCH', url: `/v1/users/${user.id}`, payload: { role: 'agent' } });
  assert.equal(promote.json().role, 'agent');
  assert.equal((await asSession(t.app, s, { method: 'GET', url: '/v1/session' })).json().user.role, 'agent', 'the role applies at once');

  const reset = await asPerson(t.app, admin(), { method: 'POST', url: `/v1/users/${user.id}/password` });
  assert.equal(reset.statusCode, 200);
  assert.notEqual(reset.json().password, password);
  assert.equal((await asSession(t.app, s, { method: 'GET', url: '/v1/session' })).statusCode, 401, 'a reset ends the sessions');
  const s2 = await signIn(t.app, 'acme', 'erin', reset.json().password);

  const disable = await asPerson(t.app, admin(), { method: 'PATCH', url: `/v1/users/${user.id}`, payload: { disabled: true } });
  assert.equal(disable.json().disabled, true);
  assert.equal((await asSession(t.app, s2, { method: 'GET', url: '/v1/session' })).statusCode, 401);
  const list = await asPerson(t.app, admin(), { method: 'GET', url: '/v1/users' });
  assert.ok(list.json().items.some((u: any) => u.username === 'erin' && u.disabled));
  assert.equal(JSON.stringify(list.json()).includes('password'), false);
});

test('the last enabled admin cannot be demoted or disabled, nor can an admin disable themselves', async () => {
  const demote = await asPerson(t.app, admin(), { method: 'PATCH', url: `/v1/users/${admin().userId}`, payload: { role: 'viewer' } });
  assert.equal(demote.statusCode, 409);
  assert.equal(demote.json().code, 'conflict');
  const second = await asPerson(t.app, admin(), { method: 'POST', url: '/v1/users', payload: { username: 'admin2', role: 'admin' } });
  const self = await asPerson(t.app, admin(), { method: 'PATCH', url: `/v1/users/${admin().userId}`, payload: { disabled: true } });
  assert.equal(self.statusCode, 409);
  const demoteOther = await asPerson(t.app, admin(), {
    method: 'PATCH',
    url: `/v1/users/${second.json().user.id}`,
    payload: { role: 'developer' },
  });
  assert.equal(demoteOther.statusCode, 200);
});

test('Mates: create with a password shown once, last contact time, disable and new password stop its tokens', async () => {
  const created = await asPerson(t.app, people.developer, { method: 'POST', url: '/v1/mates', payload: { username: 'invoice-bot' } });
  assert.equal(created.statusCode, 201, created.body);
  const { mate, password } = created.json();
  assert.equal(mate.lastContactAt, null);
  const token = await getToken(t.app, a, 'invoice-bot', password);
  await t.app.inject({ method: 'GET', url: '/api/OkToRun/p1', headers: { authorization: `Bearer ${token}` } });
  const listed = (await asPerson(t.app, people.developer, { method: 'GET', url: '/v1/mates' }))
    .json()
    .items.find((m: any) => m.id === mate.id);
  assert.equal(listed.lastContactAt, clock.now().toISOString());

  const newPw = await asPerson(t.app, people.developer, { method: 'POST', url: `/v1/mates/${mate.id}/password` });
  assert.equal(newPw.statusCode, 200);
  assert.equal(
    (await t.app.inject({ method: 'GET', url: '/api/OkToRun/p1', headers: { authorization: `Bearer ${token}` } })).statusCode,
    401,
  );
  const token2 = await getToken(t.app, a, 'invoice-bot', newPw.json().password);
  const dis = await asPerson(t.app, people.developer, {
    method: 'PATCH',
    url: `/v1/mates/${mate.id}`,
    payload: { disabled: true, name: 'Invoice bot' },
  });
  assert.equal(dis.json().disabled, true);
  assert.equal(dis.json().name, 'Invoice bot');
  assert.equal(
    (await t.app.inject({ method: 'GET', url: '/api/OkToRun/p1', headers: { authorization: `Bearer ${token2}` } })).statusCode,
    401,
  );
});

test("another tenant's user or Mate is answered exactly like one that does not exist, and nothing changes", async () => {
  const before = await snapshot(t.store.db, a.tenantId);
  for (const [method, url, payload] of [
    ['PATCH', `/v1/users/${people.viewer.userId}`, { role: 'admin' }],
    ['POST', `/v1/users/${people.viewer.userId}/password`, undefined],
    ['PATCH', `/v1/mates/${a.mateId}`, { disabled: true }],
    ['POST', `/v1/mates/${a.mateId}/password`, undefined],
  ] as const) {
    const theirs = await asPerson(t.app, bAdmin, { method, url, payload });
    const missing = await asPerson(t.app, bAdmin, { method, url: url.replace(/\/\d+/, '/987654321'), payload });
    assert.equal(theirs.statusCode, 404, `${method} ${url}`);
    const strip = (x: any) => ({ ...x, requestId: undefined, message: x.message.replace(/\d+/g, 'N') });
    assert.deepEqual(strip(theirs.json()), strip(missing.json()));
  }
  const after = await snapshot(t.store.db, a.tenantId);
  delete before.user_tokens;
  delete after.user_tokens;
  assert.deepEqual(after, before);
});
