/** The four KPI rules of docs/product.md §6, each with numbers, through real hand-backs. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { testApp, updateSettings, type TestApp } from './helpers/app.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { Mate } from './helpers/mate.js';
import { createProcess } from '../src/processes/service.js';
import { computeKpi } from '../src/kpis/rules.js';
import type { KpiSettings } from '../src/db/types.js';

let t: TestApp;
let tenant: SeededTenant;
let mate: Mate;
let n = 0;

before(async () => {
  t = await testApp();
  tenant = await seedTenant(t.store, 'kpi');
  mate = await Mate.signIn(t.app, tenant);
});
after(() => t.close());

const BASE: KpiSettings = {
  secondsSavedPerTask: 120,
  entriesPerTask: 2,
  secondsSavedPerEntry: null,
  secondsSavedManual: 30,
  secondsSavedError: 5,
  secondsSavedRetry: 7,
};

async function process(kpi: KpiSettings): Promise<string> {
  const key = `K${++n}`;
  const p = await createProcess(t.store.db, tenant.tenantId, { processKey: key });
  await updateSettings(t, tenant.tenantId, p.id, { kpi });
  return key;
}

/** Creates, takes and hands back one task; returns the KPI event logged. */
async function handBack(pk: string, action: string, body: Record<string, unknown> = {}) {
  const id = await mate.create(pk, { x: 1 });
  assert.equal((await mate.takeNext(pk)).taskId, id);
  const r = await mate.post(`/api/${action}`, { taskId: id, ...body });
  assert.equal(r.body.succeeded, true, JSON.stringify(r.body));
  const { rows } = await sql<{
    outcome: string;
    entries: number;
    seconds_saved: number;
  }>`SELECT outcome, entries, seconds_saved FROM kpi_events WHERE task_id = ${id}`.execute(t.store.db);
  assert.equal(rows.length, 1, 'one KPI event per hand-back');
  return { outcome: rows[0].outcome, entries: rows[0].entries, seconds: Number(rows[0].seconds_saved) };
}

test('rule 1: no override (or both null) → the outcome defaults', async () => {
  const pk = await process(BASE);
  assert.deepEqual(await handBack(pk, 'Solved'), { outcome: 'Solved', entries: 2, seconds: 120 });
  assert.deepEqual(await handBack(pk, 'Solved', { overwriteEntries: null, overwriteSecondsSaved: null }), {
    outcome: 'Solved',
    entries: 2,
    seconds: 120,
  });
  assert.deepEqual(await handBack(pk, 'Manual'), { outcome: 'Manual', entries: 2, seconds: 30 });
  assert.deepEqual(await handBack(pk, 'Error'), { outcome: 'Error', entries: 2, seconds: 5 });
  assert.deepEqual(await handBack(pk, 'Retry'), { outcome: 'Retry', entries: 2, seconds: 7 });
  const perEntry = await process({ ...BASE, secondsSavedPerEntry: 45 });
  assert.deepEqual(
    await handBack(perEntry, 'Solved'),
    { outcome: 'Solved', entries: 2, seconds: 90 },
    'Solved default uses entries × seconds per entry',
  );
  assert.deepEqual(await handBack(perEntry, 'Manual'), { outcome: 'Manual', entries: 2, seconds: 30 }, 'Manual keeps its own setting');
});

test('rule 2: overwriteEntries only → entries × secondsSavedPerEntry, or the per-task seconds', async () => {
  const perEntry = await process({ ...BASE, secondsSavedPerEntry: 45 });
  assert.deepEqual(await handBack(perEntry, 'Solved', { overwriteEntries: 4 }), { outcome: 'Solved', entries: 4, seconds: 180 });
  assert.deepEqual(await handBack(perEntry, 'Manual', { overwriteEntries: '3' }), { outcome: 'Manual', entries: 3, seconds: 135 });
  const noPerEntry = await process(BASE);
  assert.deepEqual(await handBack(noPerEntry, 'Solved', { overwriteEntries: 4 }), { outcome: 'Solved', entries: 4, seconds: 120 });
  assert.deepEqual(await handBack(noPerEntry, 'Error', { overwriteEntries: 4 }), { outcome: 'Error', entries: 4, seconds: 5 });
});

test('rule 3: overwriteSecondsSaved wins whatever overwriteEntries is', async () => {
  const pk = await process({ ...BASE, secondsSavedPerEntry: 45 });
  assert.deepEqual(await handBack(pk, 'Solved', { overwriteSecondsSaved: 999 }), { outcome: 'Solved', entries: 2, seconds: 999 });
  assert.deepEqual(await handBack(pk, 'Solved', { overwriteSecondsSaved: 0, overwriteEntries: 7 }), {
    outcome: 'Solved',
    entries: 7,
    seconds: 0,
  });
});

test('rule 4: entries are always logged; .NET nulls and "" count as absent', async () => {
  const pk = await process(BASE);
  assert.deepEqual(await handBack(pk, 'Solved', { OverwriteSecondsSaved: null, OverwriteEntries: null }), {
    outcome: 'Solved',
    entries: 2,
    seconds: 120,
  });
  assert.deepEqual(await handBack(pk, 'Solved', { overwriteSecondsSaved: '', overwriteEntries: '' }), {
    outcome: 'Solved',
    entries: 2,
    seconds: 120,
  });
  assert.deepEqual(computeKpi(BASE, 'Retry', { overwriteEntries: 0, overwriteSecondsSaved: null }), { entries: 0, secondsSaved: 7 });
});

test('overrides out of range are refused and change nothing', async () => {
  const pk = await process(BASE);
  const id = await mate.create(pk, { x: 1 });
  await mate.takeNext(pk);
  for (const bad of [-1, 2 ** 31, 1.5, 'abc']) {
    const r = await mate.post('/api/Solved', { taskId: id, overwriteSecondsSaved: bad });
    assert.equal(r.status, 400, `overwriteSecondsSaved ${bad}`);
    assert.equal(r.body.code, 'invalid_field');
  }
  const { rows } = await sql<{ queue: string }>`SELECT queue FROM tasks WHERE id = ${id}`.execute(t.store.db);
  assert.equal(rows[0].queue, 'Ready');
});
