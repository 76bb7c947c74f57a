/**
 * The sign-in throttle under concurrency (issue 7 item 1): each sign-in reserves its failure in one
 * statement before its password is checked, so however many arrive at once, at most the limit of
 * passwords is checked, in one server process or several sharing the store.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { createApp } from '../../src/app.js';
import { withSuiteLog } from '../helpers/log-sink.js';
import { createMate } from '../../src/accounts/service.js';
import { userSubject } from '../../src/auth/throttle.js';
import { testApp, type TestApp } from '../helpers/app.js';
import { seedTenant, type SeededTenant } from '../helpers/seed.js';

const LIMIT = 10;
const PASSWORD = 'the-right-password-1';
let t: TestApp;
let second: FastifyInstance;
let acme: SeededTenant;

before(async () => {
  t = await testApp({ config: { signInMaxFailuresPerUser: LIMIT, signInMaxFailuresPerAddress: 100000, signInWindowSeconds: 900 } });
  // a second server process on the same store
  second = await createApp(...withSuiteLog(t.config, { store: t.store, sweeper: false }));
  acme = await seedTenant(t.store, 'race');
  for (const name of ['robot-a', 'robot-b', 'robot-c']) await createMate(t.store.db, acme.tenantId, { username: name, password: PASSWORD });
});
after(async () => {
  await second.close();
  await t.close();
});

function signIn(app: FastifyInstance, username: string, password: string) {
  return app.inject({
    method: 'POST',
    url: '/connect/token',
    remoteAddress: '10.9.9.9',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      grant_type: 'password',
      client_id: acme.clientId,
      client_secret: acme.apiSecret,
      username,
      password,
    }).toString(),
  });
}

async function failures(username: string): Promise<number> {
  const row = await t.store.db
    .selectFrom('sign_in_failures')
    .select('failures')
    .where('scope', '=', 'user')
    .where('subject', '=', userSubject(acme.tenantId, username))
    .executeTakeFirst();
  return row?.failures ?? 0;
}

test('100 concurrent wrong passwords over two server processes: at most the limit are checked, the rest get 429', async () => {
  const answers = await Promise.all(
    Array.from({ length: 100 }, (_, i) => signIn(i % 2 ? second : t.app, 'robot-a', `wrong-${i}`).then((r) => r.statusCode)),
  );
  const checked = answers.filter((s) => s === 400).length;
  assert.equal(checked, LIMIT, `passwords checked: ${checked}`);
  assert.equal(answers.filter((s) => s === 429).length, 100 - LIMIT);
  assert.equal(await failures('robot-a'), LIMIT, 'refused tries are not counted');
  // and the right password afterwards is refused too
  assert.equal((await signIn(t.app, 'robot-a', PASSWORD)).statusCode, 429);
});

test('the right password among 100 concurrent wrong ones, after the limit, is refused; none of it passes the limit', async () => {
  const RIGHT_AT = 60;
  const answers = await Promise.all(
    Array.from({ length: 101 }, (_, i) =>
      signIn(i % 2 ? second : t.app, 'robot-b', i === RIGHT_AT ? PASSWORD : `wrong-${i}`).then((r) => ({ i, status: r.statusCode })),
    ),
  );
  const right = answers.find((a) => a.i === RIGHT_AT)!;
  const wrongChecked = answers.filter((a) => a.i !== RIGHT_AT && a.status === 400).length;
  if (right.status === 200) {
    // it was among the first LIMIT reservations: a success resets the username, so a few more
    // wrong ones may be checked after it, but never more than LIMIT before it
    assert.ok(wrongChecked <= 2 * LIMIT, `wrong passwords checked: ${wrongChecked}`);
  } else {
    assert.equal(right.status, 429, 'the right password, sent once the limit is reached, gets no token');
    assert.equal(wrongChecked, LIMIT, `wrong passwords checked: ${wrongChecked}`);
  }
  assert.equal(answers.filter((a) => a.status === 400 || a.status === 200).length <= 2 * LIMIT, true);
});

test('a success clears the username and takes its own address try back', async () => {
  assert.equal((await signIn(t.app, 'robot-c', 'wrong')).statusCode, 400);
  assert.equal(await failures('robot-c'), 1);
  const before = await t.store.db
    .selectFrom('sign_in_failures')
    .select('failures')
    .where('scope', '=', 'address')
    .where('subject', '=', '10.9.9.9')
    .executeTakeFirstOrThrow();
  assert.equal((await signIn(t.app, 'robot-c', PASSWORD)).statusCode, 200);
  assert.equal(await failures('robot-c'), 0, 'a success clears the username');
  const afterRow = await t.store.db
    .selectFrom('sign_in_failures')
    .select('failures')
    .where('scope', '=', 'address')
    .where('subject', '=', '10.9.9.9')
    .executeTakeFirstOrThrow();
  assert.equal(afterRow.failures, before.failures, 'the successful try is not counted against the address');
});
