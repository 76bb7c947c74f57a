/** POST /connect/token (docs/mate-api.md §2; checklist C1, C2, C8, C13): answers, errors, check order. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import type { LightMyRequestResponse } from 'fastify';
import { ManualClock } from '../src/lib/clock.js';
import { setMateDisabled } from '../src/accounts/service.js';
import { authenticateAuthorization } from '../src/auth/authenticate.js';
import { OverloadedError, Semaphore } from '../src/auth/semaphore.js';
import { parseForm } from '../src/mate-api/routes/token.js';
import { createMate } from '../src/accounts/service.js';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant, seedUser, type SeededTenant } from './helpers/seed.js';

const FORM = 'application/x-www-form-urlencoded';
const clock = new ManualClock('2026-01-05T09:00:00.000Z');
let t: TestApp;
let acme: SeededTenant;
let other: SeededTenant;
let disabledMate: { username: string; password: string };

before(async () => {
  t = await testApp({ clock });
  acme = await seedTenant(t.store, 'acme');
  other = await seedTenant(t.store, 'other');
  await seedUser(t.store, acme.tenantId, 'alice');
  const m = await createMate(t.store.db, acme.tenantId, { username: 'OffBot', password: 'off-bot-password-1' });
  await t.app.services.units.transaction((tx) => setMateDisabled(tx, acme.tenantId, m.id, true, clock.now()));
  disabledMate = { username: 'OffBot', password: 'off-bot-password-1' };
});
after(async () => {
  await t.close();
});

function good(overrides: Record<string, string | undefined> = {}): Record<string, string> {
  const f: Record<string, string | undefined> = {
    grant_type: 'password',
    client_id: acme.clientId,
    client_secret: acme.apiSecret,
    username: acme.mateUsername,
    password: acme.matePassword,
    ...overrides,
  };
  return Object.fromEntries(Object.entries(f).filter(([, v]) => v !== undefined)) as Record<string, string>;
}

function post(
  payload: string | Record<string, string>,
  opts: { headers?: Record<string, string>; url?: string; contentType?: string | null } = {},
) {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.contentType !== null) headers['content-type'] = opts.contentType ?? FORM;
  return t.app.inject({
    method: 'POST',
    url: opts.url ?? '/connect/token',
    headers,
    payload: typeof payload === 'string' ? payload : new URLSearchParams(payload).toString(),
  });
}

function basic(id: string, secret: string): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
}

function assertNoStore(res: LightMyRequestResponse): void {
  assert.equal(res.headers['cache-control'], 'no-store');
  assert.equal(res.headers['pragma'], 'no-cache');
  assert.match(String(res.headers['content-type']), /^application\/json/);
}

function assertError(res: LightMyRequestResponse, status: number, error: string): void {
  assert.equal(res.statusCode, status, res.body);
  assertNoStore(res);
  const body = res.json();
  assert.deepEqual(Object.keys(body), ['error', 'error_description']);
  assert.equal(body.error, error);
  assert.equal(typeof body.error_description, 'string');
  assert.ok(body.error_description.length > 0);
}

test('C1: a Mate signs in with the Python client form → exactly four keys, integer expires_in, no-store', async () => {
  const res = await post(good());
  assert.equal(res.statusCode, 200, res.body);
  assertNoStore(res);
  const body = res.json();
  assert.deepEqual(Object.keys(body).sort(), ['access_token', 'expires_in', 'scope', 'token_type']);
  assert.equal(body.expires_in, 3600);
  assert.ok(Number.isInteger(body.expires_in));
  assert.equal(body.token_type, 'Bearer');
  assert.equal(body.scope, 'apimate');
  assert.equal(typeof body.access_token, 'string');
  assert.equal(res.headers['www-authenticate'], undefined);
});

test('C2/C13: the token decodes unverified to the claims of docs/mate-api.md §2', async () => {
  const res = await post(good());
  const jwt: string = res.json().access_token;
  const segments = jwt.split('.');
  assert.equal(segments.length, 3);
  for (const s of segments) assert.match(s, /^[A-Za-z0-9_-]+$/);
  const header = decodeProtectedHeader(jwt);
  assert.deepEqual(Object.keys(header).sort(), ['alg', 'kid', 'typ']);
  assert.equal(header.alg, 'EdDSA');
  assert.equal(header.typ, 'JWT');
  assert.equal(typeof header.kid, 'string');
  assert.ok(header.kid!.length > 0);
  const c = decodeJwt(jwt);
  assert.deepEqual(
    Object.keys(c).sort(),
    ['aud', 'auth.anymate.app/CustomerKey', 'auth.anymate.app/UserType', 'cv', 'exp', 'iat', 'iss', 'jti', 'scope', 'sub', 'sv'].sort(),
  );
  assert.equal(c.iss, 'queuemate');
  assert.equal(c.sub, String(acme.mateId));
  assert.equal(c.aud, 'apimate');
  assert.equal(c.scope, 'apimate');
  assert.ok(Number.isInteger(c.iat) && Number.isInteger(c.exp));
  assert.equal(c.iat, Math.floor(clock.now().getTime() / 1000));
  assert.equal(c.exp, c.iat! + 3600);
  assert.ok(c.exp! - clock.now().getTime() / 1000 > 15 * 60, '.NET client refreshes below 15 min left');
  assert.equal(typeof c.jti, 'string');
  assert.match(c.jti!, /^[A-Za-z0-9_-]{22,}$/, 'at least 128 bits, base64url');
  assert.equal(c['auth.anymate.app/CustomerKey'], 'acme');
  assert.equal(c['auth.anymate.app/UserType'], 'Mate');
  assert.equal(c.cv, 1);
  assert.equal(c.sv, 1);
});

test('each sign-in issues a new token (new jti) and leaves earlier ones valid', async () => {
  const a = (await post(good())).json().access_token;
  const b = (await post(good())).json().access_token;
  assert.notEqual(decodeJwt(a).jti, decodeJwt(b).jti);
  for (const tok of [a, b]) assert.equal((await authenticateAuthorization(t.app.services.auth, `Bearer ${tok}`)).mateId, acme.mateId);
});

test('Client Id and username compare case-insensitively; scope=apimate and unknown fields are accepted', async () => {
  const res = await post(good({ client_id: 'ACME', username: acme.mateUsername.toUpperCase(), scope: 'apimate', extra: 'ignored' }));
  assert.equal(res.statusCode, 200, res.body);
  const c = decodeJwt(res.json().access_token);
  assert.equal(c['auth.anymate.app/CustomerKey'], 'acme');
  assert.equal(c.sub, String(acme.mateId));
});

test('the path matches case-insensitively and with one trailing slash; charset parameter accepted', async () => {
  for (const url of ['/connect/token/', '/CONNECT/Token', '/Connect/Token/']) {
    const res = await post(good(), { url, contentType: 'application/x-www-form-urlencoded; charset=UTF-8' });
    assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
  }
});

test('C8: wrong password and unknown user → 400 invalid_grant with byte-identical bodies', async () => {
  const wrong = await post(good({ password: 'not-the-password' }));
  const unknown = await post(good({ username: 'nobody-here' }));
  assertError(wrong, 400, 'invalid_grant');
  assertError(unknown, 400, 'invalid_grant');
  assert.equal(wrong.body, unknown.body);
});

test("a person's credentials and a disabled Mate → 400 invalid_grant", async () => {
  const person = await post(good({ username: 'alice', password: 'a-long-enough-password' }));
  assertError(person, 400, 'invalid_grant');
  assert.equal(person.body, (await post(good({ username: 'nobody-here' }))).body, 'a person looks like an unknown user');
  assertError(await post(good(disabledMate)), 400, 'invalid_grant');
  // another tenant's Mate is unknown in this tenant
  assertError(await post(good({ username: other.mateUsername })), 400, 'invalid_grant');
});

test('unknown Client Id and wrong secret → 401 invalid_client, identical bodies, no Basic challenge for form credentials', async () => {
  const unknown = await post(good({ client_id: 'no-such-client' }));
  const wrong = await post(good({ client_secret: 'wrong-secret' }));
  const otherSecret = await post(good({ client_secret: other.apiSecret }));
  const missing = await post(good({ client_secret: undefined }));
  for (const r of [unknown, wrong, otherSecret, missing]) {
    assertError(r, 401, 'invalid_client');
    assert.equal(r.headers['www-authenticate'], undefined);
  }
  assert.equal(unknown.body, wrong.body);
});

test('HTTP Basic client credentials work; a failure then carries WWW-Authenticate: Basic', async () => {
  const ok = await post(good({ client_id: undefined, client_secret: undefined }), {
    headers: { authorization: basic('ACME', acme.apiSecret) },
  });
  assert.equal(ok.statusCode, 200, ok.body);
  assert.equal(decodeJwt(ok.json().access_token)['auth.anymate.app/CustomerKey'], 'acme');

  const bad = await post(good({ client_id: undefined, client_secret: undefined }), { headers: { authorization: basic('acme', 'wrong') } });
  assertError(bad, 401, 'invalid_client');
  assert.match(String(bad.headers['www-authenticate']), /^Basic\b/);
  const unknown = await post(good({ client_id: undefined, client_secret: undefined }), {
    headers: { authorization: basic('nope', 'wrong') },
  });
  assert.equal(unknown.body, bad.body);

  // the same Client Id repeated in the form is tolerated
  const same = await post(good({ client_secret: undefined }), { headers: { authorization: basic('acme', acme.apiSecret) } });
  assert.equal(same.statusCode, 200, same.body);
});

test('Basic and form credentials together → 400 invalid_request', async () => {
  const h = { authorization: basic('acme', acme.apiSecret) };
  assertError(await post(good(), { headers: h }), 400, 'invalid_request'); // form client_secret too
  assertError(await post(good({ client_id: 'other', client_secret: undefined }), { headers: h }), 400, 'invalid_request');
  assertError(
    await post(good({ client_id: undefined, client_secret: undefined }), { headers: { authorization: 'Basic !!!' } }),
    400,
    'invalid_request',
  );
  assertError(
    await post(good({ client_id: undefined, client_secret: undefined }), {
      headers: { authorization: `Basic ${Buffer.from('no-colon').toString('base64')}` },
    }),
    400,
    'invalid_request',
  );
});

test('not form-encoded → 400 invalid_request (not 415)', async () => {
  const formText = new URLSearchParams(good()).toString();
  assertError(await post(JSON.stringify(good()), { contentType: 'application/json' }), 400, 'invalid_request');
  assertError(await post(formText, { contentType: 'text/plain' }), 400, 'invalid_request');
  assertError(await post(formText, { contentType: 'multipart/form-data; boundary=x' }), 400, 'invalid_request');
  assertError(await post(formText, { contentType: 'not a media type' }), 400, 'invalid_request');
  assertError(await post('', { contentType: null }), 400, 'invalid_request');
  assertError(await post(formText, { contentType: null }), 400, 'invalid_request');
  assertError(await post('grant_type=password&username=%E0%A4%A', {}), 400, 'invalid_request');
});

test('a field missing (or empty) or repeated → 400 invalid_request', async () => {
  for (const f of ['grant_type', 'client_id', 'username', 'password']) {
    assertError(await post(good({ [f]: undefined })), 400, 'invalid_request');
    assertError(await post(good({ [f]: '' })), 400, 'invalid_request');
  }
  const base = new URLSearchParams(good({ scope: 'apimate' })).toString();
  for (const f of ['grant_type', 'client_id', 'client_secret', 'username', 'password', 'scope']) {
    const res = await post(`${base}&${f}=${encodeURIComponent(good({ scope: 'apimate' })[f])}`);
    assertError(res, 400, 'invalid_request');
    assert.match(res.json().error_description, new RegExp(f));
  }
  // a repeated unknown field is ignored
  assert.equal((await post(`${base}&x=1&x=2`)).statusCode, 200);
});

test('a body over 16 KiB is refused with an OAuth error body', async () => {
  const res = await post(`${new URLSearchParams(good()).toString()}&pad=${'a'.repeat(20_000)}`);
  assertError(res, 413, 'invalid_request');
});

test('grant_type other than password → 400 unsupported_grant_type; scope other than apimate → 400 invalid_scope', async () => {
  assertError(
    await post(good({ grant_type: 'client_credentials', username: undefined, password: undefined })),
    400,
    'unsupported_grant_type',
  );
  assertError(await post(good({ grant_type: 'Password' })), 400, 'unsupported_grant_type');
  assertError(await post(good({ scope: 'openid' })), 400, 'invalid_scope');
  assertError(await post(good({ scope: 'apimate offline_access' })), 400, 'invalid_scope');
});

test('checks run in the order form, client, grant type, scope, user', async () => {
  // form before client
  assertError(await post(good({ client_id: 'no-such-client', password: undefined })), 400, 'invalid_request');
  // client before grant type
  assertError(await post(good({ client_secret: 'wrong', grant_type: 'client_credentials' })), 401, 'invalid_client');
  // grant type before scope
  assertError(await post(good({ grant_type: 'refresh_token', scope: 'bad' })), 400, 'unsupported_grant_type');
  // scope before user
  assertError(await post(good({ scope: 'bad', password: 'wrong-password' })), 400, 'invalid_scope');
});

test('parseForm decodes +, percent escapes and repeated keys', () => {
  const f = parseForm('a=1+2&b=%C3%A6&a=3&flag&&=x')!;
  assert.deepEqual(f.get('a'), ['1 2', '3']);
  assert.deepEqual(f.get('b'), ['æ']);
  assert.deepEqual(f.get('flag'), ['']);
  assert.equal(parseForm('a=%ZZ'), null);
});

test('the hashing semaphore runs at most `max` at once and refuses callers beyond the queue', async () => {
  const sem = new Semaphore(2, 1);
  let running = 0;
  let peak = 0;
  const gates: Array<() => void> = [];
  const job = () =>
    sem.run(async () => {
      running++;
      peak = Math.max(peak, running);
      await new Promise<void>((r) => gates.push(r));
      running--;
    });
  const a = job();
  const b = job();
  const c = job(); // waits
  await assert.rejects(job(), OverloadedError);
  await new Promise((r) => setImmediate(r));
  assert.equal(running, 2);
  gates.shift()!();
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  assert.equal(running, 2, 'the waiting caller took the freed slot');
  while (gates.length) gates.shift()!();
  await new Promise((r) => setImmediate(r));
  while (gates.length) gates.shift()!();
  await Promise.all([a, b, c]);
  assert.equal(peak, 2);
});
