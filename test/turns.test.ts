/** Robots first (src/db/turns.ts): background work waits for foreground calls on the embedded store, bounded. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Turns } from '../src/db/turns.js';

test('background work goes after the foreground calls in flight, and after a quiet moment', async () => {
  const turns = new Turns({ prioritize: true, maxDeferMs: 10_000, quietMs: 5 });
  const order: string[] = [];
  const leaveA = turns.enter();
  const leaveB = turns.enter();
  const bg = turns.background().then(() => order.push('background'));
  await new Promise((r) => setTimeout(r, 20));
  order.push('a ends');
  leaveA();
  leaveA(); // a second call does nothing
  assert.equal(turns.inFlight, 1);
  await new Promise((r) => setTimeout(r, 20));
  order.push('b ends');
  leaveB();
  await bg;
  assert.deepEqual(order, ['a ends', 'b ends', 'background']);
  assert.equal(turns.deferred, 1);
});

test('a call that never ends holds background work back only maxDeferMs per unit', async () => {
  const turns = new Turns({ prioritize: true, maxDeferMs: 30, quietMs: 5 });
  turns.enter();
  const t0 = performance.now();
  await turns.background();
  await turns.background();
  const waited = performance.now() - t0;
  assert.ok(waited >= 55, `waited ${waited} ms`);
  assert.equal(turns.deferred, 2);
});

test('without priority (PostgreSQL) background work only yields', async () => {
  const turns = new Turns({ prioritize: false, maxDeferMs: 10_000 });
  turns.enter();
  await turns.background();
  assert.equal(turns.deferred, 0);
});
