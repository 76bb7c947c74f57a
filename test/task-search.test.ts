/** Task lists for people (src/task-lists/): filters and sorts against a brute-force reference, keyset pages, isolation, bad input. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant, seedUser, type SeededTenant } from './helpers/seed.js';
import { Mate } from './helpers/mate.js';
import { inTx, personCaller, refusalOf } from './helpers/person.js';
import { ManualClock } from '../src/lib/clock.js';
import { createProcess } from '../src/processes/service.js';
import { loadProcessById, type ProcessDef } from '../src/processes/store.js';
import { createTasks, prepareTasks } from '../src/tasks/create.js';
import { actOnTasks } from '../src/tasks/people.js';
import { listTasks, pageStatement, readTaskListQuery } from '../src/task-lists/list.js';
import type { Task } from '../src/task-lists/view.js';
import type { Caller } from '../src/lib/caller.js';

const clock = new ManualClock('2026-04-01T08:00:00.000Z');
let t: TestApp;
let tenant: SeededTenant;
let other: SeededTenant;
let user: { id: number; username: string };
let proc: ProcessDef;
let otherProc: ProcessDef;
let mate: Mate;

// a deterministic pseudo-random sequence
let seed = 42;
const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)];

const me = (): Caller => personCaller(tenant.tenantId, user, clock.now());

async function createSome(count: number): Promise<number[]> {
  const items = Array.from({ length: count }, () => {
    const item: Record<string, unknown> = { name: `n${Math.floor(rnd() * 40)}`, kind: pick(['a', 'b', 'c']) };
    if (rnd() < 0.8) item.amount = Math.floor(rnd() * 20) - 5;
    if (rnd() < 0.2) item.urgent = true;
    if (rnd() < 0.15) item.activationDate = new Date(clock.now().getTime() + 86_400_000).toISOString();
    if (rnd() < 0.1) item.comment = `remark ${pick(['zebra', 'otter'])}`;
    return item;
  });
  const rows = await inTx(t.app, (tx) => createTasks(tx, me(), proc, prepareTasks(me(), proc, items, true), true));
  return rows.map((r) => r.id);
}

before(async () => {
  t = await testApp({ clock });
  tenant = await seedTenant(t.store, 'search');
  other = await seedTenant(t.store, 'search-other');
  user = await seedUser(t.store, tenant.tenantId, 'sam', 'agent');
  mate = await Mate.signIn(t.app, tenant);
  const fields = [
    { name: 'name', type: 'text' as const },
    { name: 'amount', type: 'number' as const, required: true },
    { name: 'kind', type: 'dropdown' as const, options: ['a', 'b', 'c'] },
  ];
  const p = await createProcess(t.store.db, tenant.tenantId, { processKey: 'S', fields });
  proc = (await loadProcessById(t.store.db, tenant.tenantId, p.id))!;
  const o = await createProcess(t.store.db, other.tenantId, { processKey: 'S', fields });
  otherProc = (await loadProcessById(t.store.db, other.tenantId, o.id))!;
  await sql`UPDATE processes SET deadlines_enabled = true, default_deadline_seconds = 7200 WHERE id = ${p.id}`.execute(t.store.db);
  proc = (await loadProcessById(t.store.db, tenant.tenantId, p.id))!;
  const ids: number[] = [];
  for (let b = 0; b < 6; b++) {
    ids.push(...(await createSome(40)));
    clock.advance(600);
  }
  // people's moves, reasons from Mates, locks
  const manual = ids.filter(() => rnd() < 0.2);
  await inTx(t.app, (tx) => actOnTasks(tx, me(), manual, { action: 'move', queue: 'Manual', error: true }));
  const solved = ids.filter((id) => !manual.includes(id) && rnd() < 0.15);
  await inTx(t.app, (tx) => actOnTasks(tx, me(), solved, { action: 'move', queue: 'Solved' }));
  for (let i = 0; i < 5; i++) await mate.takeNext('S');
  for (let i = 0; i < 3; i++) {
    const task = await mate.takeNext('S');
    await mate.post('/api/Manual', { taskId: task.taskId, reason: `Reason Zebra ${i}` });
  }
  clock.advance(3 * 3600); // deadlines of the first batches pass
  // the other tenant has look-alike tasks
  const oc = personCaller(other.tenantId, { id: 999, username: 'x' }, clock.now());
  await inTx(t.app, (tx) =>
    createTasks(tx, oc, otherProc, prepareTasks(oc, otherProc, [{ name: 'n1', amount: 1, comment: 'zebra' }], true), true),
  );
});
after(() => t.close());

/** Every page of a list (limit per page), asserting the total on each. */
async function walk(raw: Record<string, string>, limit = 7, between?: () => Promise<void>): Promise<{ items: Task[]; total: number }> {
  const items: Task[] = [];
  let cursor: string | null = null;
  let total = -1;
  for (let page = 0; page < 1000; page++) {
    const q = readTaskListQuery({ ...raw, limit: String(limit), ...(cursor ? { cursor } : {}) }, proc, 'UTC');
    const r = await listTasks(t.store.db, me(), proc, q);
    assert.ok(r.items.length <= limit);
    if (total === -1) total = r.total;
    items.push(...r.items);
    if (!r.nextCursor) return { items, total };
    cursor = r.nextCursor;
    if (between) await between();
  }
  throw new Error('too many pages');
}

