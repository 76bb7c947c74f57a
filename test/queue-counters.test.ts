/**
 * Queue counters (src/processes/counters.ts, docs/operations.md "Queue counters"): after a long seeded random
 * sequence of Mate and people actions, some of them concurrent, the overview's counts and
 * /metrics' queue depths equal a brute-force COUNT(*) over the tasks, before and after the fold
 * job ran; two folds at once lose and double nothing.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { testApp, updateSettings, type TestApp } from './helpers/app.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { Mate } from './helpers/mate.js';
import { ManualClock } from '../src/lib/clock.js';
import { asPerson, peopleOfEveryRole, type TestPerson } from './helpers/people.js';
import type { Role } from '../src/accounts/service.js';
import { recoverExpiredLeases } from '../src/maintenance/leases.js';
import { foldQueueCounts } from '../src/maintenance/queue-counters.js';
import { sweepOnce } from '../src/maintenance/sweep.js';
import { queueDepths } from '../src/metrics/store.js';
import { startOfDay } from '../src/processes/summary.js';

let t: TestApp;
let a: SeededTenant;
let b: SeededTenant;
// 17:00 UTC is 22:30 in Kolkata: the sequence crosses local midnight (a half-hour offset), so
// "Solved today" restarts on a bin boundary that is no whole UTC hour
const clock = new ManualClock('2026-03-02T17:00:00Z');
const TZ = 'Asia/Kolkata';
let people: Record<Role, TestPerson>;
let mate: Mate;
let mateB: Mate;
const pids: Record<string, number> = {};

before(async () => {
  t = await testApp({ clock });
  a = await seedTenant(t.store, 'acme', {
    timeZone: TZ,
    processes: [
      {
        processKey: 'alpha',
        fields: [
          { name: 'ref', type: 'text' },
          { name: 'amount', type: 'number', required: true },
        ],
      },
      { processKey: 'beta', fields: [{ name: 'ref', type: 'text' }] },
    ],
  });
  b = await seedTenant(t.store, 'bravo', { processes: [{ processKey: 'gamma' }] });
  for (const r of await t.store.db.selectFrom('processes').select(['id', 'process_key']).execute()) pids[r.process_key] = r.id;
  await updateSettings(t, a.tenantId, pids.alpha, {
    deadlines_enabled: true,
    default_deadline_seconds: 3 * 3600,
    retry_allowed: true,
    max_retries: 2,
    lock_timeout_seconds: 900,
  });
  await updateSettings(t, a.tenantId, pids.beta, {
    require_approval: 'all',
    retry_allowed: true,
    max_retries: 1,
    lock_timeout_seconds: 600,
  });
  people = await peopleOfEveryRole(t.store, a.tenantId, '', clock.now());
  mate = await Mate.signIn(t.app, a);
  mateB = await Mate.signIn(t.app, b);
});
after(() => t.close());

/** A small seeded PRNG (mulberry32), so that a failing sequence replays exactly. */
function prng(seed: number) {
  let s = seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let x = s;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)],
    chance: (p: number) => next() < p,
  };
}

const COUNT_KEYS = [
  'ready',
  'notActiveYet',
  'needsData',
  'needsApproval',
  'manual',
  'error',
  'solved',
  'locked',
  'urgent',
  'overdue',
] as const;
type Counts = Record<(typeof COUNT_KEYS)[number], number>;

