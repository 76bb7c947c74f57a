/**
 * A 100,000-row CSV through the import route (docs/people-api.md §6): a dry run that checks every
 * row, then the commit, run as a bulk job in chunks (the file is checked whole first: one bad row
 * creates nothing), on both stores. Alone because it wants the whole machine for half a minute or
 * more on the embedded store.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { testApp, type TestApp } from '../helpers/app.js';
import { seedTenant, type SeededTenant } from '../helpers/seed.js';
import { asPerson, peopleOfEveryRole, type TestPerson } from '../helpers/people.js';

const ROWS = 100_000;
let t: TestApp;
let a: SeededTenant;
let agent: TestPerson;
let pid: number;

before(async () => {
  t = await testApp();
  a = await seedTenant(t.store, 'acme', {
    processes: [
      {
        processKey: 'orders',
        fields: [
          { name: 'orderNo', type: 'text', isKey: true, unique: true },
          { name: 'amount', type: 'number', required: true },
          { name: 'due', type: 'date' },
        ],
      },
    ],
  });
  agent = (await peopleOfEveryRole(t.store, a.tenantId)).agent;
  pid = (await t.store.db.selectFrom('processes').select('id').where('process_key', '=', 'orders').executeTakeFirstOrThrow()).id;
});
after(() => t.close());

function csv(bad: number | null): Buffer {
  const lines = ['orderNo,amount,due'];
  for (let i = 0; i < ROWS; i++) {
    const amount = i === bad ? 'plenty' : String(i % 997);
    lines.push(`O-${i},${amount},2026-${String((i % 12) + 1).padStart(2, '0')}-${String((i % 28) + 1).padStart(2, '0')}`);
  }
  return Buffer.from(lines.join('\n'));
}

const upload = (query: string, payload: Buffer) =>
  asPerson(t.app, agent, {
    method: 'POST',
    url: `/v1/processes/${pid}/tasks/import${query}`,
    headers: { 'content-type': 'text/csv' },
    payload,
  });

const taskCount = async () =>
  (await sql<{ n: number }>`SELECT count(*)::int AS n FROM tasks WHERE process_id = ${pid}`.execute(t.store.db)).rows[0].n;

test('100,000 rows: one bad row is named and nothing is created; the good file is created whole by its job, with its history', async () => {
  const bad = await upload('', csv(73_210));
  assert.equal(bad.statusCode, 400, bad.body.slice(0, 500));
  assert.equal(await taskCount(), 0, 'all or nothing');

  const good = csv(null);
  const dry = await upload('?dryRun=true', good);
  assert.equal(dry.statusCode, 200, dry.body.slice(0, 500));
  assert.deepEqual([dry.json().valid, dry.json().invalid], [ROWS, 0]);
  assert.equal(await taskCount(), 0, 'a dry run creates nothing');

  // more rows than one chunk: a job, followed to its end
  const accepted = await upload('', good);
  assert.equal(accepted.statusCode, 202, accepted.body.slice(0, 500));
  assert.equal(accepted.json().total, ROWS);
  const job = await t.app.services.bulkJobs.wait(a.tenantId, accepted.json().jobId);
  assert.deepEqual([job?.status, job?.done, job?.failed], ['done', ROWS, 0]);
  assert.equal(await taskCount(), ROWS);
  const { rows } = await sql<{ n: number }>`SELECT count(DISTINCT h.task_id)::int AS n FROM task_history h
    JOIN tasks t ON t.tenant_id = h.tenant_id AND t.id = h.task_id WHERE t.process_id = ${pid} AND h.actor_id = ${agent.userId}`.execute(
    t.store.db,
  );
  assert.equal(rows[0].n, ROWS, 'every task has its history row by the person');
  // the overview's counters followed the import
  const overview = await asPerson(t.app, agent, { method: 'GET', url: '/v1/processes' });
  const orders = overview.json().items.find((p: { id: number }) => p.id === pid);
  assert.equal(orders.counts.ready, ROWS);
  // the key stays unique: the same file again is refused row by row, and creates nothing
  const again = await upload('?dryRun=true', good);
  assert.equal(again.json().invalid, ROWS);
});