interface Ref {
  id: number;
  queue: string;
  error: boolean;
  urgent: boolean;
  locked: boolean;
  deadline: number | null;
  activation: number;
  created: number;
  reason: string | null;
  data: Record<string, any>;
  comments: string[];
}

async function reference(): Promise<Ref[]> {
  const { rows } =
    await sql<any>`SELECT t.*, ARRAY(SELECT body FROM task_comments c WHERE c.tenant_id = t.tenant_id AND c.task_id = t.id) AS comments
    FROM tasks t WHERE t.tenant_id = ${tenant.tenantId} AND t.process_id = ${proc.id} AND t.deleted_at IS NULL`.execute(t.store.db);
  return rows.map((r) => ({
    id: Number(r.id),
    queue: r.queue,
    error: r.error,
    urgent: r.urgent,
    locked: r.locked_until !== null,
    deadline: r.deadline ? r.deadline.getTime() : null,
    activation: r.activation_date.getTime(),
    created: r.created_at.getTime(),
    reason: r.reason,
    data: r.data,
    comments: r.comments,
  }));
}

const now = () => clock.now().getTime();
const FILTERS: [Record<string, string>, (r: Ref) => boolean][] = [
  [{}, () => true],
  [{ queue: 'Ready' }, (r) => r.queue === 'Ready'],
  [{ queue: 'manual', error: 'true' }, (r) => r.queue === 'Manual' && r.error],
  [{ error: 'false', urgent: 'true' }, (r) => !r.error && r.urgent],
  [{ locked: 'true' }, (r) => r.locked],
  [{ overdue: 'true' }, (r) => r.deadline !== null && r.deadline < now() && r.queue !== 'Solved'],
  [{ notActiveYet: 'true' }, (r) => r.queue === 'Ready' && r.activation > now()],
  [{ notActiveYet: 'false', queue: 'Ready' }, (r) => r.queue === 'Ready' && r.activation <= now()],
  [{ 'f.kind': 'B' }, (r) => r.data.kind === 'b'],
  [{ 'f.amount': '3.0' }, (r) => r.data.amount === 3],
  [{ 'f.amount': '' }, (r) => r.data.amount === undefined],
  [{ 'f.name': 'N7', queue: 'NeedsData' }, (r) => r.data.name === 'n7' && r.queue === 'NeedsData'],
  [
    { q: 'zebra' },
    (r) => (r.reason ?? '').toLowerCase().includes('zebra') || r.comments.some((c) => c.includes('zebra')) || r.data.name === 'zebra',
  ],
  [{ q: 'n1' }, (r) => String(r.data.name).includes('n1')],
  [{ q: '%' }, () => false],
  [
    { createdFrom: '2026-04-01T08:10:00Z', createdTo: '2026-04-01T08:30:00Z' },
    (r) => r.created >= Date.parse('2026-04-01T08:10:00Z') && r.created < Date.parse('2026-04-01T08:30:00Z'),
  ],
];

