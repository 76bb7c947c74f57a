/**
 * @queuemate/client against a real server on a real port (both stores): every MateClient method,
 * refusals as values or thrown, errors with the request id, the token (one request for fifty calls,
 * renewal at its renewal point on an injected clock, once more after a 401, never shown), retries
 * (a create whose answer or connection is lost makes one task; a take is never repeated), timeouts
 * and signals, createTasksInChunks and the people's client.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import util from 'node:util';
import { sql } from 'kysely';
import { ManualClock } from '../src/lib/clock.js';
import { clientServer, countingFetch, tasksOf, type ClientServer } from './helpers/client-server.js';
import { personWithToken } from './helpers/people.js';
import { recordSecret } from './helpers/log-sink.js';
import { createTasksInChunks, isTask, MateClient, PeopleClient, QueuemateError, type DummyTask, type Task } from '../client/src/index.js';

interface Invoice {
  invoiceNo: string;
  amount: number;
  dueDate: string;
  paid: boolean;
}

const serverClock = new ManualClock(new Date());
let s: ClientServer;
let client: MateClient;

before(async () => {
  s = await clientServer(
    'cl',
    [
      {
        processKey: 'Invoices',
        fields: [
          { name: 'invoiceNo', type: 'text', isKey: true, unique: true },
          { name: 'amount', type: 'number' },
          { name: 'dueDate', type: 'date' },
          { name: 'paid', type: 'boolean' },
        ],
        rules: [
          { name: 'limit', type: 'number', value: 250.5 },
          { name: 'countries', type: 'list', value: ['DK', 'SE'] },
        ],
      },
      { processKey: 'allocator', tasksEnabled: false },
      { processKey: 'bulk', fields: [{ name: 'n', type: 'integer', isKey: true, unique: true }] },
      { processKey: 'lost', fields: [{ name: 'n', type: 'integer' }] },
    ],
    { clock: serverClock },
  );
  client = s.client();
});
after(() => s.close());

test('every Mate API method, typed by the process', async () => {
  const invoices = client.process<Invoice>('invoices');
  const ok = await invoices.okToRun();
  assert.deepEqual(
    { ...ok, requestId: typeof ok.requestId },
    { gateOpen: true, notBlockedDate: true, stoppedByErrors: false, tasksAvailable: false, okToRun: false, requestId: 'string' },
  );

  const rules = await invoices.getRules<{ limit: number; countries: string[] }>();
  assert.equal(rules.processKey, 'Invoices', 'answers spell the key as defined');
  assert.equal(rules.limit, 250.5);
  assert.deepEqual(rules.countries, ['DK', 'SE']);

  const created = await invoices.createTask({ invoiceNo: 'INV-1', amount: 1234.5, dueDate: new Date('2026-03-01T12:00:00Z'), paid: false });
  assert.equal(created.succeeded, true, JSON.stringify(created));
  assert.equal(created.queue, 'Ready');
  const many = await invoices.createTasks([
    { invoiceNo: 'INV-2', amount: 2 },
    { invoiceNo: 'INV-3', amount: 3, comment: 'third' },
    { invoiceNo: 'INV-4', amount: 4, urgent: false },
    { invoiceNo: 'INV-5', amount: 5 },
    { invoiceNo: 'INV-6', amount: 6 },
  ]);
  assert.equal(many.taskIds.length, 5);

  const run = await invoices.startOrGetRun();
  assert.ok(run.runId > 0);
  assert.equal(run.processKey, 'Invoices');

  const first = await invoices.takeNext();
  assert.ok(isTask(first), JSON.stringify(first));
  assert.equal(first.taskId, created.taskId);
  assert.equal(first.amount, 1234.5, 'a number comes back a number');
  assert.equal(first.dueDate, '2026-03-01');
  assert.equal(first.paid, false);
  assert.equal(first.runId, run.runId);

  const updated = await invoices.updateTask(first.taskId, { paid: true, comment: 'paid by card' });
  assert.equal(updated.succeeded, true, updated.message);
  const extended = await invoices.extendLock(first.taskId, 600);
  assert.equal(extended.succeeded, true);
  assert.match(extended.lockedUntil ?? '', /^\d{4}-\d{2}-\d{2}T/);

  // the combined call: hand back and take the next in one request
  const solved = await invoices.solved({ taskId: first.taskId, reason: 'booked', overwriteEntries: 3 }, { takeNext: true });
  assert.equal(solved.succeeded, true);
  assert.equal(solved.queue, 'Solved');
  assert.equal(solved.error, false);
  assert.ok(solved.next && isTask(solved.next), JSON.stringify(solved.next));
  const second: Task<Invoice> = solved.next;
  assert.equal(second.invoiceNo, 'INV-2');

  const manual = await client.manual({ taskId: second.taskId, reason: 'check', comment: 'needs a look' });
  assert.deepEqual([manual.succeeded, manual.queue, manual.error, manual.next], [true, 'Manual', false, undefined]);

  const [third, fourth] = await invoices.takeMany(2);
  assert.deepEqual([third.invoiceNo, fourth.invoiceNo], ['INV-3', 'INV-4']);
  const errored = await client.error({ taskId: third.taskId, reason: 'bad data' });
  assert.deepEqual([errored.queue, errored.error], ['Manual', true]);
  const retried = await client.retry({ taskId: fourth.taskId, activationDate: new Date(serverClock.now().getTime() + 86_400_000) });
  assert.deepEqual([retried.succeeded, retried.queue, retried.error], [true, 'Ready', false]);

  const [fifth, sixth] = await invoices.takeMany();
  const returned = await client.returnTasks([
    { taskId: fifth.taskId, action: 'Solved', reason: 'done' },
    { taskId: sixth.taskId, action: 'Retry', activationDate: new Date(serverClock.now().getTime() + 86_400_000).toISOString() },
  ]);
  assert.equal(returned.succeeded, true, JSON.stringify(returned));
  assert.deepEqual(
    returned.results.map((r) => r.succeeded),
    [true, true],
  );

  const empty = await invoices.takeNext();
  assert.equal(isTask(empty), false);
  assert.equal((empty as DummyTask).code, 'queue_empty');
  assert.equal(empty.taskId, -1);
  assert.deepEqual(await invoices.takeMany(5), []);

  const taken = await invoices.createAndTakeTask({ invoiceNo: 'INV-7', amount: 7 });
  assert.ok(isTask(taken));
  assert.equal(taken.amount, 7);
  await invoices.solved({ taskId: taken.taskId });

  const failure = await client.failure('Invoices', new Error('the robot broke'));
  assert.equal(failure.succeeded, true);

  // FinishRun on a process without tasks, then again: a refusal comes back as a value
  const allocatorRun = await client.startOrGetRun('allocator');
  const finished = await client.finishRun({ runId: allocatorRun.runId, overwriteEntries: 6 });
  assert.equal(finished.succeeded, true, finished.message);
  const again = await client.finishRun({ runId: allocatorRun.runId });
  assert.deepEqual([again.succeeded, again.code], [false, 'run_finished']);

  const rows = await tasksOf(s.t, s.tenant.tenantId, await s.processId('Invoices'));
  rows.sort((a, b) => String(a.data.invoiceNo).localeCompare(String(b.data.invoiceNo)));
  assert.deepEqual(
    rows.map((r) => [r.data.invoiceNo, r.queue, r.error]),
    [
      ['INV-1', 'Solved', false],
      ['INV-2', 'Manual', false],
      ['INV-3', 'Manual', true],
      ['INV-4', 'Ready', false],
      ['INV-5', 'Solved', false],
      ['INV-6', 'Ready', false],
      ['INV-7', 'Solved', false],
    ],
  );
  assert.equal(rows[0].data.paid, true, 'UpdateTask changed the field');
});

test('refusals are values, or thrown with throwOnRefusal; HTTP errors throw with code and request id', async () => {
  const invoices = client.process<Invoice>('Invoices');
  const dup = await invoices.createTask({ invoiceNo: 'INV-2' });
  assert.deepEqual([dup.succeeded, dup.code, dup.taskId], [false, 'duplicate_key', -1]);
  assert.ok(dup.existingTaskId! > 0);

  const strict = s.client({ throwOnRefusal: true });
  const thrown = await strict.createTask('Invoices', { invoiceNo: 'INV-2' }).catch((e: unknown) => e);
  assert.ok(thrown instanceof QueuemateError);
  assert.deepEqual([thrown.status, thrown.code], [200, 'duplicate_key']);
  assert.match(thrown.requestId ?? '', /./);
  const perCall = await client.solved({ taskId: 999_999 }, { throwOnRefusal: true }).catch((e: unknown) => e);
  assert.ok(perCall instanceof QueuemateError && perCall.code === 'task_not_found');
  const notTaken = await strict.createAndTakeTask('Invoices', { invoiceNo: 'INV-2' }).catch((e: unknown) => e);
  assert.ok(notTaken instanceof QueuemateError && notTaken.code === 'duplicate_key');

  const missing = await client.takeNext('no-such-process').catch((e: unknown) => e);
  assert.ok(missing instanceof QueuemateError);
  assert.deepEqual([missing.status, missing.code], [404, 'process_not_found']);
  assert.match(missing.requestId ?? '', /./, 'the X-Request-Id of the answer');

  // a decimal comma is refused by the server (docs/mate-api.md §3): the field is named
  const bad = await client.createTask('Invoices', { invoiceNo: 'X', amount: '12,5' }).catch((e: unknown) => e);
  assert.ok(bad instanceof QueuemateError);
  assert.deepEqual([bad.status, bad.code, bad.errors[0]?.field], [400, 'invalid_field', 'amount']);

  // NaN would be sent as null (absent) by JSON.stringify: the client refuses it before sending
  await assert.rejects(client.createTask('Invoices', { invoiceNo: 'X', amount: Number.NaN }), TypeError);

  // compile-time: a field's value has its type (npm run lint checks these lines)
  if (Math.random() > 2) {
    // @ts-expect-error amount is a number
    await invoices.createTask({ invoiceNo: 'Y', amount: '12.5' });
    // @ts-expect-error no such field
    await invoices.updateTask(1, { amout: 1 });
  }
});

test('dates go out as ISO 8601 and numbers as JSON numbers, whatever the locale', async () => {
  const bodies: string[] = [];
  const c = s.client({
    fetch: (input, init) => {
      if (typeof init?.body === 'string' && !init.body.startsWith('grant_type')) bodies.push(init.body);
      return fetch(input, init);
    },
  });
  const r = await c.process<Invoice>('Invoices').createTask({
    invoiceNo: 'LOC-1',
    amount: 1234567.891,
    dueDate: new Date('2026-04-30T22:00:00.000Z'),
    activationDate: new Date('2020-01-01T00:00:00.000Z'),
  });
  assert.equal(r.succeeded, true, r.message);
  assert.equal(
    bodies[0],
    '{"invoiceNo":"LOC-1","amount":1234567.891,"dueDate":"2026-04-30T22:00:00.000Z","activationDate":"2020-01-01T00:00:00.000Z"}',
  );
  assert.equal((1234567.891).toLocaleString('de-DE'), '1.234.567,891', 'a locale that writes numbers otherwise');
  const { rows } = await sql<{ data: Invoice }>`SELECT data FROM tasks WHERE id = ${r.taskId}`.execute(s.t.store.db);
  assert.equal(rows[0].data.amount, 1234567.891);
});

test('one token request for fifty concurrent calls', async () => {
  const counted = countingFetch();
  const c = s.client({ fetch: counted.fetch });
  const answers = await Promise.all(Array.from({ length: 50 }, () => c.okToRun('Invoices')));
  assert.equal(answers.length, 50);
  assert.equal(counted.count(/^\/connect\/token$/), 1);
  assert.equal(counted.count(/^\/api\/OkToRun\//), 50);
});

test('the token is renewed when the clock passes its renewal point (5 minutes before expiry)', async () => {
  const clock = new ManualClock(new Date());
  const counted = countingFetch();
  const c = s.client({ fetch: counted.fetch, clock });
  await c.okToRun('Invoices');
  clock.advance(54 * 60);
  await c.okToRun('Invoices');
  assert.equal(counted.count(/token/), 1, '6 minutes left: the same token');
  clock.advance(60 + 1);
  await Promise.all([c.okToRun('Invoices'), c.okToRun('Invoices'), c.getRules('Invoices')]);
  assert.equal(counted.count(/token/), 2, 'past the renewal point: one new token for the calls after it');
  clock.advance(30 * 60);
  await c.okToRun('Invoices');
  assert.equal(counted.count(/token/), 2, 'the new token lives its own hour');
});

test('a 401 signs in once more and repeats the call; a second 401 throws', async () => {
  const counted = countingFetch();
  const c = s.client({ fetch: counted.fetch });
  await c.okToRun('Invoices');
  // the server's clock passes the token's expiry; the client's does not: the server answers 401
  serverClock.advance(2 * 3600);
  const r = await c.okToRun('Invoices');
  assert.equal(typeof r.okToRun, 'boolean');
  assert.equal(counted.count(/token/), 2);
  assert.equal(counted.count(/OkToRun/), 3, 'the refused call was sent once more');

  // every answer a 401: one new sign-in, then the error
  const always401 = countingFetch();
  const d = s.client({
    fetch: (input, init) => {
      always401.fetch(input, init).catch(() => {});
      return String(input).includes('/connect/token')
        ? fetch(input, init)
        : Promise.resolve(
            new Response('{"succeeded":false,"message":"The token expired","code":"invalid_token","requestId":"r1"}', {
              status: 401,
              headers: { 'content-type': 'application/json', 'x-request-id': 'r1' },
            }),
          );
    },
  });
  const err = await d.okToRun('Invoices').catch((e: unknown) => e);
  assert.ok(err instanceof QueuemateError);
  assert.deepEqual([err.status, err.code, err.requestId], [401, 'invalid_token', 'r1']);
});

test('credentials and tokens are never shown: not by inspect, JSON or a refused sign-in', async () => {
  let token = '';
  const c = s.client({
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      if (String(input).endsWith('/connect/token')) token = (await res.clone().json()).access_token;
      return res;
    },
  });
  await c.okToRun('Invoices');
  recordSecret(token);
  assert.ok(token.length > 20);
  const shown = [util.inspect(c, { depth: 10, showHidden: true }), JSON.stringify(c), String(c)].join('\n');
  for (const secret of [token, s.tenant.apiSecret, s.tenant.matePassword]) assert.ok(!shown.includes(secret), 'a secret is shown');

  const wrong = s.client({ password: 'wrong-password-123' });
  const err = await wrong.okToRun('Invoices').catch((e: unknown) => e);
  assert.ok(err instanceof QueuemateError);
  assert.deepEqual([err.status, err.code], [400, 'invalid_grant']);
  const text = [err.message, err.stack, util.inspect(err, { depth: 10 }), JSON.stringify(err.body)].join('\n');
  assert.ok(!text.includes('wrong-password-123') && !text.includes(s.tenant.apiSecret), text);
});

/**
 * A TCP proxy in front of the server that does something to the first connection carrying a
 * request to `path`: `drop-request` closes it before the request reaches the server,
 * `drop-answer` lets the request through and closes it instead of passing the answer back.
 */
