/**
 * People's sign-in, sessions, CSRF, personal access tokens and password changes through /v1
 * (docs/people-api.md §1), on the store of the run (PGlite, or PostgreSQL with DATABASE_URL).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { getToken } from './helpers/mate.js';
import { ManualClock } from '../src/lib/clock.js';
import { asPerson, asSession, personWithToken, signIn, USER_PASSWORD, type TestPerson } from './helpers/people.js';
import { ensureDemo } from '../src/setup/demo.js';
import { setUserDisabled } from '../src/accounts/service.js';
import { randomSecret, sha256 } from '../src/lib/secrets.js';

let t: TestApp;
let a: SeededTenant;
const clock = new ManualClock('2026-03-02T10:00:00Z');
let agent: TestPerson;

before(async () => {
  t = await testApp({ clock });
  a = await seedTenant(t.store, 'acme', { processes: [{ processKey: 'p1', fields: [] }] });
  agent = await personWithToken(t.store, a.tenantId, 'agent', 'alice', clock.now());
});
after(() => t.close());

test('sign in sets an HttpOnly SameSite=Lax cookie and answers user, tenant, CSRF token and expiry', async () => {
  const res = await t.app.inject({
    method: 'POST',
    url: '/v1/session',
    payload: { clientId: 'ACME', username: 'Alice', password: USER_PASSWORD },
  });
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json();
  assert.equal(body.user.username, 'alice');
  assert.equal(body.user.role, 'agent');
  assert.deepEqual(body.tenant, { id: a.tenantId, clientId: 'acme', name: 'acme', timeZone: 'UTC', numberFormat: 'point' });
  assert.match(body.csrfToken, /^[A-Za-z0-9_-]{40,}$/);
  assert.equal(body.expiresAt, '2026-03-02T22:00:00.000Z');
  const cookie = String(res.headers['set-cookie']);
  assert.match(cookie, /^qm_session=[A-Za-z0-9_-]+; HttpOnly; SameSite=Lax; Path=\//);
  assert.doesNotMatch(cookie, /Secure/);
  assert.equal(res.headers['cache-control'], 'no-store');
});

test('unknown client, unknown user, wrong password and a disabled user all get the same 401', async () => {
  const bodies = [];
  for (const payload of [
    { clientId: 'nope', username: 'alice', password: USER_PASSWORD },
    { clientId: 'acme', username: 'bob', password: USER_PASSWORD },
    { clientId: 'acme', username: 'alice', password: 'wrong-password-here' },
  ]) {
    const res = await t.app.inject({ method: 'POST', url: '/v1/session', payload });
    assert.equal(res.statusCode, 401);
    assert.equal(res.headers['set-cookie'], undefined);
    const { requestId: _r, ...rest } = res.json();
    bodies.push(rest);
  }
  assert.deepEqual(bodies[0], { code: 'invalid_credentials', message: 'The Client Id, username or password is incorrect' });
  assert.deepEqual(bodies[1], bodies[0]);
  assert.deepEqual(bodies[2], bodies[0]);
});

test('sign-in is throttled per username like the token endpoint: 429 with Retry-After, even with the right password', async () => {
  await personWithToken(t.store, a.tenantId, 'viewer', 'throttled', clock.now());
  for (let i = 0; i < t.config.signInMaxFailuresPerUser; i++) {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/session',
      payload: { clientId: 'acme', username: 'throttled', password: 'wrong-password-here' },
    });
    assert.equal(res.statusCode, 401);
  }
  const res = await t.app.inject({
    method: 'POST',
    url: '/v1/session',
    payload: { clientId: 'acme', username: 'throttled', password: USER_PASSWORD },
  });
  assert.equal(res.statusCode, 429);
  assert.equal(res.json().code, 'rate_limited');
  assert.ok(Number(res.headers['retry-after']) >= 1);
  clock.advance(t.config.signInWindowSeconds + 1);
  const later = await t.app.inject({
    method: 'POST',
    url: '/v1/session',
    payload: { clientId: 'acme', username: 'throttled', password: USER_PASSWORD },
  });
  assert.equal(later.statusCode, 200);
});

test('a bad body names what is wrong', async () => {
  const res = await t.app.inject({ method: 'POST', url: '/v1/session', payload: { clientId: 'acme', username: 'alice', extra: 1 } });
  assert.equal(res.statusCode, 400);
  const body = res.json();
  assert.deepEqual(body.errors.map((e: any) => [e.field, e.code]).sort(), [
    ['extra', 'unknown_field'],
    ['password', 'missing_field'],
  ]);
  const notJson = await t.app.inject({ method: 'POST', url: '/v1/session', headers: { 'content-type': 'text/plain' }, payload: 'x' });
  assert.equal(notJson.statusCode, 415);
  assert.equal(notJson.json().code, 'unsupported_media_type');
});

test('GET /v1/session with the cookie reads the session afresh; DELETE ends it and clears the cookie', async () => {
  const s = await signIn(t.app, 'acme', 'alice');
  const me = await asSession(t.app, s, { method: 'GET', url: '/v1/session' });
  assert.equal(me.statusCode, 200);
  assert.equal(me.json().csrfToken, s.csrf);
  assert.equal(me.json().user.id, agent.userId);
  const out = await asSession(t.app, s, { method: 'DELETE', url: '/v1/session' });
  assert.equal(out.statusCode, 204);
  assert.match(String(out.headers['set-cookie']), /^qm_session=; .*Max-Age=0/);
  const again = await asSession(t.app, s, { method: 'GET', url: '/v1/session' });
  assert.equal(again.statusCode, 401);
  assert.equal(again.json().code, 'unauthenticated');
});

test('no credentials: 401 unauthenticated', async () => {
  const res = await t.app.inject({ method: 'GET', url: '/v1/session' });
  assert.equal(res.statusCode, 401);
  assert.equal(res.json().code, 'unauthenticated');
  assert.ok(res.json().requestId);
});

test('CSRF: a cookie write without the token, with a wrong token, or from another Origin is refused; with both it passes', async () => {
  const s = await signIn(t.app, 'acme', 'alice');
  const payload = { name: 'script', expiresAt: '2026-06-01T00:00:00Z' };
  const noToken = await t.app.inject({ method: 'POST', url: '/v1/me/tokens', headers: { cookie: s.cookie }, payload });
  assert.equal(noToken.statusCode, 403);
  assert.equal(noToken.json().code, 'csrf_failed');
  const wrong = await asSession(t.app, s, { method: 'POST', url: '/v1/me/tokens', headers: { 'x-csrf-token': 'x'.repeat(43) }, payload });
  assert.equal(wrong.json().code, 'csrf_failed');
  const otherOrigin = await asSession(t.app, s, {
    method: 'POST',
    url: '/v1/me/tokens',
    headers: { origin: 'https://evil.example' },
    payload,
  });
  assert.equal(otherOrigin.statusCode, 403);
  assert.equal(otherOrigin.json().code, 'csrf_failed');
  const sameOrigin = await asSession(t.app, s, {
    method: 'POST',
    url: '/v1/me/tokens',
    headers: { origin: 'http://localhost:80', host: 'localhost:80' },
    payload,
  });
  assert.equal(sameOrigin.statusCode, 201, sameOrigin.body);
  // nothing was created by the refused writes
  const list = await asSession(t.app, s, { method: 'GET', url: '/v1/me/tokens' });
  assert.equal(list.json().items.filter((x: any) => x.name === 'script').length, 1);
});

test('personal access tokens: created once with name and expiry, listed without the secret, work without CSRF, revoked, expire', async () => {
  const created = await asPerson(t.app, agent, {
    method: 'POST',
    url: '/v1/me/tokens',
    payload: { name: 'nightly', expiresAt: '2026-03-09T10:00:00Z' },
  });
  assert.equal(created.statusCode, 201, created.body);
  const tok = created.json();
  // the token names its tenant (base 36), then 256 random bits
  assert.match(tok.token, new RegExp(`^qmp_${a.tenantId.toString(36)}_[A-Za-z0-9_-]{43}$`));
  const list = await asPerson(t.app, { token: tok.token }, { method: 'GET', url: '/v1/me/tokens' });
  assert.equal(list.statusCode, 200);
  const listed = list.json().items.find((x: any) => x.id === tok.id);
  assert.equal(listed.name, 'nightly');
  assert.equal(listed.token, undefined);
  assert.equal(JSON.stringify(list.json()).includes(tok.token), false);
  // stored hashed only
  const stored = await t.store.db.selectFrom('user_tokens').select('token_hash').where('id', '=', tok.id).executeTakeFirstOrThrow();
  assert.notEqual(stored.token_hash, tok.token);
  assert.equal(stored.token_hash.length, 64);

  const tooLong = await asPerson(t.app, agent, {
    method: 'POST',
    url: '/v1/me/tokens',
    payload: { name: 'x', expiresAt: '2030-01-01T00:00:00Z' },
  });
  assert.equal(tooLong.statusCode, 400);
  const past = await asPerson(t.app, agent, {
    method: 'POST',
    url: '/v1/me/tokens',
    payload: { name: 'x', expiresAt: '2020-01-01T00:00:00Z' },
  });
  assert.equal(past.statusCode, 400);

  clock.advance(7 * 86400 + 1);
  const expired = await asPerson(t.app, { token: tok.token }, { method: 'GET', url: '/v1/session' });
  assert.equal(expired.statusCode, 401);

  const second = (
    await asPerson(t.app, agent, { method: 'POST', url: '/v1/me/tokens', payload: { name: 'other', expiresAt: '2026-04-30T00:00:00Z' } })
  ).json();
  const del = await asPerson(t.app, agent, { method: 'DELETE', url: `/v1/me/tokens/${second.id}` });
  assert.equal(del.statusCode, 204);
  assert.equal((await asPerson(t.app, second, { method: 'GET', url: '/v1/session' })).statusCode, 401);
  const delAgain = await asPerson(t.app, agent, { method: 'DELETE', url: `/v1/me/tokens/${second.id}` });
  assert.equal(delAgain.statusCode, 404);
});

test('a token is found by its tenant and hash: another tenant named, a non-canonical tenant, or no row of that tenant → 401', async () => {
  const b = await seedTenant(t.store, 'beta-tokens');
  const created = await asPerson(t.app, agent, {
    method: 'POST',
    url: '/v1/me/tokens',
    payload: { name: 'tenant-bound', expiresAt: '2026-12-01T00:00:00Z' },
  });
  assert.equal(created.statusCode, 201, created.body);
  const tok: string = created.json().token;
  const secret = tok.slice(`qmp_${a.tenantId.toString(36)}_`.length);
  assert.equal((await asPerson(t.app, { token: tok }, { method: 'GET', url: '/v1/session' })).statusCode, 200);
  // the same secret naming another tenant, or A's id written with a leading zero: not A's token
  for (const forged of [
    `qmp_${b.tenantId.toString(36)}_${secret}`,
    `qmp_0${a.tenantId.toString(36)}_${secret}`,
    `qmp_zzzzzzzzzzzz_${secret}`,
  ]) {
    const res = await asPerson(t.app, { token: forged }, { method: 'GET', url: '/v1/session' });
    assert.equal(res.statusCode, 401, forged);
    assert.equal(res.json().code, 'unauthenticated');
  }
  // a session cookie names its tenant too
  const s = await signIn(t.app, 'acme', 'alice');
  assert.match(s.cookie, new RegExp(`^qm_session=${a.tenantId.toString(36)}_[A-Za-z0-9_-]{43}$`));
});

test('tokens issued before tokens named their tenant (legacy rows) keep working by hash alone; a new row is never found that way', async () => {
  const user = await t.store.db
    .selectFrom('users')
    .select('id')
    .where('tenant_id', '=', a.tenantId)
    .where('username', '=', 'alice')
    .executeTakeFirstOrThrow();
  const legacyPat = `qmp_${randomSecret()}`;
  const legacySession = randomSecret();
  const now = clock.now();
  await t.store.db
    .insertInto('user_tokens')
    .values([
      {
        tenant_id: a.tenantId,
        user_id: user.id,
        kind: 'personal',
        name: 'old script',
        token_hash: sha256(legacyPat),
        expires_at: new Date(now.getTime() + 86_400_000),
        created_at: now,
        legacy: true,
      },
      {
        tenant_id: a.tenantId,
        user_id: user.id,
        kind: 'session',
        token_hash: sha256(legacySession),
        expires_at: new Date(now.getTime() + 3_600_000),
        created_at: now,
        legacy: true,
      },
    ])
    .execute();
  const viaPat = await asPerson(t.app, { token: legacyPat }, { method: 'GET', url: '/v1/session' });
  assert.equal(viaPat.statusCode, 200, viaPat.body);
  assert.equal(viaPat.json().user.username, 'alice');
  const viaCookie = await t.app.inject({ method: 'GET', url: '/v1/session', headers: { cookie: `qm_session=${legacySession}` } });
  assert.equal(viaCookie.statusCode, 200, viaCookie.body);
  // a legacy-shaped token whose row is not marked legacy is not found (only old rows are looked up by hash alone)
  const unmarked = `qmp_${randomSecret()}`;
  await t.store.db
    .insertInto('user_tokens')
    .values({
      tenant_id: a.tenantId,
      user_id: user.id,
      kind: 'personal',
      name: 'unmarked',
      token_hash: sha256(unmarked),
      expires_at: new Date(now.getTime() + 86_400_000),
      created_at: now,
    })
    .execute();
  assert.equal((await asPerson(t.app, { token: unmarked }, { method: 'GET', url: '/v1/session' })).statusCode, 401);
  // and a legacy token is revoked like any other
  const legacyRow = await t.store.db
    .selectFrom('user_tokens')
    .select('id')
    .where('tenant_id', '=', a.tenantId)
    .where('name', '=', 'old script')
    .executeTakeFirstOrThrow();
  assert.equal((await asPerson(t.app, agent, { method: 'DELETE', url: `/v1/me/tokens/${legacyRow.id}` })).statusCode, 204);
  assert.equal((await asPerson(t.app, { token: legacyPat }, { method: 'GET', url: '/v1/session' })).statusCode, 401);
});

test("a Mate's token is refused on /v1, and a person's token and cookie are refused on the Mate API", async () => {
  const mateToken = await getToken(t.app, a);
  const res = await t.app.inject({ method: 'GET', url: '/v1/session', headers: { authorization: `Bearer ${mateToken}` } });
  assert.equal(res.statusCode, 401);
  assert.equal(res.json().code, 'unauthenticated');
  const onMate = await t.app.inject({ method: 'GET', url: '/api/OkToRun/p1', headers: { authorization: `Bearer ${agent.token}` } });
  assert.equal(onMate.statusCode, 401);
  const s = await signIn(t.app, 'acme', 'alice');
  const cookieOnMate = await t.app.inject({ method: 'GET', url: '/api/OkToRun/p1', headers: { cookie: s.cookie } });
  assert.equal(cookieOnMate.statusCode, 401);
});

test('changing my password ends every session and token of mine; a cookie caller gets a new session', async () => {
  const p = await personWithToken(t.store, a.tenantId, 'viewer', 'carol', clock.now());
  const s1 = await signIn(t.app, 'acme', 'carol');
  const s2 = await signIn(t.app, 'acme', 'carol');
  const wrong = await asSession(t.app, s1, {
    method: 'POST',
    url: '/v1/me/password',
    payload: { currentPassword: 'not-my-password', newPassword: 'another-long-password' },
  });
  assert.equal(wrong.statusCode, 401);
  const short = await asSession(t.app, s1, {
    method: 'POST',
    url: '/v1/me/password',
    payload: { currentPassword: USER_PASSWORD, newPassword: 'short' },
  });
  assert.equal(short.statusCode, 400);
  assert.equal(short.json().errors[0].field, 'password');
  const ok = await asSession(t.app, s1, {
    method: 'POST',
    url: '/v1/me/password',
    payload: { currentPassword: USER_PASSWORD, newPassword: 'another-long-password' },
  });
  assert.equal(ok.statusCode, 200, ok.body);
  const fresh = { cookie: String(ok.headers['set-cookie']).split(';')[0], csrf: ok.json().csrfToken, body: ok.json() };
  assert.equal((await asSession(t.app, s1, { method: 'GET', url: '/v1/session' })).statusCode, 401);
  assert.equal((await asSession(t.app, s2, { method: 'GET', url: '/v1/session' })).statusCode, 401);
  assert.equal((await asPerson(t.app, p, { method: 'GET', url: '/v1/session' })).statusCode, 401);
  assert.equal((await asSession(t.app, fresh, { method: 'GET', url: '/v1/session' })).statusCode, 200);
  await signIn(t.app, 'acme', 'carol', 'another-long-password');
});

test('disabling a user ends their sessions and tokens at once', async () => {
  const p = await personWithToken(t.store, a.tenantId, 'agent', 'dave', clock.now());
  const s = await signIn(t.app, 'acme', 'dave');
  await t.app.services.units.transaction((tx) => setUserDisabled(tx, a.tenantId, p.userId, true, clock.now()));
  assert.equal((await asPerson(t.app, p, { method: 'GET', url: '/v1/session' })).statusCode, 401);
  assert.equal((await asSession(t.app, s, { method: 'GET', url: '/v1/session' })).statusCode, 401);
  const again = await t.app.inject({
    method: 'POST',
    url: '/v1/session',
    payload: { clientId: 'acme', username: 'dave', password: USER_PASSWORD },
  });
  assert.equal(again.statusCode, 401);
  assert.equal(again.json().code, 'invalid_credentials');
});

test('the first admin printed at first start can sign in', async () => {
  const fresh = await testApp();
  try {
    const demo = await ensureDemo(fresh.store);
    assert.ok(demo);
    const s = await signIn(fresh.app, demo.clientId, demo.admin.username, demo.admin.password);
    assert.equal(s.body.user.role, 'admin');
  } finally {
    await fresh.close();
  }
});
