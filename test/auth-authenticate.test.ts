/**
 * Authenticating Mates (docs/mate-api.md §2, docs/mate-api.md §5; checklist C21): expiry, revocation by password change,
 * disabling and API-secret rotation, tenants, forged and foreign tokens, cached state.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { Kysely, PostgresDialect, sql } from 'kysely';
import { SignJWT, generateKeyPair, decodeProtectedHeader, decodeJwt } from 'jose';
import { ManualClock } from '../src/lib/clock.js';
import { Refusal } from '../src/lib/errors.js';
import { authenticateAuthorization, authErrorHeaders } from '../src/auth/authenticate.js';
import { changeMatePassword, setMateDisabled } from '../src/accounts/service.js';
import { rotateApiSecret } from '../src/tenants/service.js';
import { ChangeNotifier } from '../src/lib/notifier.js';
import { issueMateToken, signClaims } from '../src/auth/tokens.js';
import { MateAuth } from '../src/auth/service.js';
import type { Database } from '../src/db/types.js';
import { createMate } from '../src/accounts/service.js';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';

const clock = new ManualClock('2026-01-05T09:00:00.000Z');
let t: TestApp;
let acme: SeededTenant;
let other: SeededTenant;

before(async () => {
  t = await testApp({ clock });
  acme = await seedTenant(t.store, 'acme', { timeZone: 'Europe/Copenhagen' });
  other = await seedTenant(t.store, 'other');
});
after(async () => {
  await t.close();
});

async function signIn(fields: { tenant?: SeededTenant; username?: string; password?: string; secret?: string } = {}) {
  const tenant = fields.tenant ?? acme;
  return t.app.inject({
    method: 'POST',
    url: '/connect/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      grant_type: 'password',
      client_id: tenant.clientId,
      client_secret: fields.secret ?? tenant.apiSecret,
      username: fields.username ?? tenant.mateUsername,
      password: fields.password ?? tenant.matePassword,
    }).toString(),
  });
}

async function tokenFor(fields: Parameters<typeof signIn>[0] = {}): Promise<string> {
  const r = await signIn(fields);
  assert.equal(r.statusCode, 200, r.body);
  return r.json().access_token;
}

function auth(token: string, mateAuth: MateAuth = t.app.services.auth) {
  return authenticateAuthorization(mateAuth, `Bearer ${token}`);
}

async function assertRefused(p: Promise<unknown>, code: 'invalid_token' | 'insufficient_scope' = 'invalid_token'): Promise<Refusal> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof Refusal, String(err));
    assert.equal(err.code, code, err.message);
    return err;
  }
  assert.fail(`expected ${code}`);
}

/** A Mate of its own for a test that revokes, so the other tests' Mates stay usable. */
async function freshMate(tenant: SeededTenant = acme) {
  const username = `bot-${crypto.randomBytes(4).toString('hex')}`;
  const password = 'bot-password-12345';
  const m = await createMate(t.store.db, tenant.tenantId, { username, password, displayName: `Bot ${username}` });
  return { id: m.id, username, password };
}

test('a Mate token gives the caller context; the Mate API reads it from the Authorization header', async () => {
  const token = await tokenFor();
  const ctx = await auth(token);
  assert.deepEqual(ctx, {
    tenantId: acme.tenantId,
    clientId: 'acme',
    timeZone: 'Europe/Copenhagen',
    numberFormat: 'point',
    mateId: acme.mateId,
    mateName: acme.mateUsername,
  });
  const viaRequest = await t.app.inject({ method: 'GET', url: '/api/OkToRun/none', headers: { authorization: `bearer ${token}` } });
  assert.equal(viaRequest.json().code, 'process_not_found', 'authenticated: the call got as far as the process');
  const m = await freshMate();
  assert.equal((await auth(await tokenFor({ username: m.username, password: m.password }))).mateName, `Bot ${m.username}`);
});

test('C21: no token, a malformed header or token → invalid_token with the challenges of docs/mate-api.md §5', async () => {
  // a token in the query is never read (docs/mate-api.md §3)
  const none = await t.app.inject({ method: 'GET', url: `/api/OkToRun/none?access_token=${await tokenFor()}` });
  assert.equal(none.statusCode, 401);
  assert.equal(none.json().code, 'invalid_token');
  assert.equal(none.headers['www-authenticate'], 'Bearer realm="apimate"');
  for (const h of ['Basic YTpi', 'Bearer', 'Bearer not-a-jwt', 'Bearer a.b.c', `Token ${await tokenFor()}`]) {
    const err = await assertRefused(authenticateAuthorization(t.app.services.auth, h));
    assert.equal(authErrorHeaders(err, true), 'Bearer realm="apimate", error="invalid_token"');
  }
  assert.equal(authErrorHeaders(new Refusal('insufficient_scope', 'x'), true), 'Bearer error="insufficient_scope", scope="apimate"');
  assert.equal(authErrorHeaders(new Refusal('task_not_found', 'x'), true), null);
});