/** The brute-force reference: COUNT(*) over the tasks, with the overview's definitions (docs/people-api.md §4). */
async function bruteForce(tenantId: number, now: Date, timeZone: string): Promise<Map<number, Counts>> {
  const today = startOfDay(now, timeZone);
  const { rows } = await sql<Record<string, string>>`
    SELECT p.id AS process_id,
      count(t.id) FILTER (WHERE t.queue = 'Ready' AND t.activation_date <= ${now}) AS ready,
      count(t.id) FILTER (WHERE t.queue = 'Ready' AND t.activation_date > ${now}) AS "notActiveYet",
      count(t.id) FILTER (WHERE t.queue = 'NeedsData') AS "needsData",
      count(t.id) FILTER (WHERE t.queue = 'NeedsApproval') AS "needsApproval",
      count(t.id) FILTER (WHERE t.queue = 'Manual' AND NOT t.error) AS manual,
      count(t.id) FILTER (WHERE t.queue = 'Manual' AND t.error) AS error,
      count(t.id) FILTER (WHERE t.queue = 'Solved' AND t.updated_at >= ${today}) AS solved,
      count(t.id) FILTER (WHERE t.queue <> 'Solved' AND t.locked_until > ${now}) AS locked,
      count(t.id) FILTER (WHERE t.queue <> 'Solved' AND t.urgent) AS urgent,
      count(t.id) FILTER (WHERE t.queue <> 'Solved' AND t.deadline < ${now}) AS overdue
    FROM processes p LEFT JOIN tasks t ON t.tenant_id = p.tenant_id AND t.process_id = p.id AND t.deleted_at IS NULL
    WHERE p.tenant_id = ${tenantId}
    GROUP BY p.id`.execute(t.store.db);
  return new Map(rows.map((r) => [Number(r.process_id), Object.fromEntries(COUNT_KEYS.map((k) => [k, Number(r[k])])) as Counts]));
}

async function overview(): Promise<Map<number, Counts>> {
  const res = await asPerson(t.app, people.viewer, { method: 'GET', url: '/v1/processes' });
  assert.equal(res.statusCode, 200, res.body);
  return new Map(res.json().items.map((p: { id: number; counts: Counts }) => [p.id, p.counts]));
}

async function bruteDepths(): Promise<Record<string, number>> {
  const { rows } = await sql<{ k: string; n: number }>`
    SELECT t.tenant_id || '/' || p.process_key || '/' || t.queue || '/' || t.error AS k, count(*)::int AS n
    FROM tasks t JOIN processes p ON p.tenant_id = t.tenant_id AND p.id = t.process_id
    WHERE t.deleted_at IS NULL GROUP BY 1`.execute(t.store.db);
  return Object.fromEntries(rows.map((r) => [r.k, r.n]));
}

const seen: Partial<Record<keyof Counts, number>> = {};

/** The overview (and the metrics' depths) answer exactly what COUNT(*) answers, right now. */
async function check(label: string): Promise<void> {
  const now = clock.now();
  const [got, want] = [await overview(), await bruteForce(a.tenantId, now, TZ)];
  for (const [id, w] of want) {
    assert.deepEqual(
      Object.fromEntries(COUNT_KEYS.map((k) => [k, got.get(id)?.[k]])),
      w,
      `${label}: process ${id} at ${now.toISOString()}`,
    );
    for (const k of COUNT_KEYS) seen[k] = Math.max(seen[k] ?? 0, w[k]);
  }
  const depths = Object.fromEntries(
    (await queueDepths(t.store.db)).map((d) => [`${d.tenantId}/${d.processKey}/${d.queue}/${d.error}`, d.n]),
  );
  assert.deepEqual(depths, await bruteDepths(), `${label}: queue depths`);
}

const pending = async () => Number((await sql<{ n: string }>`SELECT count(*) AS n FROM queue_count_deltas`.execute(t.store.db)).rows[0].n);

async function taskIds(tenantId: number, where: ReturnType<typeof sql>): Promise<{ id: number; process_id: number }[]> {
  const { rows } = await sql<{ id: number; process_id: number }>`
    SELECT id, process_id FROM tasks WHERE tenant_id = ${tenantId} AND deleted_at IS NULL AND ${where} ORDER BY id`.execute(t.store.db);
  return rows;
}

