/**
 * Task ids drawn in code (src/lib/opaque-id.ts) are exactly the database's permutation
 * (qm_permute_id, migration 0002): ids drawn before and after the change are one sequence, and a
 * default id (qm_opaque_id) never collides with one drawn in code.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { testStore, STORE_KIND, type TestStore } from './helpers/db.js';
import { permuteId } from '../src/lib/opaque-id.js';
import { drawTaskIds } from '../src/tasks/funnel.js';

const stores: TestStore[] = [];
after(async () => {
  for (const s of stores) await s.close();
});

test(`${STORE_KIND}: permuteId equals qm_permute_id, and drawTaskIds equals qm_opaque_id of the counter values it took`, async () => {
  const store = await testStore();
  stores.push(store);
  const { rows: keyRows } = await sql<{ key: string }>`SELECT key FROM id_secret`.execute(store.db);
  const key = `${keyRows[0].key}:tasks`;
  // small counters, the 26-bit boundary, and values near the 52-bit top
  const ns = [1, 2, 3, 17, 1000, 2 ** 26 - 1, 2 ** 26, 2 ** 26 + 1, 123_456_789, 2 ** 40 + 5, 2 ** 52 - 1];
  const { rows } = await sql<{
    n: string;
    id: string;
  }>`SELECT n::text, qm_permute_id(n, ${key})::text AS id FROM unnest(${ns.map(String)}::bigint[]) AS n`.execute(store.db);
  for (const r of rows) assert.equal(permuteId(Number(r.n), key), Number(r.id), `n = ${r.n}`);

  const ids = await drawTaskIds({ db: store.db, publish: () => {} }, 5);
  const { rows: last } = await sql<{ n: string }>`SELECT last_value::text AS n FROM tasks_id_counter`.execute(store.db);
  const top = Number(last[0].n);
  const { rows: expected } = await sql<{
    id: string;
  }>`SELECT qm_opaque_id(n, 'tasks')::text AS id FROM generate_series(${top - 4}::bigint, ${top}::bigint) AS n`.execute(store.db);
  assert.deepEqual(
    ids,
    expected.map((r) => Number(r.id)).sort((a, b) => a - b),
  );
});
