/**
 * An event is never lost when the server is killed (SIGKILL) between the commit of a change and
 * the delivery of its webhook: after a restart the event is delivered, with the same webhook-id.
 * PostgreSQL only: the embedded store does not fsync and allows one process.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { DATABASE_URL, testStore, type TestStore } from './helpers/db.js';
import { seedTenant } from './helpers/seed.js';
import { Receiver } from './helpers/receiver.js';
import { spawnCli, killAll, type CliProcess } from './foundation-support.js';
import { createSubscription, setAllowPrivateTargets } from '../src/events/webhook-subscriptions.js';

let store: TestStore | null = null;
let receiver: Receiver | null = null;
after(async () => {
  await killAll();
  await receiver?.close();
  await store?.close();
});

async function startServer(url: string): Promise<{ cli: CliProcess; base: string }> {
  const cli = spawnCli(['start', '--port', '0', '--log-level', 'warn', '--webhook-timeout', '1'], {
    env: { DATABASE_URL: url },
    timeoutMs: 120_000,
  });
  const m = await cli.waitFor(/listening on (http:\/\/\S+)/);
  return { cli, base: m[1] };
}

test(
  'SIGKILL between commit and delivery: the restarted server delivers the event',
  { skip: DATABASE_URL ? false : 'needs DATABASE_URL (PostgreSQL)' },
  async () => {
    store = await testStore();
    receiver = await Receiver.start();
    const tenant = await seedTenant(store, 'crash-ev', { processes: [{ processKey: 'Work' }] });
    await setAllowPrivateTargets(store.db, tenant.tenantId, true);
    await createSubscription(store.db, tenant.tenantId, { url: receiver.url, eventTypes: ['task.created'] });
    // the first delivery attempt never gets an answer: the server dies while it waits
    receiver.plan = ['hang'];

    const first = await startServer(store.url!);
    const form = new URLSearchParams({
      grant_type: 'password',
      client_id: tenant.clientId,
      client_secret: tenant.apiSecret,
      username: tenant.mateUsername,
      password: tenant.matePassword,
    });
    const token = (await (await fetch(`${first.base}/connect/token`, { method: 'POST', body: form })).json()).access_token as string;
    const res = await fetch(`${first.base}/api/CreateTask/Work`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({}),
    });
    const { taskId } = (await res.json()) as { taskId: number };
    assert.ok(taskId > 0);
    // committed; wait until the delivery is in flight (or kill at once if it is slow to start)
    const deadline = Date.now() + 5000;
    while (receiver.received.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    first.cli.child.kill('SIGKILL');
    await first.cli.exited;
    const beforeRestart = receiver.received.length;
    assert.ok(beforeRestart <= 1, 'nothing was answered before the kill');

    const second = await startServer(store.url!);
    const until = Date.now() + 60_000;
    while (receiver.received.length <= beforeRestart && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    const last = receiver.received.at(-1)!;
    if (receiver.received.length <= beforeRestart) {
      const state =
        await sql`SELECT (SELECT json_agg(d) FROM webhook_deliveries d) AS deliveries, (SELECT json_agg(s) FROM webhook_subscriptions s) AS subs,
        (SELECT json_agg(json_build_object('id', e.id, 'xid', e.xid, 'type', e.type)) FROM outbox_events e) AS events, now() AS now`.execute(
          store.db,
        );
      assert.fail(`not delivered after the restart: ${JSON.stringify(state.rows[0])}\nstderr: ${second.cli.stderr()}`);
    }
    assert.equal(last.json.type, 'task.created');
    assert.equal(last.json.data.taskId, taskId);
    if (beforeRestart === 1)
      assert.equal(last.headers['webhook-id'], receiver.received[0].headers['webhook-id'], 'the same message, again');
  },
);
