/**
 * The fields editor's effect on tasks (src/tasks/fields.ts, docs/product.md §3): a rename carries
 * the tasks' values along, with a history row per task by the person; a name that exists is
 * refused and nothing changes; NeedsData tasks that a change makes complete move to Ready through
 * the funnel, with a history row by the person, in the transaction of the field change.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { Mate } from './helpers/mate.js';
import { readTask } from './helpers/rows.js';
import { ManualClock } from '../src/lib/clock.js';
import { asPerson, peopleOfEveryRole, type TestPerson } from './helpers/people.js';
import { snapshot } from './helpers/snapshot.js';
import { readEvents } from '../src/events/store.js';
import type { Role } from '../src/accounts/service.js';

let t: TestApp;
let a: SeededTenant;
const clock = new ManualClock('2026-03-02T10:00:00Z');
let people: Record<Role, TestPerson>;
let mate: Mate;
let pid: number;
/** ready: complete; partial: lacks note; bare: lacks amount and note; solved: complete and Solved */
const ids: Record<'ready' | 'partial' | 'bare' | 'solved', number> = { ready: 0, partial: 0, bare: 0, solved: 0 };

before(async () => {
  t = await testApp({ clock });
  a = await seedTenant(t.store, 'acme', {
    processes: [
      {
        processKey: 'orders',
        fields: [
          { name: 'ref', type: 'text', isKey: true, unique: true },
          { name: 'amount', type: 'number', required: true },
          { name: 'note', type: 'text', required: true },
        ],
      },
    ],
  });
  people = await peopleOfEveryRole(t.store, a.tenantId, '', clock.now());
  pid = (await t.store.db.selectFrom('processes').select('id').where('process_key', '=', 'orders').executeTakeFirstOrThrow()).id;
  mate = await Mate.signIn(t.app, a);
  ids.solved = await mate.create('orders', { ref: 'S', amount: 9, note: 'done' });
  const taken = await mate.takeNext('orders');
  assert.equal(taken.taskId, ids.solved);
  assert.equal((await mate.post(`/api/Solved`, { taskId: ids.solved })).body.succeeded, true);
  ids.ready = await mate.create('orders', { ref: 'A', amount: 1, note: 'x' });
  ids.partial = await mate.create('orders', { ref: 'B', amount: 2 });
  ids.bare = await mate.create('orders', { ref: 'C' });
});
after(() => t.close());

const putFields = (fields: unknown[]) =>
  asPerson(t.app, people.developer, { method: 'PUT', url: `/v1/processes/${pid}/fields`, payload: { fields } });
const history = async (action: string) =>
  (
    await sql<{
      task_id: number;
      actor_id: number;
      from_queue: string;
      to_queue: string;
      details: any;
    }>`SELECT task_id, actor_id, from_queue,
      to_queue, details FROM task_history WHERE process_id = ${pid} AND action = ${action} ORDER BY task_id`.execute(t.store.db)
  ).rows;

test('the starting queues', async () => {
  assert.deepEqual(
    await Promise.all([ids.solved, ids.ready, ids.partial, ids.bare].map(async (id) => (await readTask(t.store.db, id)).queue)),
    ['Solved', 'Ready', 'NeedsData', 'NeedsData'],
  );
});

test('a rename carries every task value along, with a history row per task by the person; Mates use the new name', async () => {
  const res = await putFields([
    { name: 'ref', type: 'text', isKey: true, unique: true },
    { name: 'total', renamedFrom: 'amount', type: 'number', required: true },
    { name: 'note', type: 'text', required: true },
  ]);
  assert.equal(res.statusCode, 200, res.body);
  assert.deepEqual(res.json().renamed, [{ from: 'amount', to: 'total', tasks: 3 }]);
  assert.equal(res.json().movedToReady, 0);
  assert.deepEqual(
    res.json().fields.map((f: any) => [f.name, f.required]),
    [
      ['ref', false],
      ['total', true],
      ['note', true],
    ],
  );
  assert.deepEqual((await readTask(t.store.db, ids.ready)).data, { ref: 'A', total: 1, note: 'x' });
  assert.deepEqual((await readTask(t.store.db, ids.solved)).data, { ref: 'S', total: 9, note: 'done' });
  assert.deepEqual((await readTask(t.store.db, ids.bare)).data, { ref: 'C' });
  const rows = await history('Field renamed');
  assert.deepEqual(
    rows.map((r) => [r.task_id, r.actor_id, r.from_queue, r.to_queue, r.details.field]),
    (
      [
        [ids.solved, 'Solved'],
        [ids.ready, 'Ready'],
        [ids.partial, 'NeedsData'],
      ] as const
    )
      .map(([id, queue]) => [id, people.developer.userId, queue, queue, { from: 'amount', to: 'total' }])
      .sort((x, y) => (x[0] as number) - (y[0] as number)),
  );
  const audit = await asPerson(t.app, people.admin, { method: 'GET', url: '/v1/audit?action=process.fields' });
  assert.deepEqual(audit.json().items[0].details.renamed, [{ from: 'amount', to: 'total', tasks: 3 }]);

  const task = await asPerson(t.app, people.viewer, { method: 'GET', url: `/v1/tasks/${ids.partial}` });
  assert.equal(task.json().data.total, 2);
  assert.equal((await mate.post('/api/CreateTask/orders', { ref: 'D', amount: 3 })).body.succeeded, false, 'the old name is no field now');
  assert.equal((await mate.post('/api/CreateTask/orders', { ref: 'D', total: 3, note: 'n' })).body.succeeded, true);
});

