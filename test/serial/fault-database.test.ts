/**
 * The database goes away and comes back (reliability plan #8/#9, PostgreSQL through an in-repo
 * TCP proxy): Mate API calls answer 503 `unavailable` with Retry-After (never a 500, never a hang
 * past the connect timeout), /readyz says 503, and everything works again once it is back.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createApp } from '../../src/app.js';
import { withSuiteLog } from '../helpers/log-sink.js';
import { testConfig } from '../../src/config.js';
import { openStore, type Store } from '../../src/db/store.js';
import { DATABASE_URL, testStore, type TestStore } from '../helpers/db.js';
import { seedTenant } from '../helpers/seed.js';
import { Mate } from '../helpers/mate.js';
import { startProxy, type FaultProxy } from '../helpers/proxy.js';

let base: TestStore | null = null;
let proxied: Store | null = null;
let proxy: FaultProxy | null = null;
after(async () => {
  await proxied?.close().catch(() => {});
  await proxy?.close();
  await base?.close();
});

test(
  'database down: 503 unavailable with Retry-After; back up: answers again',
  { skip: DATABASE_URL ? false : 'needs DATABASE_URL (PostgreSQL)' },
  async () => {
    base = await testStore();
    const tenant = await seedTenant(base, 'fault', { processes: [{ processKey: 'F' }] });
    const target = new URL(base.url!);
    proxy = await startProxy(target.hostname, Number(target.port || 5432));
    const via = new URL(base.url!);
    via.port = String(proxy.port);
    proxied = await openStore({ databaseUrl: via.toString(), dataDir: '', poolSize: 4 });
    const app = await createApp(...withSuiteLog(testConfig(), { store: proxied, sweeper: false }));
    try {
      const mate = await Mate.signIn(app, tenant);
      const id = await mate.create('F', { a: 1 });

      proxy.cut();
      const started = Date.now();
      const take = await mate.get('/api/TakeNext/F');
      assert.equal(take.status, 503, JSON.stringify(take.body));
      assert.equal(take.body.code, 'unavailable');
      assert.equal(take.body.taskId, -1, 'the endpoint keeps its normal keys');
      assert.ok(Number(take.headers['retry-after']) > 0);
      assert.doesNotMatch(JSON.stringify(take.body), /ECONN|terminated|stack|pg_/i, 'no internals in the answer');
      const created = await mate.post('/api/CreateTask/F', { a: 2 });
      assert.deepEqual([created.status, created.body.code, created.body.taskId], [503, 'unavailable', -1]);
      const signIn = await app.inject({
        method: 'POST',
        url: '/connect/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({
          grant_type: 'password',
          client_id: tenant.clientId,
          client_secret: tenant.apiSecret,
          username: tenant.mateUsername,
          password: tenant.matePassword,
        }).toString(),
      });
      assert.equal(signIn.statusCode, 503, signIn.body);
      assert.ok(Number(signIn.headers['retry-after']) > 0);
      const ready = await app.inject({ method: 'GET', url: '/readyz' });
      assert.equal(ready.statusCode, 503);
      assert.ok(Date.now() - started < 15_000, 'answered within the connect timeout, no hang');

      proxy.heal();
      const again = await mate.takeNext('F');
      assert.equal(again.taskId, id, 'the task is taken once the database is back');
      assert.equal((await mate.post('/api/Solved', { taskId: id })).body.succeeded, true);
      assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
    } finally {
      await app.close();
    }
  },
);
