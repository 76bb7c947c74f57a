/**
 * Webhooks (docs/events.md): signed deliveries in event order to a receiver on 127.0.0.1, retries
 * with back-off on an injected clock, failure after 24 h with the endpoint disabled and admins
 * notified, redelivery, and the address guard.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { createQueryId, PostgresQueryCompiler, sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant } from './helpers/seed.js';
import { Mate } from './helpers/mate.js';
import { STORE_KIND } from './helpers/db.js';
import { personWithToken, asPerson } from './helpers/people.js';
import { Receiver } from './helpers/receiver.js';
import { ManualClock } from '../src/lib/clock.js';
import { signatureHeaders } from '../src/events/webhook-http.js';
import { backoffMs, Dispatcher } from '../src/events/webhook-dispatcher.js';
import { guardedLookup, isNonPublicAddress } from '../src/lib/address-guard.js';
import { readEvents } from '../src/events/store.js';
import { JobRunner } from '../src/maintenance/runner.js';
import { webhookDispatchJob } from '../src/maintenance/webhook-dispatch.js';

const cleanup: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

/** The Standard Webhooks reference algorithm: base64 HMAC-SHA256 of `id.timestamp.body` with the secret's bytes. */
function referenceSignature(secret: string, id: string, timestamp: string, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${crypto.createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

test('the signature matches the Standard Webhooks published test vector', () => {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const headers = signatureHeaders(secret, {
    id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
    timestamp: new Date(1614265330 * 1000),
    body: '{"test": 2432232314}',
  });
  assert.deepEqual(headers, {
    'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
    'webhook-timestamp': '1614265330',
    'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
  });
});

test('back-off doubles from 5 s up to an hour, with jitter in [1/2, 1] of each step', () => {
  assert.equal(
    backoffMs(1, () => 1),
    5000,
  );
  assert.equal(
    backoffMs(1, () => 0),
    2500,
  );
  assert.equal(
    backoffMs(4, () => 1),
    40000,
  );
  assert.equal(
    backoffMs(40, () => 1),
    3600000,
  );
});

test('the address guard refuses loopback, private, link-local and mapped addresses, and names resolving to them', async () => {
  for (const a of [
    '127.0.0.1',
    '10.1.2.3',
    '172.16.0.1',
    '192.168.1.1',
    '169.254.169.254',
    '0.0.0.0',
    '::1',
    'fe80::1',
    'fd00::1',
    '::ffff:127.0.0.1',
    '100.64.0.1',
  ])
    assert.equal(isNonPublicAddress(a), true, a);
  for (const a of ['93.184.216.34', '8.8.8.8', '2606:4700::1111']) assert.equal(isNonPublicAddress(a), false, a);
  const lookup = guardedLookup(false);
  const err = await new Promise<Error | null>((resolve) => lookup('localhost', {}, (e) => resolve(e)));
  assert.match(String(err?.message), /not a public address/);
  const ok = await new Promise<string>((resolve, reject) =>
    guardedLookup(true)('localhost', {}, (e, a) => (e ? reject(e) : resolve(String(a)))),
  );
  assert.ok(ok === '127.0.0.1' || ok === '::1');
});

/** A dispatcher of the test's own over the app's store, and the SQL of every statement it sends. */
function countedDispatcher(t: TestApp): { sent: string[]; dispatcher: Dispatcher } {
  const sent: string[] = [];
  const compiler = new PostgresQueryCompiler();
  const counted = t.store.db.withPlugin({
    transformQuery: ({ node }) => {
      sent.push(compiler.compileQuery(node, createQueryId()).sql);
      return node;
    },
    transformResult: async ({ result }) => result,
  });
  return { sent, dispatcher: new Dispatcher(counted, t.app.services.clock, { timeoutMs: 10_000, disableAfterFailures: 1 }) };
}

async function setup(name: string, opts: { clock?: ManualClock; timeoutSeconds?: number } = {}) {
  const t: TestApp = await testApp({ clock: opts.clock, config: { webhookTimeoutSeconds: opts.timeoutSeconds ?? 10 } });
  const tenant = await seedTenant(t.store, name, { processes: [{ processKey: 'Work' }] });
  const admin = await personWithToken(t.store, tenant.tenantId, 'admin', 'admin', opts.clock?.now());
  const receiver = await Receiver.start();
  cleanup.push(
    () => t.close(),
    () => receiver.close(),
  );
  const api = (method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE', url: string, payload?: unknown) =>
    asPerson(t.app, admin, { method, url, payload: payload as never });
  const mate = await Mate.signIn(t.app, tenant);
  /** looks for visible events and runs the dispatcher (its passes and lanes) until it has nothing to do now */
  const deliver = async () => {
    const dispatcher = t.app.services.events.dispatcher;
    await t.app.services.events.watermark.flush();
    for (;;) {
      const started = await dispatcher.kick();
      await dispatcher.idle();
      if (started === 0) break;
    }
  };
  return { t, tenant, admin, receiver, api, mate, deliver };
}

test(`${STORE_KIND}: events arrive signed and in order; the signature verifies with the package and the reference algorithm`, async () => {
  const { t, receiver, api, mate, deliver, tenant } = await setup('wh-order');
  assert.equal((await api('PUT', '/v1/webhook-settings', { allowPrivateTargets: true })).statusCode, 200);
  const created = await api('POST', '/v1/webhooks', { url: receiver.url, eventTypes: ['task.created', 'task.solved'] });
  assert.equal(created.statusCode, 201, created.body);
  const { secret, id: hookId } = created.json();
  assert.match(secret, /^whsec_/);
  assert.equal((await api('GET', `/v1/webhooks/${hookId}`)).json().secret, undefined, 'the secret is shown once');

  const ids: number[] = [];
  for (let i = 0; i < 3; i++) ids.push(await mate.create('Work', { i }));
  for (let i = 0; i < 3; i++) {
    const task = await mate.takeNext('Work');
    assert.equal((await mate.post('/api/Solved', { taskId: task.taskId })).body.succeeded, true);
  }
  await deliver();

  assert.deepEqual(
    receiver.received.map((r) => `${r.json.type}:${r.json.data.taskId}`),
    [...ids.map((id) => `task.created:${id}`), ...ids.map((id) => `task.solved:${id}`)],
    'only the subscribed types, in event order',
  );
  const eventIds = receiver.received.map((r) => r.json.data.id);
  assert.deepEqual(
    eventIds,
    [...eventIds].sort((a, b) => a - b),
  );
  const wh = new Webhook(secret);
  for (const r of receiver.received) {
    const h = r.headers as Record<string, string>;
    assert.equal(h['webhook-id'], `evt_${r.json.data.id}`);
    assert.deepEqual(wh.verify(r.body, h), r.json);
    assert.equal(h['webhook-signature'], referenceSignature(secret, h['webhook-id'], h['webhook-timestamp'], r.body));
    assert.equal(r.json.data.processId !== undefined && r.json.timestamp === r.json.data.at, true);
  }
  // a wrong secret does not verify
  assert.throws(() =>
    new Webhook(`whsec_${Buffer.alloc(24, 1).toString('base64')}`).verify(receiver.received[0].body, receiver.received[0].headers as never),
  );

  const log = await api('GET', `/v1/webhooks/${hookId}/deliveries`);
  assert.equal(log.statusCode, 200);
  assert.equal(log.json().items.length, 6);
  for (const d of log.json().items) {
    assert.equal(d.status, 'delivered');
    assert.equal(d.lastStatusCode, 200);
    assert.equal(d.responseExcerpt, 'thanks');
    assert.equal(typeof d.durationMs, 'number');
  }
  // another tenant's webhook is not found; a viewer may not read webhooks
  const other = await seedTenant(t.store, 'wh-other');
  const otherAdmin = await personWithToken(t.store, other.tenantId, 'admin', 'other-admin');
  assert.equal((await asPerson(t.app, otherAdmin, { method: 'GET', url: `/v1/webhooks/${hookId}` })).statusCode, 404);
  assert.equal((await asPerson(t.app, otherAdmin, { method: 'GET', url: `/v1/webhooks/${hookId}/deliveries` })).statusCode, 404);
  const viewer = await personWithToken(t.store, tenant.tenantId, 'viewer', 'viewer');
  assert.equal((await asPerson(t.app, viewer, { method: 'GET', url: '/v1/webhooks' })).statusCode, 403);
  // bad input is named
  const bad = await api('POST', '/v1/webhooks', { url: 'ftp://x', eventTypes: ['Task Solved'] });
  assert.equal(bad.statusCode, 400);
  assert.equal(bad.json().errors[0].field, 'url');
});

test(`${STORE_KIND}: a wake-up makes a dispatcher pass only for tenants with an enabled endpoint; endpoints saved here count at once`, async () => {
  const { t, receiver, api, mate, tenant } = await setup('wh-wake');
  const other = await seedTenant(t.store, 'wh-wake-other');
  const dispatcher = t.app.services.events.dispatcher;
  await dispatcher.kick();
  assert.equal(dispatcher.wake([tenant.tenantId, other.tenantId]), null, 'no endpoint anywhere: no pass');

  assert.equal((await api('PUT', '/v1/webhook-settings', { allowPrivateTargets: true })).statusCode, 200);
  const created = await api('POST', '/v1/webhooks', { url: receiver.url, eventTypes: ['task.created'] });
  assert.equal(created.statusCode, 201, created.body);
  await dispatcher.idle();
  assert.equal(dispatcher.wake([other.tenantId]), null, 'a tenant without endpoints: still no pass');
  const taskId = await mate.create('Work', {});
  await t.app.services.events.watermark.flush();
  const pass = dispatcher.wake([tenant.tenantId]);
  assert.notEqual(pass, null, 'the endpoint saved through this process counts without waiting for the tick');
  await pass;
  await dispatcher.idle();
  assert.deepEqual(
    receiver.received.map((r) => `${r.json.type}:${r.json.data.taskId}`),
    [`task.created:${taskId}`],
  );

  assert.equal((await api('PATCH', `/v1/webhooks/${created.json().id}`, { enabled: false })).statusCode, 200);
  await dispatcher.idle();
  assert.equal(dispatcher.wake([tenant.tenantId]), null, 'a disabled endpoint makes no pass');
});

test(`${STORE_KIND}: with no enabled endpoint in any tenant, the tick looks once and claims nothing (one statement a second)`, async () => {
  const { t, receiver, api } = await setup('wh-tick');
  const { sent, dispatcher } = countedDispatcher(t);
  assert.equal(await dispatcher.kick(), 0);
  assert.equal(sent.length, 1, sent.join('\n'));
  assert.match(sent[0], /SELECT DISTINCT tenant_id FROM webhook_subscriptions WHERE enabled/);

  // a disabled endpoint is no endpoint; an enabled one makes the next tick claim
  assert.equal((await api('PUT', '/v1/webhook-settings', { allowPrivateTargets: true })).statusCode, 200);
  const created = await api('POST', '/v1/webhooks', { url: receiver.url, eventTypes: ['task.created'], enabled: false });
  assert.equal(created.statusCode, 201, created.body);
  sent.length = 0;
  await dispatcher.kick();
  assert.equal(sent.length, 1, sent.join('\n'));
  assert.equal((await api('PATCH', `/v1/webhooks/${created.json().id}`, { enabled: true })).statusCode, 200);
  sent.length = 0;
  await dispatcher.kick();
  await dispatcher.idle();
  assert.equal(sent.length, 2, sent.join('\n'));
  assert.match(sent[1], /UPDATE webhook_subscriptions s SET claimed_until/);
});

test(`${STORE_KIND}: a slow endpoint occupies only its own lane: a fast one gets each event within a second while the slow one answers after 8 s`, async () => {
  const { t, tenant, receiver: fast, api, mate } = await setup('wh-lanes');
  const slow = await Receiver.start();
  cleanup.push(() => slow.close());
  slow.delayMs = 8000;
  await api('PUT', '/v1/webhook-settings', { allowPrivateTargets: true });
  for (const r of [slow, fast])
    assert.equal((await api('POST', '/v1/webhooks', { url: r.url, eventTypes: ['task.created'] })).statusCode, 201);
  // the dispatch job as the server runs it: woken by the events hub, its tick every second
  const runner = new JobRunner({ clock: t.app.services.clock, log: { info() {}, warn() {}, debug() {} } });
  runner.add(webhookDispatchJob(t.app.services.events)).start();
  cleanup.push(() => runner.stop());

  const delays: number[] = [];
  const taskIds: number[] = [];
  for (let i = 0; i < 4; i++) {
    const made = performance.now();
    taskIds.push(await mate.create('Work', { i }));
    await fast.waitFor(i + 1, 15_000);
    delays.push(fast.arrivedAt[i] - made);
    await new Promise((r) => setTimeout(r, 500));
  }
  assert.deepEqual(
    fast.received.map((r) => r.json.data.taskId),
    taskIds,
    'the fast endpoint got every event, in order',
  );
  assert.ok(
    delays.every((d) => d < 1000),
    `the fast endpoint's delays: ${delays.map((d) => Math.round(d)).join(', ')} ms`,
  );
  assert.equal(slow.received.length, 1, 'the slow endpoint is still on its first event');
  assert.equal(t.app.services.events.dispatcher.busyLanes, 1, "only the slow endpoint's lane is at work");

  // the slow endpoint gets its events too, one at a time and in order
  slow.delayMs = 0;
  await slow.waitFor(4, 20_000);
  assert.deepEqual(
    slow.received.map((r) => r.json.data.taskId),
    taskIds,
  );
  await t.app.services.events.dispatcher.idle();
  const { rows } = await sql<{ status: string; n: number }>`SELECT status, count(*)::int AS n FROM webhook_deliveries
    WHERE tenant_id = ${tenant.tenantId} GROUP BY status`.execute(t.store.db);
  assert.deepEqual(
    rows.map((r) => [r.status, Number(r.n)]),
    [['delivered', 8]],
  );
});

test(`${STORE_KIND}: a receiver that fails 3 times gets the event on the 4th try, after back-off; later events wait their turn`, async () => {
  const clock = new ManualClock(new Date());
  const { t, receiver, api, mate, deliver } = await setup('wh-retry', { clock });
  await api('PUT', '/v1/webhook-settings', { allowPrivateTargets: true });
  const hookId = (await api('POST', '/v1/webhooks', { url: receiver.url, eventTypes: ['task.created'] })).json().id;
  receiver.plan = [500, 503, 500];
  const first = await mate.create('Work', { n: 1 });
  const second = await mate.create('Work', { n: 2 });
  await deliver();
  assert.equal(receiver.received.length, 1, 'first attempt failed; its retry is not due yet');
  await deliver();
  assert.equal(receiver.received.length, 1, 'no retry before the back-off');
  for (let attempt = 2; attempt <= 4; attempt++) {
    clock.advance(3600); // past any back-off step
    await deliver();
  }
  assert.deepEqual(
    receiver.received.map((r) => r.json.data.taskId),
    [first, first, first, first, second],
    'the 4th try succeeded; the second event waited for the first',
  );
  const log = (await api('GET', `/v1/webhooks/${hookId}/deliveries`)).json().items;
  const d1 = log.find((d: any) => d.status === 'delivered' && d.attempts === 4);
  assert.ok(d1, JSON.stringify(log));
  assert.equal(log.length, 2);
  // every attempt is kept, oldest first, with its own status, answer and error
  assert.deepEqual(
    d1.attemptLog.map((a: any) => [a.statusCode, a.responseExcerpt, a.error]),
    [
      [500, 'receiver says 500', 'HTTP 500'],
      [503, 'receiver says 503', 'HTTP 503'],
      [500, 'receiver says 500', 'HTTP 500'],
      [200, 'thanks', null],
    ],
  );
  const times = d1.attemptLog.map((a: any) => Date.parse(a.at));
  assert.deepEqual(
    times,
    [...times].sort((x, y) => x - y),
  );
  assert.ok(times[3] - times[0] >= 3 * 3600_000, 'the attempts are at the times the clock said');
  assert.ok(d1.attemptLog.every((a: any) => Number.isInteger(a.durationMs) && a.durationMs >= 0));
  assert.deepEqual([d1.lastStatusCode, d1.responseExcerpt], [200, 'thanks'], 'the last attempt is still summed up on the delivery');

  // retention: the attempts stay while their delivery is kept, and go with it
  const { purgeOldEvents } = await import('../src/maintenance/outbox-retention.js');
  const stored = async () =>
    (await sql<{ n: number }>`SELECT count(*)::int AS n FROM webhook_attempts WHERE delivery_id = ${d1.id}`.execute(t.store.db)).rows[0].n;
  assert.equal(await stored(), 4);
  assert.equal((await purgeOldEvents(t.store.db, clock.now(), 48)).attempts, 0);
  assert.equal(await stored(), 4);
  const purged = await purgeOldEvents(t.store.db, new Date(clock.now().getTime() + 49 * 3600_000), 48);
  assert.equal(purged.attempts, 5, 'the five attempts of both deliveries are older than the retention');
  assert.equal(await stored(), 0);
});

test(`${STORE_KIND}: the task events of one batch (one outbox row) are delivered one by one, each with its own id, type and payload`, async () => {
  const clock = new ManualClock(new Date());
  const { t, tenant, receiver, api, mate, deliver } = await setup('wh-batch', { clock });
  await api('PUT', '/v1/webhook-settings', { allowPrivateTargets: true });
  const hookId = (await api('POST', '/v1/webhooks', { url: receiver.url, eventTypes: ['task.created'] })).json().id;
  const created = await mate.post(
    '/api/CreateTasks/Work',
    Array.from({ length: 5 }, (_, i) => ({ i })),
  );
  const taskIds: number[] = created.body.taskIds;
  const { rows } = await sql<{ n: number }>`SELECT cardinality(history_ids) AS n FROM outbox_events
    WHERE tenant_id = ${tenant.tenantId} AND history_ids IS NOT NULL`.execute(t.store.db);
  assert.deepEqual(
    rows.map((r) => Number(r.n)),
    [5],
    'one row of 5 task events',
  );
  // the third event fails once: its retry (read back from the delivery) is the same event
  receiver.plan = [200, 200, 500];
  await deliver();
  assert.equal(receiver.received.length, 3);
  clock.advance(3600);
  await deliver();
  assert.deepEqual(
    receiver.received.map((r) => r.json.data.taskId),
    [taskIds[0], taskIds[1], taskIds[2], taskIds[2], taskIds[3], taskIds[4]],
  );
  assert.equal(receiver.received[3].body, receiver.received[2].body, 'the retry sends the same event');
  const ids = [0, 1, 2, 4, 5].map((i) => receiver.received[i].json.data.id);
  assert.deepEqual(
    ids,
    [...new Set(ids)].sort((a, b) => a - b),
    'distinct, increasing ids',
  );
  assert.deepEqual(
    ids,
    (await readEvents(t.store.db, tenant.tenantId, 0, 100)).filter((e) => e.type === 'task.created').map((e) => e.id),
    'the ids the stream shows',
  );
  for (const r of receiver.received) {
    assert.equal(r.json.type, 'task.created');
    assert.equal(r.json.data.action, 'Created');
    assert.equal(r.headers['webhook-id'], `evt_${r.json.data.id}`);
  }
  const log = (await api('GET', `/v1/webhooks/${hookId}/deliveries`)).json().items;
  assert.deepEqual(
    log.map((d: any) => [d.eventId, d.eventType, d.status]).reverse(),
    ids.map((id) => [id, 'task.created', 'delivered']),
  );
});

test(`${STORE_KIND}: a backlog reaches an endpoint in order, each event right after the last: two statements a delivery, one read per claim`, async () => {
  const { t, tenant, receiver, api, mate } = await setup('wh-backlog');
  await api('PUT', '/v1/webhook-settings', { allowPrivateTargets: true });
  // disabled while the backlog builds up (its cursor stays where it was saved)
  const created = await api('POST', '/v1/webhooks', { url: receiver.url, enabled: false });
  assert.equal(created.statusCode, 201, created.body);
  const N = 120;
  const taskIds: number[] = [];
  for (let i = 0; i < N; i++) taskIds.push(await mate.create('Work', { i }));
  await t.app.services.events.watermark.flush();
  await t.app.services.events.dispatcher.idle();
  assert.equal(receiver.received.length, 0);
  // enabled behind the app's back, for a dispatcher of the test's own whose statements are counted
  await sql`UPDATE webhook_subscriptions SET enabled = true WHERE tenant_id = ${tenant.tenantId} AND id = ${created.json().id}`.execute(
    t.store.db,
  );
  const { sent, dispatcher } = countedDispatcher(t);

  // one pass: each lane makes the next pass when it lets go with more due, so no tick is waited for
  await dispatcher.kick();
  await dispatcher.idle();
  assert.deepEqual(
    receiver.received.map((r) => r.json.data.taskId),
    taskIds,
    'every event once, in order, without waiting for a tick',
  );
  const ids = receiver.received.map((r) => r.json.data.id as number);
  assert.deepEqual(
    ids,
    [...ids].sort((a, b) => a - b),
  );
  // per delivery: the delivery made (with the lease renewed) and its outcome written; per claim of 10,
  // the claim, one look for a pending delivery, one read of the next events, the release. Reading the
  // next event for each delivery (a statement whose cost grows with the backlog) would be 120 reads.
  const reads = sent.filter((q) => q.includes('qm_events_horizon') && !q.includes('UPDATE webhook_subscriptions s SET claimed_until'));
  assert.ok(reads.length <= Math.ceil(N / 10) + 2, `${reads.length} reads of the outbox for ${N} deliveries`);
  assert.ok(sent.length <= 2 * N + 5 * Math.ceil(N / 10) + 10, `${sent.length} statements for ${N} deliveries`);
});

test(`${STORE_KIND}: an endpoint whose events come after a long stretch of others gets them (the read goes on past the stretch)`, async () => {
  const { receiver, api, mate, deliver } = await setup('wh-stretch');
  await api('PUT', '/v1/webhook-settings', { allowPrivateTargets: true });
  assert.equal((await api('POST', '/v1/webhooks', { url: receiver.url, eventTypes: ['task.solved'] })).statusCode, 201);
  // 150 outbox rows of task.created (more than one read looks through), one row of 300 (more
  // events than one read returns), then the solved ones
  for (let i = 0; i < 150; i++) await mate.create('Work', { i });
  const batch = await mate.post(
    '/api/CreateTasks/Work',
    Array.from({ length: 300 }, (_, i) => ({ i })),
  );
  assert.equal(batch.status, 200, JSON.stringify(batch.body));
  const solved: number[] = [];
  for (let i = 0; i < 3; i++) {
    const task = await mate.takeNext('Work');
    assert.equal((await mate.post('/api/Solved', { taskId: task.taskId })).body.succeeded, true);
    solved.push(task.taskId);
  }
  await deliver();
  assert.deepEqual(
    receiver.received.map((r) => `${r.json.type}:${r.json.data.taskId}`),
    solved.map((id) => `task.solved:${id}`),
  );
});

test(`${STORE_KIND}: an endpoint that never answers fails at the end of the 24 h window, is disabled, admins are told; redelivery works`, async () => {
  const clock = new ManualClock(new Date());
  const { t, tenant, receiver, api, mate, deliver } = await setup('wh-fail', { clock, timeoutSeconds: 1 });
  await api('PUT', '/v1/webhook-settings', { allowPrivateTargets: true });
  const hookId = (await api('POST', '/v1/webhooks', { url: receiver.url, eventTypes: ['task.created'] })).json().id;
  receiver.otherwise = 'hang';
  const taskId = await mate.create('Work', {});
  await deliver();
  assert.equal(receiver.received.length, 1);
  let log = (await api('GET', `/v1/webhooks/${hookId}/deliveries`)).json().items;
  assert.equal(log[0].status, 'pending');
  assert.match(log[0].lastError, /no answer within 1000 ms/);
  clock.advance(24 * 3600 + 1);
  await deliver();
  log = (await api('GET', `/v1/webhooks/${hookId}/deliveries`)).json().items;
  assert.equal(log[0].status, 'failed');
  assert.equal(log[0].attempts, 2);
  const hook = (await api('GET', `/v1/webhooks/${hookId}`)).json();
  assert.equal(hook.enabled, false);
  assert.match(hook.disabledReason, /failed/);
  const { rows: notes } = await sql<{
    kind: string;
    message: string;
  }>`SELECT kind, message FROM notifications WHERE tenant_id = ${tenant.tenantId}`.execute(t.store.db);
  assert.deepEqual(
    notes.map((n) => n.kind),
    ['webhookDisabled'],
  );
  await t.app.services.events.watermark.flush();
  assert.ok((await readEvents(t.store.db, tenant.tenantId, 0, 100)).some((e) => e.type === 'webhook.disabled'));

  // enable it again, and redeliver what failed
  receiver.otherwise = 200;
  assert.equal((await api('PATCH', `/v1/webhooks/${hookId}`, { enabled: true })).json().enabled, true);
  const again = await api('POST', `/v1/webhooks/${hookId}/redeliver-failed`);
  assert.equal(again.statusCode, 202);
  assert.equal(again.json().queued, 1);
  await t.app.services.events.dispatcher.idle();
  await deliver();
  assert.equal(receiver.received.at(-1)!.json.data.taskId, taskId);
  log = (await api('GET', `/v1/webhooks/${hookId}/deliveries`)).json().items;
  assert.equal(log[0].status, 'delivered');
  // one delivery again by id
  const one = await api('POST', `/v1/webhooks/${hookId}/deliveries/${log[0].id}/redeliver`);
  assert.equal(one.statusCode, 202);
  await t.app.services.events.dispatcher.idle();
  await deliver();
  assert.equal(receiver.received.filter((r) => r.json.data.taskId === taskId && r.json.type === 'task.created').length, 4);
  assert.equal((await api('POST', `/v1/webhooks/${hookId}/deliveries/987654/redeliver`)).statusCode, 404);
});

test(`${STORE_KIND}: a private-address target is refused when saved and when connecting, unless the tenant allows it`, async () => {
  const { t, receiver, api, mate, deliver } = await setup('wh-private');
  for (const url of [receiver.url, `http://localhost:${receiver.port}/x`, 'http://169.254.169.254/latest/meta-data', 'http://[::1]/x']) {
    const r = await api('POST', '/v1/webhooks', { url });
    assert.equal(r.statusCode, 400, url);
    assert.equal(r.json().code, 'invalid_field');
  }
  // allowed while saving, refused later: checked again at connect time
  await api('PUT', '/v1/webhook-settings', { allowPrivateTargets: true });
  const hookId = (await api('POST', '/v1/webhooks', { url: `http://localhost:${receiver.port}/x`, eventTypes: [] })).json().id;
  await api('PUT', '/v1/webhook-settings', { allowPrivateTargets: false });
  await mate.create('Work', {});
  await deliver();
  assert.equal(receiver.received.length, 0, 'nothing reached the private address');
  const log = (await api('GET', `/v1/webhooks/${hookId}/deliveries`)).json().items;
  assert.equal(log.length, 1);
  assert.equal(log[0].status, 'pending');
  assert.match(log[0].lastError, /not a public address/);
  const metrics = await t.app.inject({ method: 'GET', url: '/metrics' });
  assert.match(metrics.body, /queuemate_webhook_attempts_total\{outcome="refused"\} 1/);
});
