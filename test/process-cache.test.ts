/** The one-second cache of process definitions read by the Mate API (src/processes/cache.ts). */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { testStore, type TestStore } from './helpers/db.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { ProcessCache } from '../src/processes/cache.js';
import { createProcess } from '../src/processes/service.js';
import { updateProcessSettings } from '../src/processes/store.js';
import { ChangeNotifier } from '../src/lib/notifier.js';
import { Units } from '../src/db/tx.js';

let store: TestStore;
let a: SeededTenant;
let b: SeededTenant;
let processId: number;
let notifier: ChangeNotifier;
/** the cache's monotonic clock, in ms */
let at = 0;
let cache: ProcessCache;
const cachedProcessByKey = (tenantId: number, key: string, now: number) => {
  at = now;
  return cache.byKey(tenantId, key);
};

before(async () => {
  store = await testStore();
  a = await seedTenant(store, 'cache-a');
  b = await seedTenant(store, 'cache-b');
  processId = (await createProcess(store.db, a.tenantId, { processKey: 'Invoices' })).id;
  notifier = new ChangeNotifier();
  cache = new ProcessCache(store.db, notifier, () => at);
});
after(() => store.close());

test('a definition is kept for one second; a change made elsewhere shows after that', async () => {
  const first = await cachedProcessByKey(a.tenantId, 'invoices', 1_000);
  assert.equal(first?.gateOpen, true);
  // another server process stops the process: this one does not know yet
  await sql`UPDATE processes SET gate_open = false WHERE id = ${processId}`.execute(store.db);
  assert.equal((await cachedProcessByKey(a.tenantId, 'INVOICES', 1_999))?.gateOpen, true, 'served from the cache within the second');
  assert.equal((await cachedProcessByKey(a.tenantId, 'Invoices', 2_001))?.gateOpen, false, 're-read after it');
});

test('a change made through this process is seen at once', async () => {
  await cachedProcessByKey(a.tenantId, 'Invoices', 10_000);
  await new Units(store.db, notifier).transaction((tx) =>
    updateProcessSettings(tx, a.tenantId, processId, { gate_open: true, max_retries: 7 }),
  );
  const now = await cachedProcessByKey(a.tenantId, 'Invoices', 10_001);
  assert.deepEqual([now?.gateOpen, now?.maxRetries], [true, 7]);
});

test('tenants never share entries, and misses are not kept', async () => {
  await cachedProcessByKey(a.tenantId, 'Invoices', 20_000);
  assert.equal(await cachedProcessByKey(b.tenantId, 'Invoices', 20_001), null, "another tenant's key is not found");
  await createProcess(store.db, b.tenantId, { processKey: 'Invoices' });
  const found = await cachedProcessByKey(b.tenantId, 'Invoices', 20_002);
  assert.equal(found?.tenantId, b.tenantId, 'a process created just now is found at once');
  notifier.publish({ kind: 'process', tenantId: a.tenantId, processId: null });
  assert.equal((await cachedProcessByKey(a.tenantId, 'Invoices', 20_003))?.tenantId, a.tenantId);
});
