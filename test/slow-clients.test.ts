/**
 * Slow and idle clients cannot starve others (issue 7): a client that trickles its headers or its
 * body is answered 408 and cut off once the request timeout passes, while other clients are
 * served; beyond the connection cap new connections are closed at once, and served again once
 * connections free up.
 */
import { test, before, after } from 'node:test';
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

test('beyond the connection cap a new connection is closed at once, and served once others close', async () => {
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
