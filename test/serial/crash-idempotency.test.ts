/**
 * kill -9 the server during a burst of creates with Idempotency-Keys, start it again, and retry
 * every key whose answer never came: every acknowledged create is there, and there is exactly one
 * task per key (reliability plan #7). PostgreSQL only: the embedded store does not fsync.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { DATABASE_URL, testStore, type TestStore } from '../helpers/db.js';
import { seedTenant } from '../helpers/seed.js';
import { spawnCli, killAll, type CliProcess } from '../foundation-support.js';

const KEYS = 300;
const CONCURRENCY = 8;

let store: TestStore | null = null;
after(async () => {
  await killAll();
  await store?.close();
});

async function startServer(url: string): Promise<{ cli: CliProcess; base: string }> {
  const cli = spawnCli(['start', '--port', '0', '--log-level', 'warn'], { env: { DATABASE_URL: url }, timeoutMs: 120_000 });
  const m = await cli.waitFor(/listening on (http:\/\/\S+)/);
  return { cli, base: m[1] };
}

test(
  'a server killed mid-burst loses no acknowledged create and duplicates none after retries',
  { skip: DATABASE_URL ? false : 'needs DATABASE_URL (PostgreSQL)' },
  async () => {
    store = await testStore();
    const tenant = await seedTenant(store, 'crash', { processes: [{ processKey: 'Burst', fields: [{ name: 'n', type: 'integer' }] }] });
    const form = new URLSearchParams({
      grant_type: 'password',
      client_id: tenant.clientId,
      client_secret: tenant.apiSecret,
      username: tenant.mateUsername,
      password: tenant.matePassword,
    });
    const token = async (base: string) =>
      (await (await fetch(`${base}/connect/token`, { method: 'POST', body: form })).json()).access_token as string;
    const create = async (base: string, auth: string, i: number) => {
      const res = await fetch(`${base}/api/CreateTask/Burst`, {
        method: 'POST',
        headers: { authorization: `Bearer ${auth}`, 'content-type': 'application/json', 'idempotency-key': `key-${i}` },
        body: JSON.stringify({ n: i }),
      });
      return (await res.json()) as { succeeded: boolean; taskId: number };
    };

    // the burst: the server is killed once about a third of the creates are acknowledged
    const first = await startServer(store.url!);
    const auth = await token(first.base);
    const acked = new Map<number, number>();
    let next = 0;
    let killed = false;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < KEYS) {
          const i = next++;
          try {
            const r = await create(first.base, auth, i);
            if (r.succeeded) acked.set(i, r.taskId);
          } catch {
            // connection refused or reset: the answer never came
          }
          if (!killed && acked.size >= KEYS / 3) {
            killed = true;
            first.cli.child.kill('SIGKILL');
          }
        }
      }),
    );
    await first.cli.exited;
    assert.ok(killed && acked.size >= KEYS / 3 && acked.size < KEYS, `killed mid-burst (${acked.size} acknowledged)`);

    // start again and retry every key whose answer never came; replay the acknowledged ones too
    const second = await startServer(store.url!);
    const auth2 = await token(second.base);
    const final = new Map<number, number>();
    for (let i = 0; i < KEYS; i++) {
      const r = await create(second.base, auth2, i);
      assert.equal(r.succeeded, true, `key ${i}: ${JSON.stringify(r)}`);
      final.set(i, r.taskId);
    }
    for (const [i, id] of acked) assert.equal(final.get(i), id, `key ${i} keeps its acknowledged task`);
    const { rows } = await sql<{ n: number; distinct_n: number }>`SELECT count(*)::int AS n, count(DISTINCT (data->>'n'))::int AS distinct_n
    FROM tasks WHERE tenant_id = ${tenant.tenantId}`.execute(store.db);
    assert.deepEqual(rows[0], { n: KEYS, distinct_n: KEYS }, 'exactly one task per key: none lost, none duplicated');
    assert.equal(new Set(final.values()).size, KEYS);
    second.cli.child.kill('SIGTERM');
    assert.equal((await second.cli.exited).code, 0);
  },
);
