/** Sign-in throttling (docs/mate-api.md §2): per username (within a tenant) and per address, in the store. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { ManualClock } from '../src/lib/clock.js';
import { createApp } from '../src/app.js';
import { createMate } from '../src/accounts/service.js';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';

const clock = new ManualClock('2026-01-05T09:00:00.000Z');
const WINDOW = 60;
let t: TestApp;
let acme: SeededTenant;
let other: SeededTenant;
const ROBOT_PASSWORD = 'robot-password-123';
let addressCounter = 0;

before(async () => {
  t = await testApp({ clock, config: { signInMaxFailuresPerUser: 3, signInMaxFailuresPerAddress: 5, signInWindowSeconds: WINDOW } });
  acme = await seedTenant(t.store, 'acme');
  other = await seedTenant(t.store, 'other');
  for (const tenant of [acme, other]) {
    for (const name of ['robot', 'robot2', 'robot3', 'robot4', 'robot5'])
      await createMate(t.store.db, tenant.tenantId, { username: name, password: ROBOT_PASSWORD });
  }
});
after(async () => {
  await t.close();
});

/** A fresh client address per test, so that address counts do not leak between tests. */
function newAddress(): string {
  return `10.0.0.${++addressCounter}`;
}

function signIn(opts: { tenant?: SeededTenant; username: string; password: string; address: string; app?: FastifyInstance }) {
  const tenant = opts.tenant ?? acme;
  return (opts.app ?? t.app).inject({
    method: 'POST',
    url: '/connect/token',
    remoteAddress: opts.address,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      grant_type: 'password',
      client_id: tenant.clientId,
      client_secret: tenant.apiSecret,
      username: opts.username,
      password: opts.password,
    }).toString(),
  });
}

async function fail(username: string, address: string, times: number, tenant: SeededTenant = acme): Promise<void> {
  for (let i = 0; i < times; i++) {
    const r = await signIn({ tenant, username, password: 'wrong-password', address });
    assert.equal(r.statusCode, 400, r.body);
    assert.equal(r.json().error, 'invalid_grant');
  }
}

test('after the limit of failures a username is throttled: 429, Retry-After, invalid_grant body, even with the right password', async () => {
  const address = newAddress();
  await fail('robot', address, 3);
  const r = await signIn({ username: 'ROBOT', password: ROBOT_PASSWORD, address });
  assert.equal(r.statusCode, 429);
  assert.equal(r.headers['retry-after'], String(WINDOW));
  assert.equal(r.headers['cache-control'], 'no-store');
  assert.equal(r.headers['pragma'], 'no-cache');
  const body = r.json();
  assert.deepEqual(Object.keys(body), ['error', 'error_description']);
  assert.equal(body.error, 'invalid_grant');

  // other usernames of the tenant, and the same username in another tenant, are unaffected
  assert.equal((await signIn({ username: 'robot2', password: ROBOT_PASSWORD, address })).statusCode, 200);
  assert.equal((await signIn({ tenant: other, username: 'robot', password: ROBOT_PASSWORD, address: newAddress() })).statusCode, 200);

  // blocked tries are not counted, and Retry-After counts down with the clock
  clock.advance(20);
  const again = await signIn({ username: 'robot', password: 'wrong-password', address });
  assert.equal(again.statusCode, 429);
  assert.equal(again.headers['retry-after'], String(WINDOW - 20));
  const row = await t.store.db
    .selectFrom('sign_in_failures')
    .selectAll()
    .where('scope', '=', 'user')
    .where('subject', '=', `${acme.tenantId}:robot`)
    .executeTakeFirstOrThrow();
  assert.equal(row.failures, 3);
  assert.ok(row.blocked_until, 'the block is recorded');

  // the window ends → the right password works again
  clock.advance(WINDOW - 20);
  const after = await signIn({ username: 'robot', password: ROBOT_PASSWORD, address });
  assert.equal(after.statusCode, 200, after.body);
});

test('a success resets the username count', async () => {
  const address = newAddress();
  await fail('robot3', address, 2);
  assert.equal((await signIn({ username: 'robot3', password: ROBOT_PASSWORD, address })).statusCode, 200);
  await fail('robot3', address, 2);
  // without the reset this would be the 5th failure's successor: blocked
  assert.equal((await signIn({ username: 'robot3', password: ROBOT_PASSWORD, address })).statusCode, 200);
});

test('failures older than the window no longer count', async () => {
  const address = newAddress();
  await fail('robot4', address, 2);
  clock.advance(WINDOW + 1);
  await fail('robot4', address, 2);
  assert.equal(
    (await signIn({ username: 'robot4', password: ROBOT_PASSWORD, address })).statusCode,
    200,
    'only 2 failures in the current window',
  );
});

test('unknown usernames count too, and an address is throttled across usernames', async () => {
  const address = newAddress();
  for (let i = 0; i < 5; i++) await fail(`nobody-${i}`, address, 1);
  const blocked = await signIn({ username: 'robot5', password: ROBOT_PASSWORD, address });
  assert.equal(blocked.statusCode, 429);
  assert.equal(blocked.json().error, 'invalid_grant');
  assert.ok(Number(blocked.headers['retry-after']) > 0);
  // the same Mate from another address is fine
  assert.equal((await signIn({ username: 'robot5', password: ROBOT_PASSWORD, address: newAddress() })).statusCode, 200);
});

test('the throttle is shared by every server process on the store', async () => {
  const address = newAddress();
  const second = await createApp(t.config, { store: t.store, clock });
  try {
    await fail('robot2', address, 3);
    const r = await signIn({ app: second, username: 'robot2', password: ROBOT_PASSWORD, address });
    assert.equal(r.statusCode, 429);
  } finally {
    await second.close();
    clock.advance(WINDOW + 1);
  }
});

test('behind a trusted proxy the client address comes from X-Forwarded-For', async () => {
  const proxied = await createApp({ ...t.config, trustProxy: '127.0.0.1' }, { store: t.store, clock, sweeper: false });
  try {
    const viaProxy = (client: string, username: string) =>
      proxied.inject({
        method: 'POST',
        url: '/connect/token',
        remoteAddress: '127.0.0.1',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': client },
        payload: new URLSearchParams({
          grant_type: 'password',
          client_id: acme.clientId,
          client_secret: acme.apiSecret,
          username,
          password: 'wrong-password',
        }).toString(),
      });
    const names = ['robot', 'robot2', 'robot3', 'robot4', 'robot5'];
    // 5 failures (the address limit) from one client behind the proxy, spread over usernames
    for (let i = 0; i < 5; i++) assert.equal((await viaProxy('192.0.2.7', names[i % 5])).statusCode, 400);
    assert.equal((await viaProxy('192.0.2.7', 'robot5')).statusCode, 429, 'that client is throttled');
    assert.equal((await viaProxy('192.0.2.8', 'robot5')).statusCode, 400, 'another client behind the same proxy is not');
  } finally {
    await proxied.close();
  }
});
