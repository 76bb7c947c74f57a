/**
 * The take-next pick (the `picked` part of takeTasks' statement in src/tasks/take.ts) is served
 * by the index whose order is its ORDER BY (STYLE principle 3): tasks_take_idx without deadlines,
 * tasks_take_deadline_idx with them, and no Sort node. The statement EXPLAINed is the one
 * takeTasks sends, captured on its way to the database, not a copy of it.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql, type CompiledQuery, type Kysely, type QueryResult } from 'kysely';
import { testApp, updateSettings, type TestApp } from './helpers/app.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { Mate } from './helpers/mate.js';
import { STORE_KIND } from './helpers/db.js';
import { takeTasks } from '../src/tasks/take.js';
import { loadProcessByKey, type ProcessDef } from '../src/processes/store.js';
import type { Database } from '../src/db/types.js';

let t: TestApp;
let tenant: SeededTenant;
let proc: ProcessDef;

before(async () => {
  t = await testApp();
  tenant = await seedTenant(t.store, 'plan', { processes: [{ processKey: 'Plain' }, { processKey: 'Dated' }, { processKey: 'Noise' }] });
  const other = await seedTenant(t.store, 'plan-b', { processes: [{ processKey: 'Plain' }] });
  const mate = await Mate.signIn(t.app, tenant);
  const mateB = await Mate.signIn(t.app, other);
  const dated = (await loadProcessByKey(t.store.db, tenant.tenantId, 'Dated'))!;
  await updateSettings(t, tenant.tenantId, dated.id, { deadlines_enabled: true });
  // enough rows, spread over tenants, processes and queues, for the statistics to mean something
  const items = (n: number, f: (i: number) => Record<string, unknown>) => Array.from({ length: n }, (_, i) => f(i));
  for (const [m, pk] of [
    [mate, 'Plain'],
    [mate, 'Dated'],
    [mate, 'Noise'],
    [mateB, 'Plain'],
  ] as const) {
    const r = await m.post(
      `/api/CreateTasks/${pk}`,
      items(400, (i) => ({ n: i, urgent: i % 17 === 0, deadline: i % 3 ? `2030-01-${String((i % 28) + 1).padStart(2, '0')}` : null })),
    );
    assert.equal(r.body.succeeded, true, JSON.stringify(r.body));
  }
  await m(mate).takeSome('Plain', 50);
  await sql`ANALYZE tasks`.execute(t.store.db);
  proc = (await loadProcessByKey(t.store.db, tenant.tenantId, 'Plain'))!;
});
after(() => t.close());

function m(mate: Mate) {
  return {
    async takeSome(pk: string, count: number) {
      const r = await mate.get(`/api/TakeMany/${pk}?count=${count}`);
      assert.equal(r.body.length, count);
    },
  };
}

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Subplan Name'?: string;
  Plans?: PlanNode[];
}

/** Runs takeTasks with EXPLAIN prefixed to the SQL it sends; returns the plan of its `picked` CTE and the SQL. */
async function explainPick(processId: number, deadlines: boolean): Promise<{ plan: PlanNode; query: string }> {
  return t.store.db.transaction().execute(async (trx) => {
    // a small table may well be cheaper to scan; the question is whether the index can serve the
    // ORDER BY without a sort, so sequential and bitmap scans are ruled out for this transaction
    await sql`SET LOCAL enable_seqscan = off`.execute(trx);
    await sql`SET LOCAL enable_bitmapscan = off`.execute(trx);
    const real = trx.getExecutor();
    let captured: CompiledQuery | null = null;
    let result: QueryResult<any> | null = null;
    const executor = new Proxy(real, {
      get(target, prop) {
        if (prop === 'executeQuery') {
          return async (q: CompiledQuery) => {
            captured = q;
            result = await target.executeQuery({ ...q, sql: `EXPLAIN (FORMAT JSON) ${q.sql}` });
            return { rows: [] };
          };
        }
        const v = Reflect.get(target, prop, target);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const at = new Date('2031-01-01T00:00:00Z');
    const slots = Array.from({ length: 10 }, () => ({ mateId: 1, mateName: 'm', requestId: null }));
    const db = { getExecutor: () => executor } as unknown as Kysely<Database>;
    const taken = await takeTasks(
      { db, publish: () => {} },
      { tenantId: tenant.tenantId, id: processId, deadlinesEnabled: deadlines, runTimeoutSeconds: 86400 },
      at,
      at,
      slots,
    );
    assert.deepEqual(taken, []);
    assert.ok(captured && result, 'takeTasks sent its statement');
    const cell = (result as QueryResult<any>).rows[0]['QUERY PLAN'];
    const parsed = typeof cell === 'string' ? JSON.parse(cell) : cell;
    const cte = nodes(parsed[0].Plan as PlanNode).find((n) => n['Subplan Name'] === 'CTE picked');
    assert.ok(cte, `the plan has the picked CTE:\n${describe(parsed[0].Plan)}`);
    return { plan: cte, query: (captured as CompiledQuery).sql };
  });
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

function describe(plan: PlanNode, depth = 0): string {
  return `${'  '.repeat(depth)}${plan['Node Type']}${plan['Index Name'] ? ` on ${plan['Index Name']}` : ''}\n${(plan.Plans ?? []).map((p) => describe(p, depth + 1)).join('')}`;
}

for (const [deadlines, index, other] of [
  [false, 'tasks_take_idx', 'tasks_take_deadline_idx'],
  [true, 'tasks_take_deadline_idx', 'tasks_take_idx'],
] as const) {
  test(`${STORE_KIND}: take-next ${deadlines ? 'with' : 'without'} deadlines is an ordered scan of ${index}, no Sort`, async () => {
    const { plan, query } = await explainPick(proc.id, deadlines);
    const all = nodes(plan);
    const shown = describe(plan);
    assert.match(query, /FOR UPDATE SKIP LOCKED/, 'the real take query was explained');
    const scans = all.filter((n) => n['Index Name']);
    assert.deepEqual(
      scans.map((n) => [n['Node Type'], n['Index Name']]),
      [['Index Scan', index]],
      shown,
    );
    assert.ok(!all.some((n) => n['Index Name'] === other), shown);
    assert.ok(!all.some((n) => /Sort/.test(n['Node Type'])), `no Sort node:\n${shown}`);
    // the shape: rows locked as they come off the index, the LIMIT stopping the scan
    assert.deepEqual(
      all.map((n) => n['Node Type']),
      ['Limit', 'LockRows', 'Index Scan'],
      shown,
    );
  });
}

test("the indexes hold exactly the free Ready tasks the query asks for (their WHERE matches the query's)", async () => {
  const { rows } = await sql<{ indexname: string; indexdef: string }>`SELECT indexname, indexdef FROM pg_indexes
    WHERE tablename = 'tasks' AND indexname IN ('tasks_take_idx', 'tasks_take_deadline_idx') ORDER BY indexname`.execute(t.store.db);
  assert.equal(rows.length, 2);
  for (const r of rows) {
    assert.match(r.indexdef, /WHERE \(\(queue = 'Ready'::text\) AND \(locked_until IS NULL\) AND \(deleted_at IS NULL\)\)/, r.indexdef);
  }
  // ASC NULLS LAST is the default order, which pg_indexes does not spell out
  assert.match(rows[0].indexdef, /\(tenant_id, process_id, urgent DESC, deadline, queue_position, seq\)/);
  assert.match(rows[1].indexdef, /\(tenant_id, process_id, urgent DESC, queue_position, seq\)/);
});