async function faultProxy(target: string, path: string, fault: 'drop-request' | 'drop-answer') {
  const { hostname, port } = new URL(target);
  let faults = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((downstream) => {
    const upstream = net.connect(Number(port), hostname);
    sockets.add(downstream).add(upstream);
    let faulty = false;
    downstream.on('data', (chunk) => {
      if (!faulty && faults === 0 && chunk.toString('latin1').includes(` ${path}`)) {
        faults++;
        faulty = true;
        if (fault === 'drop-request') {
          downstream.destroy();
          upstream.destroy();
          return;
        }
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (faulty) {
        // the server answered (and committed): the answer is lost on the way back
        downstream.destroy();
        upstream.destroy();
        return;
      }
      downstream.write(chunk);
    });
    const end = () => {
      downstream.destroy();
      upstream.destroy();
    };
    downstream.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    faults: () => faults,
    close: () =>
      new Promise<void>((resolve) => {
        for (const x of sockets) x.destroy();
        server.close(() => resolve());
      }),
  };
}

for (const fault of ['drop-request', 'drop-answer'] as const) {
  test(`a create whose ${fault === 'drop-request' ? 'connection is dropped' : 'answer is lost'} is sent again and makes exactly one task`, async () => {
    const proxy = await faultProxy(s.base, '/api/CreateTask/', fault);
    try {
      const counted = countingFetch();
      const c = s.client({ baseUrl: proxy.url, authUrl: s.base, fetch: counted.fetch });
      const key = `once-${fault}`;
      const r = await c.createTask('lost', { n: 1, comment: key });
      assert.equal(r.succeeded, true, JSON.stringify(r));
      assert.equal(proxy.faults(), 1);
      assert.equal(counted.count(/CreateTask/), 2, 'sent twice');
      const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM task_comments WHERE body = ${key}`.execute(s.t.store.db);
      assert.equal(rows[0].n, 1, 'one task');

      const many = await c.createTasks('lost', [{ n: 2 }, { n: 3 }]);
      assert.equal(many.taskIds.length, 2);
    } finally {
      await proxy.close();
    }
  });
}

test('a take whose answer is lost is not repeated (it would lock a second task)', async () => {
  await client.createTask('lost', { n: 10 });
  const proxy = await faultProxy(s.base, '/api/TakeNext/', 'drop-answer');
  try {
    const counted = countingFetch();
    const c = s.client({ baseUrl: proxy.url, authUrl: s.base, fetch: counted.fetch });
    const err = await c.takeNext('lost').catch((e: unknown) => e);
    assert.ok(err instanceof QueuemateError);
    assert.deepEqual([err.status, err.code], [0, 'network_error']);
    assert.equal(counted.count(/TakeNext/), 1);
  } finally {
    await proxy.close();
  }
});

test('429, 503 with Retry-After and 5xx are retried for reads and creates; a hand-back is not repeated after a 5xx', async () => {
  const answers = [
    { status: 503, body: '{"code":"unavailable","message":"overloaded"}', retryAfter: '0' },
    { status: 429, body: '{"code":"rate_limited","message":"slow down"}', retryAfter: '0' },
    { status: 502, body: 'bad gateway' },
  ];
  let apiCalls = 0;
  const flaky: typeof fetch = (input, init) => {
    if (String(input).includes('/api/') && apiCalls++ < answers.length) {
      const a = answers[apiCalls - 1];
      return Promise.resolve(new Response(a.body, { status: a.status, headers: a.retryAfter ? { 'retry-after': a.retryAfter } : {} }));
    }
    return fetch(input, init);
  };
  const c = s.client({ fetch: flaky, retry: { baseDelayMs: 1 } });
  const ok = await c.okToRun('Invoices');
  assert.equal(typeof ok.okToRun, 'boolean');
  assert.equal(apiCalls, 4, 'three faults, then the answer');

  apiCalls = 0;
  const created = await c.createTask('lost', { n: 20 });
  assert.equal(created.succeeded, true);
  assert.equal(apiCalls, 4);

  apiCalls = 1; // only the 429 and the 502 are left
  const err = await c.solved({ taskId: 1 }).catch((e: unknown) => e);
  assert.ok(err instanceof QueuemateError);
  assert.deepEqual([err.status, err.code], [502, 'http_502'], 'the 429 was retried, the 502 was not');
});

test('a timeout on every call, and the caller’s AbortSignal', async () => {
  let attempts = 0;
  const hanging: typeof fetch = (input, init) => {
    if (!String(input).includes('/api/')) return fetch(input, init);
    attempts++;
    return new Promise((_, reject) => init?.signal?.addEventListener('abort', () => reject(init.signal!.reason)));
  };
  const c = s.client({ fetch: hanging, retry: { attempts: 3, baseDelayMs: 1 } });
  const read = await c.okToRun('Invoices', { timeoutMs: 30 }).catch((e: unknown) => e);
  assert.ok(read instanceof QueuemateError);
  assert.equal(read.code, 'timeout');
  assert.equal(attempts, 3, 'a read is tried again after a timeout');
  attempts = 0;
  const take = await c.takeNext('Invoices', { timeoutMs: 30 }).catch((e: unknown) => e);
  assert.ok(take instanceof QueuemateError && take.code === 'timeout');
  assert.equal(attempts, 1, 'a take is not');

  const stopped = s.client({ fetch: hanging, timeoutMs: 60_000 });
  const ctl = new AbortController();
  setTimeout(() => ctl.abort(new Error('stop now')), 30);
  const aborted = await stopped.getRules('Invoices', { signal: ctl.signal }).catch((e: unknown) => e);
  assert.ok(aborted instanceof Error);
  assert.equal(aborted.message, 'stop now', 'the signal’s reason');
  await assert.rejects(client.okToRun('Invoices', { signal: AbortSignal.abort() }), { name: 'AbortError' });
});

test('createTasksInChunks: chunked, with progress, idempotent per run key, a refused chunk located in the whole list', async () => {
  const items = Array.from({ length: 2500 }, (_, i) => ({ n: i }));
  const progress: number[] = [];
  const counted = countingFetch();
  const c = s.client({ fetch: counted.fetch });
  const r = await createTasksInChunks(c, 'bulk', items, { idempotencyKey: 'run-1', onProgress: (p) => progress.push(p.created) });
  assert.equal(r.taskIds.length, 2500);
  assert.deepEqual(progress, [1000, 2000, 2500]);
  assert.equal(counted.count(/CreateTasks/), 3);

  // the same run again (a restarted allocator): replayed, nothing created twice
  const again = await createTasksInChunks(c, 'bulk', items, { idempotencyKey: 'run-1' });
  assert.deepEqual(again.taskIds, r.taskIds);
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM tasks WHERE process_id = ${await s.processId('bulk')}`.execute(
    s.t.store.db,
  );
  assert.equal(rows[0].n, 2500);

  const clash = [...Array.from({ length: 5 }, (_, i) => ({ n: 10_000 + i })), { n: 7 }];
  const err = await createTasksInChunks(c, 'bulk', clash, { chunkSize: 4 }).catch((e: unknown) => e);
  assert.ok(err instanceof QueuemateError);
  assert.equal(err.code, 'duplicate_key');
  assert.match(err.message, /Chunk 2 of 2 .*4 tasks were created before it/);
});

test("the people's client: a personal access token, typed paths, parameters and answers", async () => {
  const admin = await personWithToken(s.t.store, s.tenant.tenantId, 'admin', 'script-admin');
  const people = new PeopleClient({ baseUrl: s.base, token: admin.token });
  const { items } = await people.get('/v1/processes');
  const proc = items.find((p) => p.key === 'Invoices');
  assert.ok(proc);
  assert.equal(typeof proc.counts.ready, 'number');

  const page = await people.get('/v1/processes/{id}/tasks', { path: { id: proc.id }, query: { queue: 'Ready', limit: '2' } });
  assert.equal(page.items.length, 2);
  assert.ok(page.items.every((t) => t.queue === 'Ready'));
  const moved = await people.post('/v1/tasks/{id}/move', {
    path: { id: page.items[0].id },
    body: { queue: 'Manual', comment: 'by script' },
  });
  assert.ok(moved);
  const after = await people.get('/v1/tasks/{id}', { path: { id: page.items[0].id } });
  assert.equal(after.queue, 'Manual');

  const err = await people.get('/v1/tasks/{id}', { path: { id: 987_654_321 } }).catch((e: unknown) => e);
  assert.ok(err instanceof QueuemateError);
  assert.deepEqual([err.status, err.code], [404, 'task_not_found']);
  assert.match(err.requestId ?? '', /./);

  if (Math.random() > 2) {
    // @ts-expect-error the path parameter is required
    await people.get('/v1/tasks/{id}');
    // @ts-expect-error not a queue
    await people.post('/v1/tasks/{id}/move', { path: { id: 1 }, body: { queue: 'Nowhere' } });
  }
});

test('the READMEs show the worker example as it is in client/examples/worker.ts', () => {
  const example = fs.readFileSync('client/examples/worker.ts', 'utf8').split('\n').slice(1).join('\n').trim();
  for (const [file, heading] of [
    ['README.md', '## Robots in TypeScript'],
    ['client/README.md', '## A worker robot'],
  ]) {
    const text = fs.readFileSync(file, 'utf8');
    const section = text.slice(text.indexOf(heading));
    const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1].trim();
    assert.equal(block, example, `${file}: the worker under "${heading}"`);
  }
});

test('a lock extended past the take’s lease (UpdateTask, ExtendLock) still allows the hand-back', async () => {
  const lost = client.process<{ n: number }>('lost');
  for (const extend of ['UpdateTask', 'ExtendLock'] as const) {
    await lost.createTask({ n: 100 });
    const task = await lost.takeNext();
    assert.ok(isTask(task));
    serverClock.advance(3000); // of the 3600 s lease
    const r = extend === 'UpdateTask' ? await lost.updateTask(task.taskId, { n: 101 }) : await lost.extendLock(task.taskId);
    assert.equal(r.succeeded, true, r.message);
    serverClock.advance(1000); // past the take's lease, within the extended one
    const solved = await lost.solved({ taskId: task.taskId });
    assert.deepEqual([solved.succeeded, solved.code], [true, undefined], `${extend}: ${solved.message}`);
  }
});