test('a rename to a name that exists, or of a field that does not, is refused and nothing changes', async () => {
  const before = await snapshot(t.store.db, a.tenantId);
  const taken = await putFields([
    { name: 'ref', type: 'text', isKey: true, unique: true },
    { name: 'note', renamedFrom: 'total', type: 'number', required: true },
    { name: 'remark', renamedFrom: 'note', type: 'text', required: true },
  ]);
  assert.equal(taken.statusCode, 409, taken.body);
  assert.equal(taken.json().code, 'conflict');
  assert.match(taken.json().message, /"total" cannot be renamed to "note": a field of that name exists/);
  const unknown = await putFields([
    { name: 'ref', type: 'text', isKey: true, unique: true },
    { name: 'sum', renamedFrom: 'amount', type: 'number', required: true },
    { name: 'note', type: 'text', required: true },
  ]);
  assert.equal(unknown.statusCode, 400, unknown.body);
  assert.equal(unknown.json().errors[0].field, 'fields[1].renamedFrom');
  const twice = await putFields([
    { name: 'ref', type: 'text', isKey: true, unique: true },
    { name: 'sum', renamedFrom: 'total', type: 'number' },
    { name: 'sum2', renamedFrom: 'TOTAL', type: 'number' },
    { name: 'note', type: 'text', required: true },
  ]);
  assert.equal(twice.statusCode, 400, twice.body);
  // a rename in a change refused for another reason leaves the values where they were
  const refused = await putFields([
    { name: 'ref', type: 'text', isKey: true, unique: true },
    { name: 'sum', renamedFrom: 'total', type: 'date', required: true },
    { name: 'note', type: 'text', required: true },
  ]);
  assert.equal(refused.statusCode, 409, refused.body);
  assert.deepEqual(await snapshot(t.store.db, a.tenantId), before);
});

test('a required field made optional moves the NeedsData tasks it completes to Ready, by the person, through the funnel', async () => {
  const res = await putFields([
    { name: 'ref', type: 'text', isKey: true, unique: true },
    { name: 'total', type: 'number', required: true },
    { name: 'note', type: 'text' },
  ]);
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.json().movedToReady, 1);
  assert.equal((await readTask(t.store.db, ids.partial)).queue, 'Ready');
  assert.equal((await readTask(t.store.db, ids.bare)).queue, 'NeedsData', 'still lacks total');
  const moved = await history('Fields changed');
  assert.deepEqual(
    moved.map((r) => [r.task_id, r.actor_id, r.from_queue, r.to_queue]),
    [[ids.partial, people.developer.userId, 'NeedsData', 'Ready']],
  );
  // the funnel's derived writes: the event of the move is in the outbox, as readers see it
  await t.app.services.events.watermark.flush();
  const events = (await readEvents(t.store.db, a.tenantId, 0, 1000)).filter(
    (e) =>
      e.type === 'task.fields_changed' &&
      (e.payload as Record<string, unknown>).taskId === ids.partial &&
      (e.payload as Record<string, unknown>).queue === 'Ready' &&
      (e.payload as Record<string, unknown>).fromQueue === 'NeedsData',
  );
  assert.equal(events.length, 1, 'the move wrote its event');
  // and a Mate takes it now
  const next = await mate.takeNext('orders');
  assert.ok([ids.ready, ids.partial].includes(next.taskId));

  // a required field removed (it holds no values) completes the last one
  const removed = await putFields([
    { name: 'ref', type: 'text', isKey: true, unique: true },
    { name: 'note', type: 'text' },
    { name: 'total', type: 'number' },
  ]);
  assert.equal(removed.statusCode, 200, removed.body);
  assert.equal(removed.json().movedToReady, 1);
  assert.equal((await readTask(t.store.db, ids.bare)).queue, 'Ready');
});
