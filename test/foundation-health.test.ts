/** /healthz answers while the process is up; /readyz only when the store is reachable and migrated. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createApp } from '../src/app.js';
import { testConfig } from '../src/config.js';
import { testStore, emptyDatabase, STORE_KIND } from './helpers/db.js';

test(`${STORE_KIND}: /healthz and /readyz answer 200 on a migrated store`, async () => {
  const store = await testStore();
  const app = await createApp(testConfig(), { store });
  try {
    const health = await app.inject({ method: 'GET', url: '/healthz' });
    assert.equal(health.statusCode, 200);
    const { version } = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    assert.deepEqual(health.json(), { status: 'ok', version }, "the version is package.json's");
    assert.match(String(health.headers['x-request-id']), /^[0-9a-f-]{36}$/);
    assert.equal(health.headers['x-content-type-options'], 'nosniff');

    const ready = await app.inject({ method: 'GET', url: '/readyz', headers: { 'x-request-id': 'probe-1' } });
    assert.equal(ready.statusCode, 200);
    assert.equal(ready.json().status, 'ready');
    // the events backlog is reported (docs/events.md), not a readiness condition
    assert.deepEqual(
      { ...ready.json().events, dispatcherLastRunAt: undefined },
      {
        heldBack: 0,
        heldBackSeconds: 0,
        pendingDeliveries: 0,
        oldestPendingDeliverySeconds: 0,
        dispatcherLastRunAt: undefined,
        purgeLastRunAt: null,
      },
    );
    assert.ok('sweeperLastRunAt' in ready.json());
    assert.equal(ready.headers['x-request-id'], 'probe-1', 'a well-formed request id from a proxy is kept');
  } finally {
    await app.close();
    await store.close();
  }
});

test(`${STORE_KIND}: /readyz answers 503 on a store that is not migrated, and 200 once it is`, async () => {
  const db = await emptyDatabase();
  const app = await createApp(testConfig(), { store: db.store });
  try {
    assert.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200, 'the process is up all the same');
    const before = await app.inject({ method: 'GET', url: '/readyz' });
    assert.equal(before.statusCode, 503);
    assert.deepEqual(before.json(), { status: 'unavailable', reason: 'database not migrated' });

    const { migrate } = await import('../src/db/migrator.js');
    await migrate(db.store);
    assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
    // a newer version migrated the store (a rolling upgrade): this older process stays ready
    await db.store.pool.query("INSERT INTO schema_migrations (version, name, checksum) VALUES (9999, '9999_from_a_newer_version', 'x')");
    assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
  } finally {
    await app.close();
    await db.close();
  }
});

test(`${STORE_KIND}: /readyz answers 503 when the database is unreachable; /healthz still 200`, async () => {
  const store = await testStore();
  const app = await createApp(testConfig(), { store });
  try {
    await store.pool.end(); // the connection is gone
    const ready = await app.inject({ method: 'GET', url: '/readyz' });
    assert.equal(ready.statusCode, 503);
    assert.deepEqual(ready.json(), { status: 'unavailable', reason: 'database unreachable' });
    assert.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
  } finally {
    await app.close();
    await store.close();
  }
});
