/**
 * Chaos (issue: scale-out): three real server processes on one PostgreSQL database behind a
 * round-robin TCP proxy written here. For QUEUEMATE_CHAOS_SECONDS (default 30) 32 Mates, each its
 * own account, run life cycles through the proxy (TakeNext; a long task every fourth, kept with
 * ExtendLock; Solved or now and then Retry), a producer creates tasks with Idempotency-Keys, a
 * webhook endpoint receives every event and a person's live stream follows them. Midway a
 * person's bulk move by filter starts on process A, and A is killed with SIGKILL once the job has
 * done a chunk, then started again.
 *
 * Afterwards, from the database's ledger (task_history) and what the clients saw:
 * - no task lost: every acknowledged create is a task, none twice; no lock outlives its lease;
 * - no task held by two Mates at once: per task, takes and releases alternate, and only the holder
 *   extends or hands back;
 * - leases recovered exactly once: a "Lock expired" always releases a held lock, never twice;
 * - the bulk job finished once: done, each task of the filter moved by it exactly once;
 * - every event reached the webhook at least once, with no gap in event ids;
 * - the live stream, reconnecting with Last-Event-ID, saw every event, in order, once.
 *
 * Assertions are about correctness, not throughput: the machine may be loaded. PostgreSQL only.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { DATABASE_URL, testStore, type TestStore } from '../helpers/db.js';
import { seedTenant, MATE_PASSWORD } from '../helpers/seed.js';
import { personWithToken } from '../helpers/people.js';
import { Receiver } from '../helpers/receiver.js';
import { remoteCall, remoteToken } from '../helpers/remote.js';
import { recordSecret } from '../helpers/log-sink.js';
import { spawnCli, killAll, type CliProcess } from '../foundation-support.js';
import { createMate } from '../../src/accounts/service.js';
import { readEvents } from '../../src/events/store.js';

const SECONDS = Number(process.env.QUEUEMATE_CHAOS_SECONDS) || 30;
const MATES = 32;
const LEASE_SECONDS = 6;
const BULK_LEASE_SECONDS = 5;
// four chunks of 500: A is killed once the first is done, chunks before the last, so that another
// process always resumes the job from A's lease
const BACKLOG = 2000;

let store: TestStore | null = null;
let proxy: RoundRobin | null = null;
let receiver: Receiver | null = null;
let stream: FollowingStream | null = null;
after(async () => {
  stream?.stop();
  await killAll();
  await proxy?.close();
  await receiver?.close();
  await store?.close();
});

/** A TCP proxy handing each new connection to the next live backend in turn. */
class RoundRobin {
  backends: number[] = [];
  private next = 0;
  private readonly sockets = new Set<net.Socket>();
  private constructor(private readonly server: net.Server) {}

  static async start(): Promise<RoundRobin> {
    const server = net.createServer();
    const p = new RoundRobin(server);
    server.on('connection', (client) => p.handle(client));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return p;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
  }

