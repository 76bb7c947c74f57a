/**
 * Slow and idle clients cannot starve others: a client that trickles its headers or its body is
 * answered 408 and cut off once the headers or request timeout passes, while other clients are
 * served. At the connection cap the longest-idle keep-alive connections, then connections that
 * waited too long for their headers, make room for new clients (src/http/connections.ts); a new
 * connection is closed at once only when no other can go. The same with thousands of sockets:
 * test/serial/connection-crowd.test.ts.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { testApp, type TestApp } from './helpers/app.js';

let t: TestApp;
let port: number;

before(async () => {
  t = await testApp({ config: { requestTimeoutMs: 1000, maxConnections: 4 } });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  port = (t.app.server.address() as AddressInfo).port;
});
after(() => t.close());

/** Opens a connection, writes `first`, and resolves with everything the server sent until it closed. */
function slowClient(first: string): { socket: net.Socket; done: Promise<string> } {
  const socket = net.connect(port, '127.0.0.1');
  let got = '';
  const done = new Promise<string>((resolve) => {
    socket.on('data', (d) => (got += d.toString()));
    socket.on('close', () => resolve(got));
    socket.on('error', () => {});
  });
  socket.write(first);
  return { socket, done };
}

async function healthz(): Promise<number> {
  const r = await fetch(`http://127.0.0.1:${port}/healthz`, { headers: { connection: 'close' } });
  await r.text();
  return r.status;
}

test('a client that never finishes its headers, or its body, gets 408 and is cut off; others are served meanwhile', async () => {
  const headers = slowClient('GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ');
  // the token endpoint reads the whole body before it answers
  const body = slowClient(
    'POST /connect/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\ngrant_type=',
  );
  // keep trickling: a byte now and then does not keep the request alive past the timeout
  const trickle = setInterval(() => {
    if (!headers.socket.destroyed) headers.socket.write('a');
    if (!body.socket.destroyed) body.socket.write(' ');
  }, 200);
  try {
    assert.equal(await healthz(), 200, 'another client is served while the slow ones hang');
    const [h, b] = await Promise.all([headers.done, body.done]);
    assert.match(h, /^HTTP\/1\.1 408/, `slow headers: ${h}`);
    assert.match(b, /^HTTP\/1\.1 408/, `slow body: ${b}`);
  } finally {
    clearInterval(trickle);
  }
  assert.equal(await healthz(), 200);
});