test('after a long random sequence of Mate and people actions, the counters equal COUNT(*), folded or not', async () => {
  const r = prng(20261125);
  const held: { taskId: number; mate: Mate }[] = [];
  let serial = 0;
  const person = () => r.pick([people.agent, people.admin]);
  const v1 = (p: TestPerson, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) =>
    asPerson(t.app, p, { method, url, payload: payload as never });
  const future = () => new Date(clock.now().getTime() + (1 + r.int(90)) * 60_000).toISOString();
  const past = () => new Date(clock.now().getTime() - (1 + r.int(90)) * 60_000).toISOString();
  const anyTask = async (where = sql`true`) => {
    const rows = await taskIds(a.tenantId, where);
    return rows.length ? r.pick(rows) : null;
  };

  const actions: Record<string, () => Promise<unknown>> = {
    async create() {
      const key = r.pick(['alpha', 'alpha', 'beta']);
      const body: Record<string, unknown> = { ref: `R-${++serial}` };
      if (key === 'alpha' && r.chance(0.7)) body.amount = r.int(1000);
      if (r.chance(0.25)) body.activationDate = future();
      if (r.chance(0.2)) body.urgent = true;
      if (key === 'alpha' && r.chance(0.3)) body.deadline = r.chance(0.5) ? past() : future();
      return mate.create(key, body);
    },
    async createMany() {
      const items = Array.from({ length: 2 + r.int(4) }, () => ({ ref: `M-${++serial}`, amount: r.int(50), urgent: r.chance(0.3) }));
      return mate.post('/api/CreateTasks/alpha', items);
    },
    async otherTenant() {
      return mateB.create('gamma', { n: ++serial });
    },
    async takeNext() {
      const res = await mate.get(`/api/TakeNext/${r.pick(['alpha', 'beta'])}`);
      if (res.status === 200 && res.body.taskId > 0) held.push({ taskId: res.body.taskId, mate });
    },
    async takeMany() {
      const res = await mate.get(`/api/TakeMany/${r.pick(['alpha', 'beta'])}?count=${1 + r.int(4)}`);
      if (res.status === 200 && Array.isArray(res.body)) for (const x of res.body) held.push({ taskId: x.taskId, mate });
    },
    async handBack() {
      if (!held.length) return;
      const h = held.splice(r.int(held.length), 1)[0];
      const kind = r.pick(['Solved', 'Solved', 'Manual', 'Error', 'Retry']);
      const body: Record<string, unknown> = { taskId: h.taskId, reason: `${kind} by the Mate` };
      if (kind === 'Retry' && r.chance(0.4)) body.activationDate = future();
      return h.mate.post(`/api/${kind}`, body);
    },
    async clock() {
      clock.advance(60 * (1 + r.int(25)));
    },
    async recoverLeases() {
      clock.advance(60 * (5 + r.int(15)));
      return recoverExpiredLeases(t.app.services.units, clock.now(), 500);
    },
    async move() {
      const x = await anyTask(sql`queue <> 'Solved'`);
      if (x) return v1(person(), 'POST', `/v1/tasks/${x.id}/move`, { queue: r.pick(['Ready', 'Manual', 'NeedsData', 'Solved']) });
    },
    async completeData() {
      const x = await anyTask(sql`queue = 'NeedsData' AND process_id = ${pids.alpha}`);
      if (x) return v1(person(), 'PATCH', `/v1/tasks/${x.id}`, { data: { amount: 7 } });
    },
    async urgent() {
      const x = await anyTask();
      if (x) return v1(person(), 'PATCH', `/v1/tasks/${x.id}`, { urgent: r.chance(0.5) });
    },
    async approveOrReject() {
      const x = await anyTask(sql`queue = 'NeedsApproval'`);
      if (x) return v1(person(), 'POST', `/v1/tasks/${x.id}/${r.pick(['approve', 'approve', 'reject'])}`, {});
    },
    async clearError() {
      const x = await anyTask(sql`error`);
      if (x) return v1(person(), 'POST', `/v1/tasks/${x.id}/clear-error`, {});
    },
    async unlock() {
      const x = await anyTask(sql`locked_until IS NOT NULL`);
      if (x) return v1(person(), 'POST', `/v1/tasks/${x.id}/unlock`, {});
    },
    async reopen() {
      const x = await anyTask(sql`queue = 'Solved'`);
      if (x) return v1(person(), 'POST', `/v1/tasks/${x.id}/reopen`, { queue: r.pick(['Ready', 'Manual']) });
    },
    async remove() {
      const x = await anyTask();
      if (x) return v1(people.admin, 'DELETE', `/v1/tasks/${x.id}`);
    },
    async bulk() {
      const pid = r.pick([pids.alpha, pids.beta]);
      const body = r.pick([
        { action: 'move', queue: 'Ready', filter: { queue: 'Manual' } },
        { action: 'urgent', urgent: true, filter: { queue: 'Ready' } },
        { action: 'clearError', filter: { error: 'true' } },
      ]);
      const res = await v1(people.admin, 'POST', `/v1/processes/${pid}/tasks/bulk`, body);
      if (res.statusCode === 202) await t.app.services.bulkJobs.wait(a.tenantId, res.json().jobId);
    },
    async import() {
      const rows = Array.from({ length: 3 }, (_, i) => `I-${++serial},${i === 0 ? '' : r.int(100)}`);
      const res = await asPerson(t.app, people.agent, {
        method: 'POST',
        url: `/v1/processes/${pids.alpha}/tasks/import?dryRun=false`,
        headers: { 'content-type': 'text/csv' },
        payload: `ref,amount\n${rows.join('\n')}\n`,
      });
      assert.equal(res.statusCode, 200, res.body);
    },
    async fold() {
      return foldQueueCounts(t.store.db, clock.now());
    },
  };
  // weights: creates and takes dominate, as in a real queue
  const bag = [
    ...Array(6).fill('create'),
    ...Array(2).fill('createMany'),
    'otherTenant',
    ...Array(4).fill('takeNext'),
    ...Array(2).fill('takeMany'),
    ...Array(6).fill('handBack'),
    ...Array(2).fill('clock'),
    'recoverLeases',
    'move',
    'completeData',
    'urgent',
    'approveOrReject',
    'clearError',
    'unlock',
    'reopen',
    'remove',
    'bulk',
    'import',
    'fold',
  ];
  let checkedUnfolded = 0;
  for (let step = 0; step < 400; step++) {
    if (r.chance(0.15)) {
      // a few actions at once (hand-backs batch, takes combine, people act beside them)
      await Promise.all(Array.from({ length: 2 + r.int(4) }, () => actions[r.pick(bag)]()));
    } else await actions[r.pick(bag)]();
    if (step % 10 === 9) {
      if ((await pending()) > 0) checkedUnfolded++;
      await check(`step ${step}`);
    }
  }
  assert.ok(checkedUnfolded > 5, 'some checks ran with deltas not folded yet');
  // the sweeper recovers the remaining leases and folds everything
  clock.advance(3600);
  const swept = await sweepOnce(t.app.services, clock.now());
  assert.ok(swept.countsFolded > 0);
  assert.equal(await pending(), 0);
  await check('after the sweep');
  // a day later: yesterday's Solved are no longer today's, the bins of the past are merged
  clock.advance(24 * 3600);
  await foldQueueCounts(t.store.db, clock.now());
  await check('a day later, folded');
  const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM queue_counts WHERE tenant_id = ${a.tenantId}`.execute(t.store.db);
  assert.ok(Number(rows[0].n) <= 2 * 9 + 2 * 96 * 4, `${rows[0].n} counter rows: past bins were merged`);
  // the sequence reached every count at least once, so none was compared only at zero
  for (const k of COUNT_KEYS) assert.ok((seen[k] ?? 0) > 0, `${k} was never above zero`);
});

test('two folds at once, beside writers: every delta is counted exactly once', async () => {
  for (let i = 0; i < 30; i++) await mate.create('alpha', { ref: `F-${i}`, amount: i, urgent: i % 3 === 0 });
  for (let i = 0; i < 10; i++) await mate.takeNext('alpha');
  const before = await pending();
  assert.ok(before > 0);
  const [f1, , f2] = await Promise.all([
    foldQueueCounts(t.store.db, clock.now()),
    mate.create('alpha', { ref: 'F-during', amount: 1 }),
    foldQueueCounts(t.store.db, clock.now()),
    mate.takeNext('alpha'),
  ]);
  assert.ok(f1 + f2 > 0, 'one of them folded');
  await check('after two concurrent folds');
  await foldQueueCounts(t.store.db, clock.now());
  assert.equal(await pending(), 0);
  await check('after a last fold');
});

test('a task written at the very moment of its deadline is overdue from the next instant, not before', async () => {
  // whole seconds: the Mate API reads deadlines to the second
  clock.set(new Date(Math.ceil(clock.now().getTime() / 1000) * 1000 + 7 * 60_000));
  const at = clock.now().toISOString();
  await mate.create('alpha', { ref: 'D-now', amount: 1, deadline: at });
  await check('written at its deadline');
  clock.advance(1);
  await check('a second past its deadline');
  await foldQueueCounts(t.store.db, clock.now());
  await check('folded');
});