test('C21: a token expires after 3600 s (30 s leeway), by the injected clock', async () => {
  const token = await tokenFor();
  const start = clock.now();
  try {
    clock.advance(3600 + 29);
    await auth(token);
    clock.advance(2);
    const err = await assertRefused(auth(token));
    assert.match(err.message, /expired/);
  } finally {
    clock.set(start);
  }
});

test('C21: a password change revokes earlier tokens at once; the new password signs in', async () => {
  const m = await freshMate();
  const token = await tokenFor({ username: m.username, password: m.password });
  await auth(token);
  await t.app.services.units.transaction((tx) => changeMatePassword(tx, acme.tenantId, m.id, 'a-brand-new-password', clock.now()));
  await assertRefused(auth(token));
  assert.equal((await signIn({ username: m.username, password: m.password })).json().error, 'invalid_grant');
  const fresh = await tokenFor({ username: m.username, password: 'a-brand-new-password' });
  assert.equal(decodeJwt(fresh).cv, 2);
  assert.equal((await auth(fresh)).mateId, m.id);
});

test('disabling a Mate revokes its tokens; enabling it again does not bring them back', async () => {
  const m = await freshMate();
  const token = await tokenFor({ username: m.username, password: m.password });
  await t.app.services.units.transaction((tx) => setMateDisabled(tx, acme.tenantId, m.id, true, clock.now()));
  await assertRefused(auth(token));
  assert.equal((await signIn({ username: m.username, password: m.password })).statusCode, 400);
  await t.app.services.units.transaction((tx) => setMateDisabled(tx, acme.tenantId, m.id, false, clock.now()));
  await assertRefused(auth(token));
  assert.equal((await auth(await tokenFor({ username: m.username, password: m.password }))).mateId, m.id);
});

test('rotating the API secret without grace: old secret and old tokens refused at once', async () => {
  const tenant = await seedTenant(t.store, 'rotate-now');
  const token = await tokenFor({ tenant });
  const { apiSecret, secretVersion } = await t.app.services.units.transaction((tx) => rotateApiSecret(tx, tenant.tenantId, clock.now()));
  assert.equal(secretVersion, 2);
  assert.notEqual(apiSecret, tenant.apiSecret);
  await assertRefused(auth(token));
  const old = await signIn({ tenant });
  assert.equal(old.statusCode, 401);
  assert.equal(old.json().error, 'invalid_client');
  const fresh = await tokenFor({ tenant, secret: apiSecret });
  assert.equal(decodeJwt(fresh).sv, 2);
  assert.equal((await auth(fresh)).tenantId, tenant.tenantId);
  const stored = await t.store.db
    .selectFrom('tenant_api_secrets')
    .select('secret_hash')
    .where('tenant_id', '=', tenant.tenantId)
    .where('version', '=', 2)
    .executeTakeFirstOrThrow();
  assert.equal(stored.secret_hash, crypto.createHash('sha256').update(apiSecret).digest('hex'), 'only the SHA-256 is kept');
});

test('rotating the API secret with a grace period: old secret and old-sv tokens work until it ends', async () => {
  const tenant = await seedTenant(t.store, 'rotate-grace');
  await t.store.db.updateTable('tenants').set({ secret_grace_seconds: 300 }).where('id', '=', tenant.tenantId).execute();
  const start = clock.now();
  try {
    const token = await tokenFor({ tenant });
    const { apiSecret } = await t.app.services.units.transaction((tx) => rotateApiSecret(tx, tenant.tenantId, clock.now()));
    await auth(token);
    const viaOld = await tokenFor({ tenant }); // the old secret still signs in...
    assert.equal(decodeJwt(viaOld).sv, 1, '...and its token carries the old version, so it ends with the grace');
    const viaNew = await tokenFor({ tenant, secret: apiSecret });
    clock.advance(299);
    await auth(token);
    clock.advance(2);
    await assertRefused(auth(token));
    await assertRefused(auth(viaOld));
    assert.equal((await signIn({ tenant })).statusCode, 401);
    assert.equal((await auth(viaNew)).tenantId, tenant.tenantId);
  } finally {
    clock.set(start);
  }
});

test('a revocation made by another process (directly in the store) lands within 5 s; no query per call', async () => {
  const m = await freshMate();
  const token = await tokenFor({ username: m.username, password: m.password });
  await auth(token);
  let checkouts = 0;
  const onAcquire = () => checkouts++;
  t.store.pool.on('acquire', onAcquire);
  try {
    for (let i = 0; i < 50; i++) await auth(token);
    assert.equal(checkouts, 0, 'cached state: no database query per call');
  } finally {
    t.store.pool.off('acquire', onAcquire);
  }
  await sql`UPDATE mates SET credential_version = credential_version + 1 WHERE id = ${m.id}`.execute(t.store.db);
  clock.advance(2.1);
  await assertRefused(auth(token));

  // the same for disabling through the SQL of another process
  const m2 = await freshMate();
  const token2 = await tokenFor({ username: m2.username, password: m2.password });
  await auth(token2);
  await sql`UPDATE mates SET disabled = true WHERE id = ${m2.id}`.execute(t.store.db);
  clock.advance(2.1);
  await assertRefused(auth(token2));
});