type Key = (r: Ref) => number | string | boolean | null;
const SORTS: [string, Key][] = [
  ['-createdAt', (r) => r.created],
  ['id', (r) => r.id],
  ['f.amount', (r) => (r.data.amount === undefined ? null : r.data.amount)],
  ['-f.name', (r) => r.data.name],
  ['deadline', (r) => r.deadline ?? Infinity],
  ['queue', (r) => r.queue],
  ['-urgent', (r) => r.urgent],
];

function sorted(rows: Ref[], sort: string, key: Key): number[] {
  const desc = sort.startsWith('-');
  const cmp = (a: Ref, b: Ref) => {
    const ka = key(a);
    const kb = key(b);
    let c = 0;
    if (ka === null && kb !== null) c = -1;
    else if (kb === null && ka !== null) c = 1;
    else if (ka !== null && kb !== null) c = ka < kb ? -1 : ka > kb ? 1 : 0;
    if (c === 0) c = a.id - b.id;
    return desc ? -c : c;
  };
  return [...rows].sort(cmp).map((r) => r.id);
}

test('filters and sorts walk exactly the reference rows, in order, page by page', async () => {
  const ref = await reference();
  assert.ok(ref.length >= 240);
  let checked = 0;
  for (const [raw, pred] of FILTERS) {
    for (const [sort, key] of SORTS) {
      if (checked++ % 3 !== 0 && Object.keys(raw).length > 0) continue; // every filter with a few sorts
      const expected = sorted(ref.filter(pred), sort, key);
      const got = await walk({ ...raw, sort }, 13);
      assert.deepEqual(
        got.items.map((x) => x.id),
        expected,
        `${JSON.stringify(raw)} sort ${sort}`,
      );
      assert.equal(got.total, expected.length);
    }
  }
  // some filters match something, so the comparisons are not all empty
  assert.ok(ref.filter(FILTERS[4][1]).length > 0, 'locked tasks exist');
  assert.ok(ref.filter(FILTERS[5][1]).length > 0, 'overdue tasks exist');
  assert.ok(ref.filter(FILTERS[12][1]).length > 0, 'zebra matches exist');
});

test('the Task shape', async () => {
  const r = await listTasks(t.store.db, me(), proc, readTaskListQuery({ locked: 'true', limit: '1' }, proc, 'UTC'));
  const task = r.items[0];
  assert.deepEqual(Object.keys(task), [
    'id',
    'processId',
    'queue',
    'error',
    'reason',
    'urgent',
    'retryCount',
    'activationDate',
    'deadline',
    'lockedBy',
    'lockedUntil',
    'createdAt',
    'updatedAt',
    'data',
  ]);
  assert.deepEqual(task.lockedBy, { type: 'mate', id: tenant.mateId, name: tenant.mateUsername });
  assert.deepEqual(Object.keys(task.data), ['name', 'amount', 'kind']);
});

test('pages while rows change: every row that keeps its sort key is seen exactly once', async () => {
  for (const sort of ['-createdAt', 'id', 'f.amount']) {
    const start = new Set((await reference()).map((r) => r.id));
    const deleted = new Set<number>();
    const between = async () => {
      const ids = [...start].filter((id) => !deleted.has(id));
      // move some tasks around, create new ones, delete some
      const moving = ids.filter(() => rnd() < 0.05);
      await inTx(t.app, (tx) => actOnTasks(tx, me(), moving, { action: 'comment', text: 'touched' }));
      await inTx(t.app, (tx) => actOnTasks(tx, me(), moving, { action: 'setUrgent', urgent: rnd() < 0.5 }));
      const gone = ids.filter(() => rnd() < 0.01);
      const outcomes = await inTx(t.app, (tx) => actOnTasks(tx, me(), gone, { action: 'delete' }));
      for (const [id, o] of outcomes) if (o.ok) deleted.add(id);
      clock.advance(1);
      await createSome(3);
    };
    const got = await walk({ sort }, 25, between);
    const seen = got.items.map((x) => x.id);
    assert.equal(new Set(seen).size, seen.length, `${sort}: no row twice`);
    const missing = [...start].filter((id) => !deleted.has(id) && !seen.includes(id));
    assert.deepEqual(missing, [], `${sort}: no row lost`);
  }
});

