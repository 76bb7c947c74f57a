/**
 * /metrics (docs/events.md, "Metrics"): the Prometheus text format, counters that match the
 * operations done, bounded labels (route templates, no task ids), and the token and off settings.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant } from './helpers/seed.js';
import { Mate } from './helpers/mate.js';
import { STORE_KIND } from './helpers/db.js';
import { parsePrometheusText, sampleValue } from './helpers/prom-text.js';
import { isLoopbackHost, Metrics } from '../src/metrics/metrics.js';
import { systemClock } from '../src/lib/clock.js';
import type pg from 'pg';

const apps: TestApp[] = [];
after(async () => {
  for (const a of apps) await a.close();
});

test(`${STORE_KIND}: /metrics parses as Prometheus text and its counters match the operations done`, async () => {
  const t = await testApp();
  apps.push(t);
  const tenant = await seedTenant(t.store, 'met-a', { processes: [{ processKey: 'Work' }, { processKey: 'Other' }] });
  const mate = await Mate.signIn(t.app, tenant);
  const ids: number[] = [];
  for (let i = 0; i < 5; i++) ids.push(await mate.create('Work', { i }));
  await mate.create('Other', {});
  for (let i = 0; i < 3; i++) {
    const task = await mate.takeNext('Work');
    const action = i === 2 ? 'Error' : 'Solved';
    assert.equal((await mate.post(`/api/${action}`, { taskId: task.taskId, reason: 'x' })).body.succeeded, true);
  }
  await mate.get('/api/TakeNext/NoSuchProcess');
  await t.app.services.events.watermark.flush();

  const res = await t.app.inject({ method: 'GET', url: '/metrics' });
  assert.equal(res.statusCode, 200);
  assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
  const m = parsePrometheusText(res.body);

  assert.equal(sampleValue(m, 'queuemate_events_total', { type: 'task.created' }), 6);
  assert.equal(sampleValue(m, 'queuemate_events_total', { type: 'task.taken' }), 3);
  assert.equal(sampleValue(m, 'queuemate_events_total', { type: 'task.solved' }), 2);
  assert.equal(sampleValue(m, 'queuemate_events_total', { type: 'task.error' }), 1);
  assert.equal(sampleValue(m, 'queuemate_events_total', { type: 'run.started' }), 1);

  const depth = (process: string, queue: string, error: string) =>
    sampleValue(m, 'queuemate_queue_depth', { tenant: String(tenant.tenantId), process, queue, error });
  assert.equal(depth('Work', 'Ready', 'false'), 2);
  assert.equal(depth('Work', 'Solved', 'false'), 2);
  assert.equal(depth('Work', 'Manual', 'true'), 1);
  assert.equal(depth('Other', 'Ready', 'false'), 1);

  // requests by route template and status; no task ids or raw paths in any label
  assert.equal(sampleValue(m, 'queuemate_http_request_duration_seconds_count', { route: '/api/CreateTask/:processKey', status: '200' }), 6);
  assert.equal(sampleValue(m, 'queuemate_http_request_duration_seconds_count', { route: '/api/Solved', status: '200' }), 2);
  assert.ok(sampleValue(m, 'queuemate_http_request_duration_seconds_count', { route: '/api/TakeNext/:processKey' }) >= 3);
  for (const f of m.values())
    for (const s of f.samples)
      for (const v of Object.values(s.labels)) {
        assert.ok(!/NoSuchProcess/.test(v), `raw path in ${s.name}`);
        assert.ok(!ids.some((id) => v === `/api/Solved/${id}`), `task id in ${s.name}`);
      }
  assert.ok(m.has('queuemate_db_pool_connections'));
  if (t.store.hotPool) assert.ok(t.store.hotPool.totalCount > 0, 'the takes ran on the hot connections');
  assert.ok(m.has('queuemate_nodejs_eventloop_lag_seconds'));
  assert.ok(m.has('queuemate_process_resident_memory_bytes') || m.has('queuemate_nodejs_heap_size_used_bytes'));
  assert.equal(sampleValue(m, 'queuemate_outbox_held_back_events'), 0);
  assert.equal(sampleValue(m, 'queuemate_webhook_pending_deliveries'), 0);
});

test(`${STORE_KIND}: /metrics behind a token answers 401 without it; metrics off answers 404`, async () => {
  const t = await testApp({ config: { metricsToken: 'metrics-secret-token' } });
  apps.push(t);
  assert.equal((await t.app.inject({ method: 'GET', url: '/metrics' })).statusCode, 401);
  assert.equal((await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer wrong' } })).statusCode, 401);
  const ok = await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer metrics-secret-token' } });
  assert.equal(ok.statusCode, 200);
  parsePrometheusText(ok.body);
  const off = await testApp({ config: { metrics: 'off' } });
  apps.push(off);
  assert.equal((await off.app.inject({ method: 'GET', url: '/metrics' })).statusCode, 404);
});

test(`${STORE_KIND}: beyond loopback without a token, queue depth is labelled by process id; with the token or on loopback, by key`, async () => {
  const cases = [
    { config: { host: '0.0.0.0' }, label: 'id' },
    { config: { host: '::' }, label: 'id' },
    { config: { host: '192.168.1.20' }, label: 'id' },
    { config: { host: '0.0.0.0', metricsToken: 'metrics-secret-token' }, label: 'key' },
    { config: { host: '127.0.0.1' }, label: 'key' },
    { config: { host: '::1' }, label: 'key' },
    { config: { host: 'localhost' }, label: 'key' },
  ] as const;
  for (const c of cases) {
    const t = await testApp({ config: c.config });
    apps.push(t);
    const tenant = await seedTenant(t.store, `met-l${cases.indexOf(c)}`, { processes: [{ processKey: 'SecretPayroll' }] });
    const mate = await Mate.signIn(t.app, tenant);
    await mate.create('SecretPayroll', {});
    const row = await t.store.db
      .selectFrom('processes')
      .select('id')
      .where('tenant_id', '=', tenant.tenantId)
      .where('process_key', '=', 'SecretPayroll')
      .executeTakeFirstOrThrow();
    const processId = String(row.id);
    const headers = 'metricsToken' in c.config ? { authorization: `Bearer ${c.config.metricsToken}` } : {};
    const res = await t.app.inject({ method: 'GET', url: '/metrics', headers });
    assert.equal(res.statusCode, 200);
    const m = parsePrometheusText(res.body);
    const process = c.label === 'key' ? 'SecretPayroll' : processId;
    assert.equal(
      sampleValue(m, 'queuemate_queue_depth', { tenant: String(tenant.tenantId), process, queue: 'Ready', error: 'false' }),
      1,
      JSON.stringify(c),
    );
    assert.equal(res.body.includes('SecretPayroll'), c.label === 'key', JSON.stringify(c));
    await t.close();
    apps.pop();
  }
});

test('loopback hosts', () => {
  for (const h of ['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost', 'LOCALHOST', '::ffff:127.0.0.1'])
    assert.equal(isLoopbackHost(h), true, h);
  for (const h of ['0.0.0.0', '::', '10.0.0.1', '192.168.1.20', 'example.com', '128.0.0.1', '127.0.0.1.example.com'])
    assert.equal(isLoopbackHost(h), false, h);
});

test('the parser refuses malformed exposition text', () => {
  assert.throws(() => parsePrometheusText('x 1\n'), /without a TYPE/);
  assert.throws(() => parsePrometheusText('# TYPE x counter\nx{a="1} 1\n'), /unterminated|not a sample/);
  assert.throws(() => parsePrometheusText('# TYPE x counter\nx one\n'), /bad value/);
  assert.throws(
    () => parsePrometheusText('# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n'),
    /not cumulative/,
  );
});

test('queuemate_db_pool_connections counts every pool of the process (the hot path has its own on PostgreSQL)', async () => {
  const t = await testApp();
  apps.push(t);
  const pool = (total: number, idle: number, waiting: number) => ({ totalCount: total, idleCount: idle, waitingCount: waiting }) as pg.Pool;
  const metrics = new Metrics(t.store.db, [pool(5, 3, 0), pool(4, 1, 2)], systemClock);
  const m = parsePrometheusText(await metrics.registry.metrics());
  const state = (s: string) => sampleValue(m, 'queuemate_db_pool_connections', { state: s });
  assert.deepEqual(['total', 'idle', 'in_use', 'waiting'].map(state), [9, 4, 5, 2]);
});
