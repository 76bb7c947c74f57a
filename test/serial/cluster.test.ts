/**
 * `queuemate start --processes 2` on PostgreSQL (docs/deployment.md, "On one machine"): two server
 * processes answer on one port; /readyz and /metrics answer for both; a process killed with SIGKILL
 * is started again with a line on stderr; SIGTERM to the primary stops them all, exit 0.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { DATABASE_URL, testStore, type TestStore } from '../helpers/db.js';
import { spawnCli, killAll } from '../foundation-support.js';

let store: TestStore | null = null;
after(async () => {
  await killAll();
  await store?.close();
});

/** The PIDs of the children of `pid` (the server processes of a primary). */
function childrenOf(pid: number): number[] {
  const r = spawnSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' });
  return r.stdout
    .split('\n')
    .map((l) => Number(l.trim()))
    .filter((n) => n > 0);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test(
  'start --processes 2: one port, /readyz and /metrics for both, a killed process restarted, SIGTERM stops all',
  { skip: DATABASE_URL ? false : 'PostgreSQL only (set DATABASE_URL): --processes needs PostgreSQL (cli.test.ts checks the refusal)' },
  async () => {
    store = await testStore();
    const cli = spawnCli(['start', '--processes', '2', '--port', '0', '--log-level', 'warn'], {
      env: { DATABASE_URL: store.url! },
      timeoutMs: 600_000,
    });
    const m = await cli.waitFor(/listening on (http:\/\/\S+) .*2 server processes/, 240_000);
    const base = m[1];
    const workers = childrenOf(cli.pid);
    assert.equal(workers.length, 2, `two server processes: ${workers}`);

    const ready = (await (await fetch(`${base}/readyz`)).json()) as any;
    assert.equal(ready.status, 'ready');
    assert.deepEqual(ready.processes, { wanted: 2, running: 2, restarts: 0 });

    // the pools of both processes in one scrape: the sum of two pools of at least one connection each
    const metrics = await (await fetch(`${base}/metrics`)).text();
    assert.match(metrics, /^queuemate_server_processes\{state="running"\} 2$/m);
    assert.match(metrics, /^queuemate_server_process_restarts_total 0$/m);
    const resident = /^queuemate_process_resident_memory_bytes (\d+)/m.exec(metrics);
    assert.ok(resident && Number(resident[1]) > 0);
    // the http histogram counts requests of both processes: at least the readyz above
    assert.match(metrics, /queuemate_http_request_duration_seconds_count\{[^}]*route="\/readyz"[^}]*\} [1-9]/);

    process.kill(workers[0], 'SIGKILL');
    const line = `queuemate: server process ${workers[0]} was killed by SIGKILL; starting another`;
    for (let i = 0; i < 300 && !cli.stderr().includes(line); i++) await sleep(100);
    assert.ok(cli.stderr().includes(line), `the restart is logged: ${cli.stderr()}`);
    // the other one serves meanwhile
    assert.equal((await fetch(`${base}/healthz`)).status, 200);
    const deadline = Date.now() + 240_000;
    let after: any;
    for (;;) {
      after = (await (await fetch(`${base}/readyz`)).json()) as any;
      if (after.processes?.running === 2 || Date.now() > deadline) break;
      await sleep(500);
    }
    assert.deepEqual(after.processes, { wanted: 2, running: 2, restarts: 1 }, cli.stderr());
    const now = childrenOf(cli.pid);
    assert.equal(now.length, 2);
    assert.ok(!now.includes(workers[0]));

    cli.child.kill('SIGTERM');
    const { code } = await cli.exited;
    assert.equal(code, 0, cli.stderr());
    for (const pid of now) {
      assert.throws(() => process.kill(pid, 0), 'the server processes are gone');
    }
  },
);
