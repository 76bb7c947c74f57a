/**
 * Security checks for every Mate API route, under /api and /apimate (STYLE principle 12): no
 * token, a bad token and a person's token are refused; a Mate of tenant B naming tenant A's
 * process, task or run gets exactly the answer it gets for one that does not exist; and nothing
 * of tenant A changes.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { Mate } from './helpers/mate.js';
import { snapshot } from './helpers/snapshot.js';
import { queueIds, randomId } from './helpers/ids.js';
import { ManualClock } from '../src/lib/clock.js';
import { createProcess } from '../src/processes/service.js';
import { signClaims, CUSTOMER_KEY_CLAIM, USER_TYPE_CLAIM } from '../src/auth/tokens.js';

/** What a request names: a process key, a task id, a run id. */
interface Target {
  pk: string;
  taskId: number;
  runId: number;
}

interface RouteCase {
  method: 'GET' | 'POST';
  /** the path after the prefix */
  path: (x: Target) => string;
  /** the route as registered, for the completeness check */
  route: string;
  body?: (x: Target) => unknown;
  /** what tenant B gets for tenant A's (or a nonexistent) target */
  expect: { status: number; code: string };
}

const NOT_FOUND_PROCESS = { status: 404, code: 'process_not_found' };
const NOT_FOUND_TASK = { status: 200, code: 'task_not_found' };

const processRoute = (method: 'GET' | 'POST', name: string, body?: (x: Target) => unknown, query = ''): RouteCase => ({
  method,
  route: `/${name}/{processKey}`,
  path: (x) => `/${name}/${encodeURIComponent(x.pk)}${query}`,
  body,
  expect: NOT_FOUND_PROCESS,
});
const taskRoute = (
  name: string,
  body: (x: Target) => unknown = (x) => ({ taskId: x.taskId, reason: 'stolen', comment: 'by B' }),
): RouteCase => ({
  method: 'POST',
  route: `/${name}`,
  path: () => `/${name}`,
  body,
  expect: NOT_FOUND_TASK,
});

/** Every route of the Mate API; the first test checks the list against the registered routes. */
const ROUTES: Record<string, RouteCase> = {
  OkToRun: processRoute('GET', 'OkToRun'),
  StartOrGetRun: processRoute('GET', 'StartOrGetRun'),
  StartRun: processRoute('GET', 'StartRun'),
  GetRules: processRoute('GET', 'GetRules'),
  TakeNext: processRoute('GET', 'TakeNext'),
  TakeMany: processRoute('GET', 'TakeMany', undefined, '?count=5'),
  CreateTask: processRoute('POST', 'CreateTask', () => ({ coreSystemKey: 'injected' })),
  CreateTasks: processRoute('POST', 'CreateTasks', () => [{ coreSystemKey: 'injected' }]),
  CreateAndTakeTask: processRoute('POST', 'CreateAndTakeTask', () => ({ coreSystemKey: 'injected' })),
  FinishRun: {
    method: 'POST',
    route: '/FinishRun',
    path: () => '/FinishRun',
    body: (x) => ({ runId: x.runId, overwriteEntries: 5 }),
    expect: { status: 200, code: 'run_not_found' },
  },
  Failure: {
    method: 'POST',
    route: '/Failure',
    path: () => '/Failure',
    body: (x) => ({ processKey: x.pk, message: 'set by B' }),
    expect: NOT_FOUND_PROCESS,
  },
  UpdateTask: taskRoute('UpdateTask', (x) => ({ taskId: x.taskId, coreSystemKey: 'stolen', comment: 'by B' })),
  Solved: taskRoute('Solved'),
  Manual: taskRoute('Manual'),
  Error: taskRoute('Error'),
  Retry: taskRoute('Retry'),
  SolvedAsync: taskRoute('SolvedAsync'),
  ManualAsync: taskRoute('ManualAsync'),
  ErrorAsync: taskRoute('ErrorAsync'),
  RetryAsync: taskRoute('RetryAsync'),
  Return: {
    method: 'POST',
    route: '/Return',
    path: () => '/Return',
    body: (x) => [
      { taskId: x.taskId, action: 'Solved' },
      { taskId: x.taskId, action: 'Retry' },
    ],
    expect: { status: 200, code: 'items_failed' },
  },
  ExtendLock: taskRoute('ExtendLock', (x) => ({ taskId: x.taskId, seconds: 86_400 })),
};
const PREFIXES = ['/api', '/apimate'];