test("another tenant's process and tasks are never listed", async () => {
  const r = await listTasks(t.store.db, me(), otherProc, readTaskListQuery({}, otherProc, 'UTC'));
  assert.deepEqual([r.items.length, r.total], [0, 0]);
  const mine = await walk({ q: 'zebra' });
  assert.ok(mine.items.every((x) => x.processId === proc.id));
});

test('bad queries are refused naming the key', async () => {
  const cases: [Record<string, unknown>, string, string][] = [
    [{ queue: 'Nope' }, 'invalid_field', 'queue'],
    [{ error: 'maybe' }, 'invalid_field', 'error'],
    [{ colour: 'red' }, 'unknown_field', 'colour'],
    [{ 'f.colour': 'red' }, 'unknown_field', 'f.colour'],
    [{ 'f.amount': 'lots' }, 'invalid_field', 'f.amount'],
    [{ sort: 'bogus' }, 'invalid_field', 'sort'],
    [{ sort: '-f.bogus' }, 'unknown_field', 'sort'],
    [{ limit: '0' }, 'invalid_field', 'limit'],
    [{ limit: '501' }, 'invalid_field', 'limit'],
    [{ createdFrom: 'yesterday' }, 'invalid_field', 'createdFrom'],
    [{ queue: ['Ready', 'Manual'] }, 'invalid_field', 'queue'],
  ];
  for (const [raw, code, field] of cases) {
    const r = await refusalOf(async () => readTaskListQuery(raw, proc, 'UTC'));
    assert.equal(r.code, code, JSON.stringify(raw));
    assert.equal(r.problems[0].field, field);
  }
  const page = await listTasks(t.store.db, me(), proc, readTaskListQuery({ sort: 'id', limit: '2' }, proc, 'UTC'));
  const otherSort = readTaskListQuery({ sort: '-id', cursor: page.nextCursor! }, proc, 'UTC');
  assert.equal((await refusalOf(() => listTasks(t.store.db, me(), proc, otherSort))).code, 'invalid_field');
  const garbage = readTaskListQuery({ cursor: 'not-a-cursor' }, proc, 'UTC');
  assert.equal((await refusalOf(() => listTasks(t.store.db, me(), proc, garbage))).code, 'invalid_field');
  const forged = Buffer.from(JSON.stringify({ s: '-createdAt', v: "x'; DROP TABLE tasks; --", i: 1 })).toString('base64url');
  const r = await refusalOf(() => listTasks(t.store.db, me(), proc, readTaskListQuery({ cursor: forged }, proc, 'UTC')));
  assert.deepEqual([r.code, r.problems[0].field], ['invalid_field', 'cursor']);
});

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

function nodes(p: PlanNode): PlanNode[] {
  return [p, ...(p.Plans ?? []).flatMap(nodes)];
}

test('pages are read from the index in the ORDER BY (no Sort), first page and after a cursor', async () => {
  await sql`ANALYZE tasks`.execute(t.store.db);
  for (const [sort, indexes] of [
    ['-createdAt', ['tasks_list_created_idx']],
    ['createdAt', ['tasks_list_created_idx']],
    // the primary key (tenant_id, id) serves the id order too; the planner picks by its statistics
    ['id', ['tasks_list_id_idx', 'tasks_pkey']],
  ] as const) {
    const first = readTaskListQuery({ sort, limit: '10', queue: 'Ready' }, proc, 'UTC');
    const page = await listTasks(t.store.db, me(), proc, first);
    for (const q of [first, { ...first, cursor: page.nextCursor }]) {
      const plan = await inTx(t.app, async (tx) => {
        // only whether the index serves the order is asked, not what a tiny table's statistics prefer
        await sql`SET LOCAL enable_seqscan = off`.execute(tx.db);
        const { rows } = await sql<any>`EXPLAIN (FORMAT JSON) ${pageStatement(me(), proc, q)}`.execute(tx.db);
        const json = rows[0]['QUERY PLAN'];
        return (typeof json === 'string' ? JSON.parse(json) : json)[0].Plan as PlanNode;
      });
      const all = nodes(plan);
      assert.ok(!all.some((n) => n['Node Type'].includes('Sort')), `${sort}: no Sort node`);
      assert.ok(
        all.some((n) => (indexes as readonly string[]).includes(n['Index Name'] ?? '')),
        `${sort}: read from ${indexes.join(' or ')}`,
      );
    }
  }
});