test("another tenant's token cannot act as this tenant", async () => {
  const otherToken = await tokenFor({ tenant: other });
  const ctx = await auth(otherToken);
  assert.equal(ctx.tenantId, other.tenantId);
  assert.notEqual(ctx.tenantId, acme.tenantId);
  // a token naming this tenant but another tenant's Mate (even signed with the real key) is refused
  const forged = await issueMateToken(t.app.services.auth.keys, {
    issuer: 'queuemate',
    mateId: other.mateId,
    clientId: 'acme',
    credentialVersion: 1,
    secretVersion: 1,
    now: clock.now(),
  });
  await assertRefused(auth(forged.token));
  // and one naming an unknown tenant
  const ghost = await issueMateToken(t.app.services.auth.keys, {
    issuer: 'queuemate',
    mateId: acme.mateId,
    clientId: 'ghost',
    credentialVersion: 1,
    secretVersion: 1,
    now: clock.now(),
  });
  await assertRefused(auth(ghost.token));
});

function b64(o: object): string {
  return Buffer.from(JSON.stringify(o)).toString('base64url');
}

test('forged tokens are refused: unknown kid, alg none, HS256 keyed with the public key, tampered claims, wrong iss or aud', async () => {
  const real = await tokenFor();
  const header = decodeProtectedHeader(real);
  const claims = decodeJwt(real);

  const stranger = await generateKeyPair('EdDSA');
  const unknownKid = await new SignJWT(claims)
    .setProtectedHeader({ alg: 'EdDSA', typ: 'JWT', kid: 'not-a-known-kid' })
    .sign(stranger.privateKey);
  await assertRefused(auth(unknownKid));
  const strangerWithRealKid = await new SignJWT(claims)
    .setProtectedHeader({ alg: 'EdDSA', typ: 'JWT', kid: header.kid })
    .sign(stranger.privateKey);
  await assertRefused(auth(strangerWithRealKid));

  await assertRefused(auth(`${b64({ alg: 'none', typ: 'JWT', kid: header.kid })}.${b64(claims)}.`));
  await assertRefused(auth(`${b64({ alg: 'none', typ: 'JWT', kid: header.kid })}.${b64(claims)}.c2ln`));

  const row = await t.store.db.selectFrom('signing_keys').select('public_jwk').where('kid', '=', header.kid!).executeTakeFirstOrThrow();
  const publicJwk = row.public_jwk as { x: string };
  for (const secret of [
    Buffer.from(publicJwk.x, 'base64url'),
    new TextEncoder().encode(JSON.stringify(publicJwk)),
    new TextEncoder().encode(publicJwk.x),
  ]) {
    const hs = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid: header.kid }).sign(secret);
    await assertRefused(auth(hs));
  }

  const [h, , s] = real.split('.');
  await assertRefused(auth(`${h}.${b64({ ...claims, sub: String(other.mateId) })}.${s}`));

  await assertRefused(auth(await signClaims(t.app.services.auth.keys, { ...claims, iss: 'someone-else' })));
  await assertRefused(auth(await signClaims(t.app.services.auth.keys, { ...claims, aud: 'other-api' })));
  // control: the same claims signed the same way are accepted
  assert.equal((await auth(await signClaims(t.app.services.auth.keys, claims))).mateId, acme.mateId);
});

test("a valid token that is not a Mate's → insufficient_scope", async () => {
  const claims = decodeJwt(await tokenFor());
  const err = await assertRefused(
    auth(await signClaims(t.app.services.auth.keys, { ...claims, 'auth.anymate.app/UserType': 'User' })),
    'insufficient_scope',
  );
  assert.equal(authErrorHeaders(err, true), 'Bearer error="insufficient_scope", scope="apimate"');
});

test("a second process (its own caches and keys) accepts this process's tokens and sees revocations", async () => {
  // another Kysely on the same database: not reached by this process's local invalidation
  const db2 = new Kysely<Database>({ dialect: new PostgresDialect({ pool: t.store.pool }) });
  const second = await MateAuth.create(t.config, { db: db2 }, clock, new ChangeNotifier());
  const m = await freshMate();
  const token = await tokenFor({ username: m.username, password: m.password });
  assert.equal((await auth(token, second)).mateId, m.id);
  await t.app.services.units.transaction((tx) => changeMatePassword(tx, acme.tenantId, m.id, 'changed-elsewhere-123', clock.now()));
  await assertRefused(auth(token)); // here: at once
  clock.advance(2.1);
  await assertRefused(auth(token, second)); // there: after its entry aged
  second.close();
});