const clock = new ManualClock('2026-03-02T09:00:00.000Z');
let t: TestApp;
let tenantA: SeededTenant;
let tenantB: SeededTenant;
let mateA: Mate;
let mateB: Mate;
/** tenant A's process, a task A holds, A's open run */
let targetA: Target;
/** tenant B's answers for targetA's key and ids while they did not exist yet: requestId stripped */
const baseline = new Map<string, string>();

async function send(token: string | null, prefix: string, c: RouteCase, x: Target) {
  const body = c.body?.(x);
  const res = await t.app.inject({
    method: c.method,
    url: prefix + c.path(x),
    headers: {
      ...(token === null ? {} : { authorization: `Bearer ${token}` }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    payload: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.statusCode, headers: res.headers, body: res.json(), text: res.body };
}

const strip = (r: { text: string; body: any }) => r.text.replaceAll(String(r.body.requestId), '<requestId>');

before(async () => {
  t = await testApp({ clock });
  tenantA = await seedTenant(t.store, 'sec-a');
  tenantB = await seedTenant(t.store, 'sec-b', { processes: [{ processKey: 'OwnB', fields: [{ name: 'coreSystemKey', type: 'text' }] }] });
  mateA = await Mate.signIn(t.app, tenantA);
  mateB = await Mate.signIn(t.app, tenantB);
  // B's answers naming a key, a task and a run that exist nowhere yet…
  // (ids are random: the ones A's task and run will get are chosen here, test/helpers/ids.ts)
  targetA = { pk: 'SecretA', taskId: randomId(), runId: randomId() };
  for (const prefix of PREFIXES) {
    for (const [name, c] of Object.entries(ROUTES)) baseline.set(prefix + name, strip(await send(mateB.token, prefix, c, targetA)));
  }
  // …which then become tenant A's
  await createProcess(t.store.db, tenantA.tenantId, { processKey: 'SecretA', fields: [{ name: 'coreSystemKey', type: 'text' }] });
  await queueIds(t.store.db, [targetA.taskId]);
  assert.equal(await mateA.create('SecretA', { coreSystemKey: 'a-1' }), targetA.taskId);
  await mateA.create('SecretA', { coreSystemKey: 'a-2' });
  await queueIds(t.store.db, [targetA.runId]);
  const taken = await mateA.takeNext('SecretA');
  assert.deepEqual([taken.taskId, taken.runId], [targetA.taskId, targetA.runId]);
  assert.equal((await mateA.post('/api/Failure', { processKey: 'SecretA', message: 'A failed' })).body.succeeded, true);
});
after(() => t.close());

test('the route list covers every Mate API route', () => {
  const paths = Object.entries((t.app.swagger() as any).paths as Record<string, Record<string, unknown>>)
    .filter(([p]) => p.startsWith('/api/'))
    .flatMap(([p, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${p.slice('/api'.length)}`))
    .sort();
  assert.deepEqual(
    Object.values(ROUTES)
      .map((c) => `${c.method} ${c.route}`)
      .sort(),
    paths,
  );
  for (const c of Object.values(ROUTES))
    assert.ok(t.app.hasRoute({ method: c.method, url: `/apimate${c.route.replace('{processKey}', ':processKey')}` }), c.route);
});

/** The shared helper: every check on one route under one prefix. */
async function checkRoute(prefix: string, name: string, c: RouteCase): Promise<void> {
  const where = `${c.method} ${prefix}${c.path(targetA)}`;
  const stateA = await snapshot(t.store.db, tenantA.tenantId);

  // no token: 401, a challenge without error=
  const none = await send(null, prefix, c, targetA);
  assert.equal(none.status, 401, `${where}: ${none.text}`);
  assert.equal(none.body.code, 'invalid_token');
  assert.equal(none.headers['www-authenticate'], 'Bearer realm="apimate"', where);

  // bad tokens: garbage, A's token with one signature byte changed, B's token claiming tenant A
  const [h, p, s] = mateB.token.split('.');
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
  const forged = `${h}.${Buffer.from(JSON.stringify({ ...claims, [CUSTOMER_KEY_CLAIM]: tenantA.clientId, sub: String(tenantA.mateId) })).toString('base64url')}.${s}`;
  const flipped = mateA.token.slice(0, -2) + (mateA.token.at(-2) === 'A' ? 'B' : 'A') + mateA.token.at(-1);
  for (const bad of ['garbage', flipped, forged]) {
    const r = await send(bad, prefix, c, targetA);
    assert.equal(r.status, 401, `${where}: ${r.text}`);
    assert.equal(r.body.code, 'invalid_token');
    assert.equal(r.headers['www-authenticate'], 'Bearer realm="apimate", error="invalid_token"', where);
  }

  // wrong role: a valid token that is not a Mate's
  const now = Math.floor(clock.now().getTime() / 1000);
  const person = await signClaims(t.app.services.auth.keys, {
    ...claims,
    iat: now,
    exp: now + 3600,
    [CUSTOMER_KEY_CLAIM]: tenantA.clientId,
    sub: String(tenantA.mateId),
    [USER_TYPE_CLAIM]: 'User',
  });
  const role = await send(person, prefix, c, targetA);
  assert.equal(role.status, 403, `${where}: ${role.text}`);
  assert.equal(role.body.code, 'insufficient_scope');

  // tenant B naming A's process, task or run: the answer for one that does not exist
  const b = await send(mateB.token, prefix, c, targetA);
  assert.equal(b.status, c.expect.status, `${where}: ${b.text}`);
  assert.equal(b.body.code, c.expect.code, `${where}: ${b.text}`);
  if (name === 'Return')
    assert.deepEqual(
      b.body.results.map((r: any) => r.code),
      ['task_not_found', 'task_not_found'],
    );
  assert.equal(strip(b), baseline.get(prefix + name), `${where}: the same answer as for a nonexistent target`);

  // A's key in another spelling is still A's, and still not found for B
  if (c.route.includes('{processKey}')) {
    const lower = await send(mateB.token, prefix, c, { ...targetA, pk: targetA.pk.toLowerCase() });
    assert.equal(lower.status, 404, `${where}: ${lower.text}`);
  }

  assert.deepEqual(await snapshot(t.store.db, tenantA.tenantId), stateA, `${where}: nothing of tenant A changed`);
}

for (const prefix of PREFIXES) {
  for (const [name, c] of Object.entries(ROUTES)) {
    test(`${prefix}/${name}: no token, bad token, wrong role → refused; another tenant's target = a nonexistent one`, () =>
      checkRoute(prefix, name, c));
  }
}

test('A still works on its own targets after all of that (the checks above did not just miss)', async () => {
  const run = await mateA.get('/api/StartOrGetRun/SecretA');
  assert.equal(run.body.runId, targetA.runId);
  const ext = await mateA.post('/apimate/ExtendLock', { taskId: targetA.taskId, seconds: 60 });
  assert.equal(ext.body.succeeded, true, JSON.stringify(ext.body));
  const solved = await mateA.post('/api/Solved', { taskId: targetA.taskId });
  assert.equal(solved.body.succeeded, true, JSON.stringify(solved.body));
  const { rows } = await sql<{
    failure_message: string | null;
  }>`SELECT failure_message FROM processes WHERE tenant_id = ${tenantA.tenantId} AND process_key = 'SecretA'`.execute(t.store.db);
  assert.equal(rows[0].failure_message, null, "A's hand-back cleared the Failure state B could not touch");
  // B's own process is unaffected by A
  assert.equal((await mateB.get('/api/TakeNext/OwnB')).body.code, 'queue_empty');
});
