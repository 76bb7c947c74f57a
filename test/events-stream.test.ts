/**
 * GET /v1/events (docs/events.md, "Live stream"): a client sees a Mate's change at once, resumes
 * with Last-Event-ID without gap or duplicate under concurrent writers, never sees another
 * tenant's events, (PostgreSQL) sees events caused through another server instance, and ends when
 * the session that opened it ends.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { AddressInfo } from 'node:net';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant } from './helpers/seed.js';
import { Mate } from './helpers/mate.js';
import { STORE_KIND, DATABASE_URL } from './helpers/db.js';
import { personWithToken, asPerson, asSession, signIn, USER_PASSWORD, type Session, type TestPerson } from './helpers/people.js';
import { SseClient } from './helpers/sse.js';
import { createApp } from '../src/app.js';
import { testConfig } from '../src/config.js';
import { openStore } from '../src/db/store.js';
import { readEvents } from '../src/events/store.js';

const cleanup: (() => Promise<void> | void)[] = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

async function listening(t: TestApp): Promise<string> {
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
}

async function stream(base: string, person: TestPerson, lastEventId?: number, query = ''): Promise<SseClient> {
  const headers: Record<string, string> = { authorization: `Bearer ${person.token}` };
  if (lastEventId !== undefined) headers['last-event-id'] = String(lastEventId);
  const c = await SseClient.connect(`${base}/v1/events${query}`, headers);
  cleanup.push(() => c.close());
  assert.equal(c.status, 200);
  return c;
}

test(`${STORE_KIND}: a client sees a Mate's Solved within a second; tenant B sees none of tenant A's events; heartbeats`, async () => {
  const t = await testApp({ config: { sseHeartbeatSeconds: 1 } });
  cleanup.push(() => t.close());
  const base = await listening(t);
  const a = await seedTenant(t.store, 'sse-a', { processes: [{ processKey: 'Work' }] });
  const b = await seedTenant(t.store, 'sse-b', { processes: [{ processKey: 'Work' }] });
  const viewerA = await personWithToken(t.store, a.tenantId, 'viewer', 'va');
  const adminB = await personWithToken(t.store, b.tenantId, 'admin', 'ab');
  const clientA = await stream(base, viewerA);
  const clientB = await stream(base, adminB);
  const mateA = await Mate.signIn(t.app, a);
  const mateB = await Mate.signIn(t.app, b);
  const id = await mateA.create('Work', {});
  assert.equal((await mateA.takeNext('Work')).taskId, id);

  assert.equal((await mateA.post('/api/Solved', { taskId: id })).body.succeeded, true);
  const started = Date.now(); // from the Mate's answer: the change has committed
  await clientA.until(() => clientA.events.some((e) => e.event === 'task.solved'), 1000, 'task.solved within a second');
  const latency = Date.now() - started;
  const solved = clientA.events.find((e) => e.event === 'task.solved')!;
  assert.equal(solved.data.taskId, id);
  assert.equal(solved.data.id, solved.id);
  assert.equal(solved.data.type, 'task.solved');
  assert.deepEqual(
    clientA.events.map((e) => e.event),
    ['task.created', 'task.taken', 'run.started', 'task.solved'],
  );

  // B's stream: only B's own event, after A's
  const idB = await mateB.create('Work', {});
  await clientB.until(() => clientB.events.length > 0);
  assert.deepEqual(
    clientB.events.map((e) => [e.event, e.data.taskId]),
    [['task.created', idB]],
  );
  // a webhook.* event is for admins only
  await sql`INSERT INTO outbox_events (tenant_id, type, payload, created_at) VALUES
    (${a.tenantId}, 'webhook.disabled', '{"type":"webhook.disabled"}'::jsonb, now()),
    (${a.tenantId}, 'test.after', '{"type":"test.after"}'::jsonb, now())`.execute(t.store.db);
  t.app.services.events.watermark.kick();
  await clientA.until(() => clientA.events.some((e) => e.event === 'test.after'));
  assert.ok(!clientA.events.some((e) => e.event === 'webhook.disabled'), 'a viewer does not see webhook events');
  await clientA.until(() => clientA.comments >= 1, 5000, 'a heartbeat');
  console.log(`# Solved seen on the stream after ${latency} ms`);
});

test(`${STORE_KIND}: ?as=message sends every event as a plain message (no event: line), its type in the data`, async () => {
  const t = await testApp();
  cleanup.push(() => t.close());
  const base = await listening(t);
  const tenant = await seedTenant(t.store, 'sse-m', { processes: [{ processKey: 'Work' }] });
  const viewer = await personWithToken(t.store, tenant.tenantId, 'viewer', 'vm');
  const plain = await stream(base, viewer, undefined, '?as=message');
  const named = await stream(base, viewer, undefined, '?as=named');
  const mate = await Mate.signIn(t.app, tenant);
  const id = await mate.create('Work', {});
  await mate.takeNext('Work');
  for (const c of [plain, named]) await c.until(() => c.events.length >= 3);
  assert.deepEqual(
    plain.events.map((e) => [e.event, e.data.type]),
    [
      ['message', 'task.created'],
      ['message', 'task.taken'],
      ['message', 'run.started'],
    ],
  );
  assert.deepEqual(
    named.events.map((e) => e.event),
    ['task.created', 'task.taken', 'run.started'],
  );
  assert.deepEqual(
    plain.events.map((e) => e.id),
    named.events.map((e) => e.id),
  );
  assert.equal(plain.events[0]!.data.taskId, id);
  const bad = await asPerson(t.app, viewer, { method: 'GET', url: '/v1/events?as=json' });
  assert.equal(bad.statusCode, 400);
});

test(`${STORE_KIND}: resuming with Last-Event-ID replays exactly what was missed, under concurrent writers`, async () => {
  const t = await testApp();
  cleanup.push(() => t.close());
  const base = await listening(t);
  const tenant = await seedTenant(t.store, 'sse-r', { processes: [{ processKey: 'Work' }] });
  const admin = await personWithToken(t.store, tenant.tenantId, 'admin', 'adm');
  const mates = await Promise.all([0, 1, 2, 3].map(() => Mate.signIn(t.app, tenant)));
  const first = await stream(base, admin, 0);
  let writing = true;
  const writers = mates.map(async (m, w) => {
    for (let i = 0; i < 20; i++) {
      const r = await m.post('/api/CreateTasks/Work', [
        { w, i, k: 1 },
        { w, i, k: 2 },
      ]);
      assert.equal(r.status, 200);
    }
  });
  // the first client drops out part-way
  await first.until(() => first.events.length >= 20);
  first.close();
  const lastSeen = first.events[first.events.length - 1].id!;
  const second = await stream(base, admin, lastSeen);
  await Promise.all(writers);
  writing = false;
  await t.app.services.events.watermark.flush();
  const all = await readEvents(t.store.db, tenant.tenantId, 0, 100000);
  assert.equal(all.length, 160);
  const lastId = all[all.length - 1].id;
  await second.until(() => second.events.some((e) => e.id === lastId));
  const seen = [...first.events.filter((e) => e.id! <= lastSeen), ...second.events].map((e) => e.id);
  assert.deepEqual(
    seen,
    all.map((e) => e.id),
    'no gap, no duplicate, in order',
  );
  assert.ok(!writing);
  const bad = await asPerson(t.app, admin, { method: 'GET', url: '/v1/events', headers: { 'last-event-id': 'abc' } });
  assert.equal(bad.statusCode, 400);
  assert.equal(bad.json().code, 'invalid_field');
  const none = await t.app.inject({ method: 'GET', url: '/v1/events' });
  assert.equal(none.statusCode, 401);
});

test(
  'postgres: two server instances on one database: a client on one sees events caused through the other (LISTEN/NOTIFY)',
  { skip: DATABASE_URL ? false : 'PostgreSQL only: set DATABASE_URL' },
  async () => {
    const t = await testApp();
    cleanup.push(() => t.close());
    const base = await listening(t);
    // a second instance: its own pool, notifier, watermark and LISTEN connection; nothing shared in memory
    const store2 = await openStore({ databaseUrl: t.store.url, dataDir: '', poolSize: 4 });
    const app2 = await createApp(testConfig(), { store: store2, sweeper: false });
    await app2.ready();
    cleanup.push(async () => {
      await app2.close();
      await store2.close();
    });
    // instance 1 must not look for visible events itself: only instance 2's NOTIFY may wake its readers
    await t.app.services.events.watermark.stop();
    const tenant = await seedTenant(t.store, 'sse-x', { processes: [{ processKey: 'Work' }] });
    const admin = await personWithToken(t.store, tenant.tenantId, 'admin', 'adm');
    const client = await stream(base, admin);
    const mate = await Mate.signIn(app2, tenant);
    const id = await mate.create('Work', {});
    await client.until(() => client.events.some((e) => e.data.taskId === id), 5000, 'the event caused through the other instance');
  },
);

test(`${STORE_KIND}: a stream ends with its session: sign-out, a revoked token, the user disabled, a password change, another process's revocation`, async () => {
  const t = await testApp({ config: { sseHeartbeatSeconds: 1 } });
  cleanup.push(() => t.close());
  const base = await listening(t);
  const a = await seedTenant(t.store, 'sse-end', { processes: [{ processKey: 'Work' }] });
  const admin = await personWithToken(t.store, a.tenantId, 'admin', 'admin');
  const open = async (headers: Record<string, string>) => {
    const c = await SseClient.connect(`${base}/v1/events`, headers);
    cleanup.push(() => c.close());
    assert.equal(c.status, 200);
    return c;
  };
  const cookieOf = (s: Session) => ({ cookie: s.cookie });
  const ended = (c: SseClient, what: string) => c.until(() => c.ended, 10_000, `the stream to end after ${what}`);

  // a control stream that must stay open throughout
  const control = await open({ authorization: `Bearer ${admin.token}` });

  // sign-out of the session that opened the stream
  await personWithToken(t.store, a.tenantId, 'viewer', 'vera');
  const vera = await signIn(t.app, a.clientId, 'vera');
  const signedIn = await open(cookieOf(vera));
  const out = await asSession(t.app, vera, { method: 'DELETE', url: '/v1/session' });
  assert.equal(out.statusCode, 204, out.body);
  await ended(signedIn, 'sign-out');

  // a personal token revoked by its owner
  const tom = await personWithToken(t.store, a.tenantId, 'agent', 'tom');
  const tokenStream = await open({ authorization: `Bearer ${tom.token}` });
  const tokenId = (await asPerson(t.app, tom, { method: 'GET', url: '/v1/me/tokens' })).json().items[0].id;
  assert.equal((await asPerson(t.app, tom, { method: 'DELETE', url: `/v1/me/tokens/${tokenId}` })).statusCode, 204);
  await ended(tokenStream, 'revoking the token');

  // the user disabled by an admin
  const dora = await personWithToken(t.store, a.tenantId, 'viewer', 'dora');
  const doraStream = await open({ authorization: `Bearer ${dora.token}` });
  const disabled = await asPerson(t.app, admin, { method: 'PATCH', url: `/v1/users/${dora.userId}`, payload: { disabled: true } });
  assert.equal(disabled.statusCode, 200, disabled.body);
  await ended(doraStream, 'disabling the user');

  // the user's own password change (from another session of theirs)
  await personWithToken(t.store, a.tenantId, 'viewer', 'pia');
  const pia = await signIn(t.app, a.clientId, 'pia');
  const piaStream = await open(cookieOf(pia));
  const other = await signIn(t.app, a.clientId, 'pia');
  const changed = await asSession(t.app, other, {
    method: 'POST',
    url: '/v1/me/password',
    payload: { currentPassword: USER_PASSWORD, newPassword: 'a-brand-new-password' },
  });
  assert.equal(changed.statusCode, 200, changed.body);
  await ended(piaStream, 'a password change');

  // revoked by another server process (no change notice here): the next heartbeat's check ends it
  const olaf = await personWithToken(t.store, a.tenantId, 'viewer', 'olaf');
  const olafStream = await open({ authorization: `Bearer ${olaf.token}` });
  await sql`UPDATE user_tokens SET revoked_at = now() WHERE tenant_id = ${a.tenantId} AND user_id = ${olaf.userId}`.execute(t.store.db);
  await ended(olafStream, "another process's revocation");

  assert.equal(control.ended, false, "other people's streams stay open");
  const mate = await Mate.signIn(t.app, a);
  const id = await mate.create('Work', {});
  await control.until(() => control.events.some((e) => e.event === 'task.created' && e.data.taskId === id));
});