test('at the cap, with every connection just opened, a new connection is closed at once, and served once others close', async () => {
  const idle = Array.from({ length: 4 }, () => slowClient(''));
  await Promise.all(idle.map((c) => new Promise((resolve) => c.socket.once('connect', resolve))));
  await new Promise((resolve) => setTimeout(resolve, 50)); // let the server count them
  const extra = slowClient('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
  assert.equal(await extra.done, '', 'the connection over the cap is closed without an answer');
  for (const c of idle) c.socket.destroy();
  await Promise.all(idle.map((c) => c.done));
  let status = 0;
  for (let i = 0; i < 50 && status !== 200; i++) {
    status = await healthz().catch(() => 0);
    if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.equal(status, 200, 'served again once the idle connections are gone');
});

describe('a server with room for 10 connections', () => {
  let u: TestApp;
  let uPort: number;
  before(async () => {
    u = await testApp({ config: { requestTimeoutMs: 30_000, headersTimeoutMs: 3000, maxConnections: 10 } });
    await u.app.listen({ port: 0, host: '127.0.0.1' });
    uPort = (u.app.server.address() as AddressInfo).port;
  });
  after(() => u.close());

  /** A keep-alive connection after one answered request; `closed` tells when the server closed it. */
  async function idleConnection(): Promise<{ socket: net.Socket; closed: () => boolean }> {
    const socket = net.connect(uPort, '127.0.0.1');
    let closed = false;
    socket.on('close', () => (closed = true));
    socket.on('error', () => {});
    let got = '';
    await new Promise<void>((resolve, reject) => {
      socket.on('data', (d) => {
        got += d.toString();
        if (/\r\n\r\n\{.*\}$/s.test(got)) resolve();
      });
      socket.once('close', () => reject(new Error(`closed before its answer: ${got}`)));
      socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    });
    assert.match(got, /^HTTP\/1\.1 200/);
    return { socket, closed: () => closed };
  }

  async function healthzOn(p: number): Promise<number> {
    const r = await fetch(`http://127.0.0.1:${p}/healthz`, { headers: { connection: 'close' } });
    await r.text();
    return r.status;
  }

  const settle = () => new Promise((resolve) => setTimeout(resolve, 100));

  test('idle keep-alive connections are closed oldest first as the cap nears, and a new client is served', async () => {
    const idle: Awaited<ReturnType<typeof idleConnection>>[] = [];
    for (let i = 0; i < 10; i++) idle.push(await idleConnection());
    await settle();
    assert.equal(await healthzOn(uPort), 200, 'a new client is served with 10 idle connections open');
    await settle();
    const closed = idle.map((c) => c.closed());
    const n = closed.filter(Boolean).length;
    assert.ok(n >= 2, `closed: ${closed}`);
    assert.deepEqual(
      closed,
      closed.map((_, i) => i < n),
      'the oldest idle ones, in order',
    );
    assert.ok(u.app.connections.counts().open <= 10);
    const metrics = (await u.app.inject({ method: 'GET', url: '/metrics' })).body;
    assert.match(metrics, new RegExp(`queuemate_http_connections_closed_total\\{reason="idle"\\} ${n}\\n`), 'counted in /metrics');
    assert.match(metrics, /queuemate_http_connections\{state="idle"\} \d+\n/);
    for (const c of idle) c.socket.destroy();
    await settle();
    assert.deepEqual(u.app.connections.counts(), { open: 0, waiting: 0, active: 0, idle: 0 });
  });

  test('at the cap with nothing idle, the connection that waited longest for its headers makes room; a slow sender gets 408 at the headers timeout', async () => {
    const slow = Array.from({ length: 10 }, () => {
      const socket = net.connect(uPort, '127.0.0.1');
      let got = '';
      const done = new Promise<string>((resolve) => {
        socket.on('data', (d) => (got += d.toString()));
        socket.on('close', () => resolve(got));
        socket.on('error', () => {});
      });
      socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
      return { socket, done, at: performance.now() };
    });
    const trickle = setInterval(() => {
      for (const c of slow) if (!c.socket.destroyed) c.socket.write('X-Slow: 1\r\n');
    }, 300);
    try {
      await settle();
      assert.deepEqual(u.app.connections.counts().waiting, 10);
      // within the first second they are left alone: the new one is refused
      assert.equal(await healthzOn(uPort).catch(() => 0), 0, 'refused while every other connection is young');
      await new Promise((resolve) => setTimeout(resolve, 1100));
      const started = performance.now();
      assert.equal(await healthzOn(uPort), 200, 'served once the slow senders have waited a second');
      assert.ok(performance.now() - started < 2000, 'answered within 2 s');
      const first = await slow[0].done;
      assert.equal(first, '', 'the oldest slow sender was closed for it');
      const rest = await Promise.all(slow.slice(1).map((c) => c.done));
      const ended = performance.now() - slow[1].at;
      assert.ok(
        rest.every((r) => r === '' || /^HTTP\/1\.1 408/.test(r)),
        rest.join('|'),
      );
      assert.ok(rest.filter((r) => /^HTTP\/1\.1 408/.test(r)).length >= 8, 'the others got 408');
      assert.ok(ended >= 2900 && ended < 6000, `the slow senders were cut off after ${Math.round(ended)} ms (headers timeout 3 s)`);
    } finally {
      clearInterval(trickle);
      for (const c of slow) c.socket.destroy();
    }
  });
});
