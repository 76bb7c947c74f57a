/**
 * A crowd of sockets does not lock new clients out (docs/operations.md, "Slow and idle clients"):
 * with the default cap of 1,000 connections, 2,000 keep-alive connections left idle after one
 * answered request each, then 1,000 slow senders (slowloris: one header line a second), and a new
 * client is still answered within a second or two. Runs alone: it opens 3,000 sockets and bounds
 * how long an answer takes. The policy itself, on a cap of 10: test/slow-clients.test.ts.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execSync } from 'node:child_process';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { testApp, type TestApp } from '../helpers/app.js';

const IDLE = 2000;
const SLOW = 1000;
// the client's 3,000 sockets and the server's side of up to 1,000 of them, the store's files, and room
const FILES_NEEDED = 8000;
const openFiles = Number(execSync('ulimit -n', { shell: '/bin/sh' }).toString().trim()) || Infinity;
const skip = openFiles < FILES_NEEDED ? `ulimit -n is ${openFiles}; this test needs ${FILES_NEEDED} open files` : false;

let t: TestApp;
let port: number;
const sockets: net.Socket[] = [];

before(async () => {
  t = await testApp(); // the default cap (QUEUEMATE_MAX_CONNECTIONS 1000) and headers timeout
  assert.equal(t.config.maxConnections, 1000);
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  port = (t.app.server.address() as AddressInfo).port;
});
after(async () => {
  for (const s of sockets) s.destroy();
  await t.close();
});

/** A keep-alive connection after one answered request (left open by the client); resolves false when it got no answer. */
function idleConnection(): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    sockets.push(socket);
    let got = '';
    socket.on('error', () => {});
    socket.on('data', (d) => {
      got += d.toString();
      if (/\r\n\r\n\{.*\}$/s.test(got)) resolve(/^HTTP\/1\.1 200/.test(got));
    });
    socket.on('close', () => resolve(false));
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
  });
}

/** A slow sender: the request line and a header now, then one header line a second, never the end of the headers. */
function slowSender(): Promise<void> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => resolve());
    sockets.push(socket);
    socket.on('error', () => resolve());
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
    const timer = setInterval(() => (socket.destroyed ? clearInterval(timer) : socket.write('X-Slow: 1\r\n')), 1000);
    socket.on('close', () => clearInterval(timer));
  });
}

/** A new client's request: its status (0 when the connection was refused) and how long it took. */
async function newClient(): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  try {
    const r = await fetch(`http://127.0.0.1:${port}/healthz`, { headers: { connection: 'close' }, signal: AbortSignal.timeout(10_000) });
    await r.text();
    return { status: r.status, ms: performance.now() - started };
  } catch {
    return { status: 0, ms: performance.now() - started };
  }
}

async function inBatches(n: number, size: number, open: () => Promise<unknown>): Promise<unknown[]> {
  const out: unknown[] = [];
  for (let i = 0; i < n; i += size) out.push(...(await Promise.all(Array.from({ length: Math.min(size, n - i) }, open))));
  return out;
}

test(
  '2,000 idle keep-alive and 1,000 slow-sending connections: a new client is answered within 2 s',
  { skip, timeout: 180_000 },
  async (ctx) => {
    assert.equal((await newClient()).status, 200); // the client's own first-request costs, before the crowd

    const answered = await inBatches(IDLE, 100, idleConnection);
    assert.equal(answered.filter((ok) => ok === true).length, IDLE, 'every idle connection got its answer: none was refused');
    const afterIdle = t.app.connections.counts();
    assert.ok(afterIdle.open <= 1000, JSON.stringify(afterIdle));
    assert.equal(afterIdle.idle, afterIdle.open, 'what is left open is idle');

    await inBatches(SLOW, 100, slowSender);
    // a second and more of header lines: the slow senders are past the grace a new client is given
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const crowd = t.app.connections.counts();
    assert.ok(crowd.waiting >= 900, `the slow senders are connected: ${JSON.stringify(crowd)}`);
    assert.equal(crowd.idle, 0, 'the idle connections made room for them, oldest first');

    const tries: { status: number; ms: number }[] = [];
    for (let i = 0; i < 5; i++) tries.push(await newClient());
    assert.deepEqual(
      tries.map((r) => r.status),
      [200, 200, 200, 200, 200],
      `new clients are answered while the crowd is connected: ${JSON.stringify(tries)}`,
    );
    assert.ok(
      tries.every((r) => r.ms < 2000),
      `each within 2 s: ${tries.map((r) => Math.round(r.ms)).join(', ')} ms`,
    );
    assert.ok(t.app.connections.counts().open <= 1000, 'the cap held');
    ctx.diagnostic(`new clients answered in ${tries.map((r) => Math.round(r.ms)).join(', ')} ms; crowd ${JSON.stringify(crowd)}`);
  },
);