  private handle(client: net.Socket, tries = 0): void {
    if (this.backends.length === 0 || tries >= this.backends.length) return void client.destroy();
    const port = this.backends[this.next++ % this.backends.length];
    const upstream = net.connect(port, '127.0.0.1');
    this.sockets.add(client).add(upstream);
    let connected = false;
    upstream.once('connect', () => {
      connected = true;
      client.pipe(upstream).pipe(client);
    });
    upstream.on('error', () => {
      // a backend that is gone: the next one takes the connection
      if (!connected) {
        upstream.destroy();
        return this.handle(client, tries + 1);
      }
      client.destroy();
    });
    client.on('error', () => upstream.destroy());
    client.on('close', () => {
      upstream.destroy();
      this.sockets.delete(client);
    });
    upstream.on('close', () => {
      this.sockets.delete(upstream);
      if (connected) client.destroy();
    });
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** A live stream that reconnects (through the proxy) with Last-Event-ID whenever it ends. */
class FollowingStream {
  readonly events: { id: number; type: string }[] = [];
  reconnects = 0;
  private stopped = false;
  private req: http.ClientRequest | null = null;

  /** `first`: where it connects first; every reconnect goes to `url` */
  constructor(
    private readonly url: string,
    private readonly token: string,
    first = url,
  ) {
    this.connect(first);
  }

  private connect(url = this.url): void {
    if (this.stopped) return;
    const last = this.events.at(-1)?.id;
    const headers: Record<string, string> = { accept: 'text/event-stream', authorization: `Bearer ${this.token}` };
    if (last !== undefined) headers['last-event-id'] = String(last);
    let buffer = '';
    let again = false;
    const retry = () => {
      if (again || this.stopped) return;
      again = true;
      this.reconnects++;
      setTimeout(() => this.connect(), 200);
    };
    this.req = http.get(url, { headers }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        return retry();
      }
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let i: number;
        while ((i = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, i);
          buffer = buffer.slice(i + 2);
          let id: number | null = null;
          let type = '';
          for (const line of block.split('\n')) {
            if (line.startsWith('id: ')) id = Number(line.slice(4));
            else if (line.startsWith('event: ')) type = line.slice(7);
          }
          if (id !== null) this.events.push({ id, type });
        }
      });
      res.on('error', retry);
      res.on('close', retry);
    });
    this.req.on('error', retry);
  }

  stop(): void {
    this.stopped = true;
    this.req?.destroy();
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function startServer(url: string): Promise<{ cli: CliProcess; port: number; base: string }> {
  // a job's lease of 5 s (--bulk-lease): the killed process's bulk job is resumed seconds after the kill, not a minute
  const cli = spawnCli(
    ['start', '--port', '0', '--log-level', 'warn', '--lock-sweep-interval', '1', '--bulk-lease', String(BULK_LEASE_SECONDS)],
    {
      env: { DATABASE_URL: url },
      timeoutMs: 900_000,
    },
  );
  const m = await cli.waitFor(/listening on (http:\/\/\S+)/, 180_000);
  return { cli, port: Number(new URL(m[1]).port), base: m[1] };
}

/** A call that survives a server process dying under it: tried again (through the proxy) until answered. */
async function persist(
  what: string,
  call: () => Promise<{ status: number; body: any }>,
  deadline = Date.now() + 120_000,
): Promise<{ status: number; body: any }> {
  for (;;) {
    try {
      const r = await call();
      // 503: a process shutting down or the database busy; 409: an idempotent create still running
      if (r.status !== 503 && r.status !== 409 && r.status !== 502) return r;
    } catch {
      // the connection broke (the process was killed): try again
    }
    if (Date.now() > deadline) throw new Error(`${what}: no answer within the deadline`);
    await sleep(100);
  }
}

test(
  `chaos: 3 server processes, ${MATES} Mates, a bulk move, a webhook and a stream; one process killed midway`,
  { skip: DATABASE_URL ? false : 'PostgreSQL only (set DATABASE_URL): several server processes share one database' },
  async () => {
    store = await testStore({ poolSize: 4 });
    const tenant = await seedTenant(store, 'chaos', { processes: [{ processKey: 'Work' }, { processKey: 'Backlog' }] });
    await store.db.updateTable('processes').set({ lock_timeout_seconds: LEASE_SECONDS }).where('tenant_id', '=', tenant.tenantId).execute();
    const admin = await personWithToken(store, tenant.tenantId, 'admin', 'boss');
    const mates = [{ username: tenant.mateUsername }];
    for (let i = 1; i < MATES; i++) {
      const m = await createMate(store.db, tenant.tenantId, { username: `chaos-mate-${i}`, password: MATE_PASSWORD });
      mates.push({ username: m.username });
    }
    recordSecret(MATE_PASSWORD);
    const [workId, backlogId] = await Promise.all(
      ['Work', 'Backlog'].map(async (key) => {
        const r = await store!.db
          .selectFrom('processes')
          .select('id')
          .where('tenant_id', '=', tenant.tenantId)
          .where('process_key', '=', key)
          .executeTakeFirstOrThrow();
        return r.id;
      }),
    );

    const t0 = Date.now();
    const phases: string[] = [];
    const phase = (name: string) => phases.push(`${name} ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    const servers = await Promise.all([startServer(store.url!), startServer(store.url!), startServer(store.url!)]);
    phase('servers up');
    proxy = await RoundRobin.start();
    proxy.backends = servers.map((s) => s.port);
    const base = proxy.url;
    const stderr = () => servers.map((s) => s.cli.stderr()).join('\n');

    receiver = await Receiver.start();
    const people = (method: string, path: string, body?: unknown) =>
      persist(`${method} ${path}`, async () => {
        const res = await fetch(`${base}${path}`, {
          method,
          headers: { authorization: `Bearer ${admin.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        return { status: res.status, body: await res.json().catch(() => null) };
      });
    assert.equal((await people('PUT', '/v1/webhook-settings', { allowPrivateTargets: true })).status, 200);
    assert.equal((await people('POST', '/v1/webhooks', { url: receiver.url })).status, 201);

    // the backlog the bulk job moves, and the first work, before the clock starts
    const mateToken = await remoteToken(base, tenant);
    for (let i = 0; i < BACKLOG; i += 500) {
      const r = await remoteCall(
        base,
        mateToken,
        '/api/CreateTasks/Backlog',
        Array.from({ length: Math.min(500, BACKLOG - i) }, (_, j) => ({ coreSystemKey: `B-${i + j}` })),
      );
      assert.equal(r.status, 200, JSON.stringify(r.body));
    }
    // the stream starts on A, which is killed: it must reconnect (through the proxy) and miss nothing
    stream = new FollowingStream(`${base}/v1/events`, admin.token, `${servers[0].base}/v1/events`);
    await sleep(500);

    const acknowledged = new Set<number>();
    const stopAt = Date.now() + SECONDS * 1000;
    let keys = 0;
    const create = async (n: number) => {
      const key = `chaos-${++keys}`;
      const body = Array.from({ length: n }, (_, j) => ({ coreSystemKey: `${key}-${j}` }));
      const r = await persist('CreateTasks', () => remoteCall(base, mateToken, '/api/CreateTasks/Work', body, { 'idempotency-key': key }));
      assert.equal(r.status, 200, JSON.stringify(r.body));
      for (const id of r.body.taskIds) acknowledged.add(id);
    };
    await create(200);
    const producer = (async () => {
      while (Date.now() < stopAt) {
        await create(20);
        await sleep(500);
      }
    })();

    let handedBack = 0;
    const mateLoop = async (username: string) => {
      const token = await remoteToken(base, { ...tenant, mateUsername: username });
      const call = (path: string, body?: unknown) => persist(path, () => remoteCall(base, token, path, body));
      let n = 0;
      while (Date.now() < stopAt) {
        const task = (await call('/api/TakeNext/Work')).body;
        if (!(task?.taskId > 0)) {
          await sleep(200);
          continue;
        }
        n++;
        if (n % 4 === 0) {
          // a long task: the lease is kept with ExtendLock while it runs
          for (let i = 0; i < 3; i++) {
            await sleep(700);
            await call('/api/ExtendLock', { taskId: task.taskId, seconds: LEASE_SECONDS });
          }
        }
        const outcome = n % 10 === 0 ? 'Retry' : 'Solved';
        const r = await call(`/api/${outcome}`, { taskId: task.taskId, reason: 'chaos' });
        if (r.body?.succeeded) handedBack++;
      }
    };
    const mateRuns = mates.map((m) => mateLoop(m.username));

    // midway: the bulk move starts on A, and A is killed once the job has done a chunk
    await sleep((SECONDS * 1000) / 2);
    const a = servers[0];
    const started = await remoteCall(a.base, admin.token, `/v1/processes/${backlogId}/tasks/bulk`, {
      action: 'move',
      queue: 'Manual',
      filter: { queue: 'Ready' },
    });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    const jobId: string = started.body.jobId;
    const jobAt = async () => (await people('GET', `/v1/jobs/${jobId}`)).body;
    for (let i = 0; i < 600; i++) {
      const job = await store.db.selectFrom('bulk_jobs').select(['done', 'state']).where('id', '=', jobId).executeTakeFirstOrThrow();
      if (job.done > 0 || job.state !== 'running') break;
      await sleep(50);
    }
    const atKill = await store.db
      .selectFrom('bulk_jobs')
      .select(['done', 'state', 'lease_owner'])
      .where('id', '=', jobId)
      .executeTakeFirstOrThrow();
    proxy.backends = servers.slice(1).map((s) => s.port);
    a.cli.child.kill('SIGKILL');
    await a.cli.exited;
    const restarted = startServer(store.url!).then((s) => {
      proxy!.backends = [...proxy!.backends, s.port];
      servers.push(s);
      return s;
    });

    await producer;
    await Promise.all(mateRuns);
    phase('Mates done');
    await restarted;
    phase('A restarted');

    // the job: resumed by another process once A's lease ran out (BULK_LEASE_SECONDS), and done once
    const jobDeadline = Date.now() + 240_000;
    let job = await jobAt();
    while (job.status === 'running' && Date.now() < jobDeadline) {
      await sleep(500);
      job = await jobAt();
    }
    phase('bulk job done');
    assert.equal(job.status, 'done', `the bulk job ended: ${JSON.stringify(job)}\n${stderr()}`);
    assert.equal(job.done, BACKLOG, JSON.stringify(job));
    const moves = await store.db
      .selectFrom('task_history')
      .select(['task_id'])
      .where('tenant_id', '=', tenant.tenantId)
      .where('request_id', '=', `bulk:${jobId}`)
      .execute();
    assert.equal(moves.length, BACKLOG, 'one history row per task moved');
    assert.equal(new Set(moves.map((m) => m.task_id)).size, BACKLOG, 'no task moved twice');
    const backlogLeft = await store.db
      .selectFrom('tasks')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('tenant_id', '=', tenant.tenantId)
      .where('process_id', '=', backlogId)
      .where('queue', '<>', 'Manual')
      .executeTakeFirstOrThrow();
    assert.equal(Number(backlogLeft.n), 0, 'every backlog task was moved');

    // every lease is released: handed back, or recovered by a sweep once it ran out
    const leaseDeadline = Date.now() + 60_000;
    for (;;) {
      const held = await store.db
        .selectFrom('tasks')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('tenant_id', '=', tenant.tenantId)
        .where('locked_by_mate_id', 'is not', null)
        .executeTakeFirstOrThrow();
      if (Number(held.n) === 0) break;
      assert.ok(Date.now() < leaseDeadline, `${held.n} tasks still locked a minute after the Mates stopped\n${stderr()}`);
      await sleep(500);
    }

    // no task lost, none twice
    const work = await store.db
      .selectFrom('tasks')
      .select(['id', 'queue', 'error', 'deleted_at'])
      .where('tenant_id', '=', tenant.tenantId)
      .where('process_id', '=', workId)
      .execute();
    const byId = new Map(work.map((t) => [t.id, t]));
    assert.equal(work.length, acknowledged.size, 'as many tasks as acknowledged creates (idempotent retries made none twice)');
    for (const id of acknowledged) assert.ok(byId.has(id) && byId.get(id)!.deleted_at === null, `task ${id} exists`);

    // the ledger: per task, takes and releases alternate; only the holder extends or hands back
    const history = await store.db
      .selectFrom('task_history')
      .select(['id', 'task_id', 'action', 'actor_type', 'actor_id'])
      .where('tenant_id', '=', tenant.tenantId)
      .where('process_id', '=', workId)
      .orderBy('task_id')
      .orderBy('id')
      .execute();
    const HAND_BACKS = new Set(['Solved', 'Manual', 'Error', 'Retry']);
    const holder = new Map<number, number>();
    let takes = 0;
    let expired = 0;
    for (const h of history) {
      const held = holder.get(h.task_id);
      const where = `task ${h.task_id}, history ${h.id} (${h.action} by ${h.actor_type} ${h.actor_id})`;
      if (h.action === 'Taken' || h.action === 'Created and taken') {
        assert.equal(held, undefined, `${where}: taken while Mate ${held} held it`);
        holder.set(h.task_id, h.actor_id!);
        takes++;
      } else if (h.action === 'Lock expired') {
        assert.notEqual(held, undefined, `${where}: a lease recovered twice, or one never held`);
        holder.delete(h.task_id);
        expired++;
      } else if (h.action === 'Lock extended' || (HAND_BACKS.has(h.action) && h.actor_type === 'mate')) {
        assert.equal(held, h.actor_id, `${where}: by a Mate not holding it`);
        if (h.action !== 'Lock extended') holder.delete(h.task_id);
      }
    }
    assert.equal(holder.size, 0, 'no task is left held in the ledger');
    assert.ok(takes > 0 && handedBack > 0, 'the Mates worked');

    // every event: at least once at the webhook, no gap; once each, in order, on the stream
    const events = await readEvents(store.db, tenant.tenantId, 0, 1_000_000);
    const last = events.at(-1)!.id;
    const got = () => new Set(receiver!.received.map((r) => r.json.data.id as number));
    // an endpoint gets its events one at a time, in order (docs/events.md §4.3): on a loaded machine
    // the backlog takes a while, so the wait goes on while deliveries keep coming
    let seen = 0;
    let progressAt = Date.now();
    while (!got().has(last) && Date.now() - progressAt < 60_000) {
      await sleep(500);
      if (receiver.received.length > seen) {
        seen = receiver.received.length;
        progressAt = Date.now();
      }
    }
    phase('webhook caught up');
    const delivered = got();
    const firstDelivered = Math.min(...delivered);
    const missing = events.filter((e) => e.id >= firstDelivered && !delivered.has(e.id)).map((e) => e.id);
    assert.deepEqual(missing.slice(0, 20), [], `${missing.length} events never reached the webhook`);
    assert.ok(delivered.has(last), 'the last event reached the webhook');

    const s = stream!;
    assert.ok(s.reconnects > 0, 'the stream on A reconnected');
    const streamDeadline = Date.now() + 60_000;
    while (s.events.at(-1)?.id !== last && Date.now() < streamDeadline) await sleep(200);
    const firstSeen = s.events[0].id;
    assert.deepEqual(
      s.events.map((e) => e.id),
      events.filter((e) => e.id >= firstSeen).map((e) => e.id),
      'the stream saw every event once, in order',
    );
    s.stop();

    process.stderr.write(
      `chaos: ${SECONDS} s, ${acknowledged.size} tasks, ${takes} takes, ${handedBack} hand-backs, ${expired} leases recovered, ` +
        `bulk job at the kill: ${JSON.stringify(atKill)}, ${events.length} events, ${receiver.received.length} webhook requests, ` +
        `${s.reconnects} stream reconnects; ${phases.join(', ')}\n`,
    );
    // the kill landed mid-job, so A's lease on it was recovered by another process, which finished it
    assert.equal(atKill.state, 'running', `the job was still running at the kill: ${JSON.stringify(atKill)}`);
    assert.ok(atKill.done > 0 && atKill.done < BACKLOG, `the kill came between the first and the last chunk: ${JSON.stringify(atKill)}`);

    for (const srv of servers.slice(1)) srv.cli.child.kill('SIGTERM');
    for (const srv of servers.slice(1)) assert.equal((await srv.cli.exited).code, 0, srv.cli.stderr());
  },
);
