/** Token signing keys (docs/mate-api.md §2): generated Ed25519 in the store, rotation, key file, HS256. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Kysely, PostgresDialect } from 'kysely';
import { decodeJwt, decodeProtectedHeader, jwtVerify, calculateJwkThumbprint, exportJWK, importJWK, type JWK } from 'jose';
import { ManualClock } from '../src/lib/clock.js';
import { Refusal } from '../src/lib/errors.js';
import { testConfig } from '../src/config.js';
import { createApp } from '../src/app.js';
import { ChangeNotifier } from '../src/lib/notifier.js';
import { KeyRing, rotateSigningKey, RETIRED_KEY_GRACE_SECONDS, KEY_REFRESH_SECONDS } from '../src/auth/keys.js';
import { authenticateAuthorization } from '../src/auth/authenticate.js';
import type { Database } from '../src/db/types.js';
import { testApp, type TestApp } from './helpers/app.js';
import { testStore } from './helpers/db.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';

async function signIn(t: TestApp, s: SeededTenant): Promise<string> {
  const r = await t.app.inject({
    method: 'POST',
    url: '/connect/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      grant_type: 'password',
      client_id: s.clientId,
      client_secret: s.apiSecret,
      username: s.mateUsername,
      password: s.matePassword,
    }).toString(),
  });
  assert.equal(r.statusCode, 200, r.body);
  return r.json().access_token;
}

async function refused(p: Promise<unknown>): Promise<void> {
  await assert.rejects(p, (err) => err instanceof Refusal && err.code === 'invalid_token');
}

test('EdDSA by default: one key generated and stored at first use; the token verifies with its public JWK', async () => {
  const clock = new ManualClock();
  const t = await testApp({ clock });
  try {
    assert.equal((await t.store.db.selectFrom('signing_keys').selectAll().execute()).length, 0, 'building the app touches no key');
    const s = await seedTenant(t.store, 'acme');
    const token = await signIn(t, s);
    const rows = await t.store.db.selectFrom('signing_keys').selectAll().execute();
    assert.equal(rows.length, 1);
    assert.equal(rows[0].alg, 'EdDSA');
    assert.equal(rows[0].retired_at, null);
    const header = decodeProtectedHeader(token);
    assert.equal(header.alg, 'EdDSA');
    assert.equal(header.kid, rows[0].kid);
    assert.equal(rows[0].kid, await calculateJwkThumbprint(rows[0].public_jwk as JWK));
    const { payload } = await jwtVerify(token, await importJWK(rows[0].public_jwk as JWK, 'EdDSA'), { currentDate: clock.now() });
    assert.equal(payload.sub, String(s.mateId));
    await signIn(t, s);
    assert.equal((await t.store.db.selectFrom('signing_keys').selectAll().execute()).length, 1, 'the key is reused');
  } finally {
    await t.close();
  }
});

test('several processes starting at once on an empty store create exactly one key', async () => {
  const store = await testStore();
  const clock = new ManualClock();
  try {
    // separate Kysely instances: like separate processes, no shared in-memory state
    const dbs = Array.from({ length: 6 }, () => new Kysely<Database>({ dialect: new PostgresDialect({ pool: store.pool }) }));
    const rings = await Promise.all(
      dbs.map((db) => KeyRing.create(db, clock, { tokenKeyFile: null, tokenSecret: null }, new ChangeNotifier())),
    );
    const keys = await Promise.all(rings.map((r) => r.signingKey()));
    assert.equal(new Set(keys.map((k) => k.kid)).size, 1);
    const rows = await store.db.selectFrom('signing_keys').selectAll().execute();
    assert.equal(rows.length, 1);
    rings.forEach((r) => r.close());
  } finally {
    await store.close();
  }
});

test('rotateSigningKey: new tokens use the new key, old tokens still verify, the retired key ends after one lifetime', async () => {
  const clock = new ManualClock();
  const t = await testApp({ clock });
  try {
    const s = await seedTenant(t.store, 'acme');
    const before = await signIn(t, s);
    const oldKid = decodeProtectedHeader(before).kid!;
    // another process: a ring on another Kysely instance, not told of the rotation
    const elsewhere = await KeyRing.create(
      new Kysely<Database>({ dialect: new PostgresDialect({ pool: t.store.pool }) }),
      clock,
      { tokenKeyFile: null, tokenSecret: null },
      new ChangeNotifier(),
    );
    assert.equal((await elsewhere.signingKey()).kid, oldKid);

    const { kid, retired } = await t.app.services.units.transaction((tx) => rotateSigningKey(tx, clock.now()));
    assert.notEqual(kid, oldKid);
    assert.deepEqual(retired, [oldKid]);
    const rows = await t.store.db.selectFrom('signing_keys').select(['kid', 'retired_at']).orderBy('created_at').execute();
    assert.equal(rows.length, 2);
    assert.equal(rows.find((r) => r.kid === oldKid)!.retired_at!.getTime(), clock.now().getTime());

    const afterToken = await signIn(t, s);
    assert.equal(decodeProtectedHeader(afterToken).kid, kid, 'this process signs with the new key at once');
    assert.equal((await authenticateAuthorization(t.app.services.auth, `Bearer ${before}`)).mateId, s.mateId, 'old token still verifies');
    assert.equal((await authenticateAuthorization(t.app.services.auth, `Bearer ${afterToken}`)).mateId, s.mateId);

    assert.equal((await elsewhere.signingKey()).kid, oldKid, 'another process keeps its key until its refresh');
    assert.ok(await elsewhere.verificationKey(kid), 'an unknown kid makes it re-read the keys');
    clock.advance(KEY_REFRESH_SECONDS);
    assert.equal((await elsewhere.signingKey()).kid, kid, '...and it signs with the new key within the refresh period');

    const ring = t.app.services.auth.keys;
    clock.advance(RETIRED_KEY_GRACE_SECONDS - KEY_REFRESH_SECONDS - 1);
    assert.ok(await ring.verificationKey(oldKid), 'the retired key verifies for a token lifetime');
    clock.advance(2);
    assert.equal(await ring.verificationKey(oldKid), null, 'then it is gone');
    assert.ok(await ring.verificationKey(kid));
    await refused(authenticateAuthorization(t.app.services.auth, `Bearer ${before}`));
    elsewhere.close();
  } finally {
    await t.close();
  }
});

test('HS256 mode (tokenSecret): HS256 tokens with the secret, nothing stored, EdDSA tokens refused', async () => {
  const clock = new ManualClock();
  const secret = 'x'.repeat(24) + crypto.randomBytes(16).toString('hex');
  const t = await testApp({ clock, config: { tokenSecret: secret } });
  try {
    const s = await seedTenant(t.store, 'acme');
    const token = await signIn(t, s);
    const header = decodeProtectedHeader(token);
    assert.equal(header.alg, 'HS256');
    assert.equal(header.typ, 'JWT');
    assert.equal(typeof header.kid, 'string');
    await jwtVerify(token, new TextEncoder().encode(secret), { currentDate: clock.now() });
    assert.equal((await authenticateAuthorization(t.app.services.auth, `Bearer ${token}`)).mateId, s.mateId);
    assert.equal((await t.store.db.selectFrom('signing_keys').selectAll().execute()).length, 0);

    // a token of the default (EdDSA, stored-key) mode on the same store is not accepted here
    const eddsa = await createApp(testConfig(), { store: t.store, clock });
    try {
      const r = await eddsa.inject({
        method: 'POST',
        url: '/connect/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({
          grant_type: 'password',
          client_id: s.clientId,
          client_secret: s.apiSecret,
          username: s.mateUsername,
          password: s.matePassword,
        }).toString(),
      });
      const other = r.json().access_token as string;
      assert.equal(decodeProtectedHeader(other).alg, 'EdDSA');
      await refused(authenticateAuthorization(t.app.services.auth, `Bearer ${other}`));
      await refused(authenticateAuthorization(eddsa.services.auth, `Bearer ${token}`));
    } finally {
      await eddsa.close();
    }
  } finally {
    await t.close();
  }
});

test("key file mode (tokenKeyFile): tokens signed with the file's Ed25519 key; a bad file stops start-up", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qm-key-'));
  const { privateKey, publicKey } = crypto.generateKeyPairSync('ed25519');
  const file = path.join(dir, 'token.pem');
  fs.writeFileSync(file, privateKey.export({ type: 'pkcs8', format: 'pem' }));
  const clock = new ManualClock();
  const t = await testApp({ clock, config: { tokenKeyFile: file } });
  try {
    const s = await seedTenant(t.store, 'acme');
    const token = await signIn(t, s);
    const publicJwk = await exportJWK(publicKey);
    assert.equal(decodeProtectedHeader(token).kid, await calculateJwkThumbprint(publicJwk));
    const { payload } = await jwtVerify(token, publicKey, { currentDate: clock.now(), algorithms: ['EdDSA'] });
    assert.equal(payload.sub, String(s.mateId));
    assert.equal(decodeJwt(token).exp, decodeJwt(token).iat! + 3600);
    assert.equal((await t.store.db.selectFrom('signing_keys').selectAll().execute()).length, 0);

    fs.writeFileSync(path.join(dir, 'bad.pem'), 'not a key');
    await assert.rejects(
      createApp(testConfig({ tokenKeyFile: path.join(dir, 'bad.pem') }), { store: t.store, clock }),
      /not a PEM PKCS#8 Ed25519/,
    );
    await assert.rejects(
      createApp(testConfig({ tokenKeyFile: path.join(dir, 'missing.pem') }), { store: t.store, clock }),
      /cannot read the token key file/,
    );
  } finally {
    await t.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
