import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Coalescer } from '../src/lib/coalescer.js';

function deferred() {
  let release!: () => void;
  const p = new Promise<void>((r) => (release = r));
  return { p, release };
}

test('a lone request runs at once; requests arriving meanwhile run together as the next batch', async () => {
  const batches: number[][] = [];
  const gate = deferred();
  const c = new Coalescer<number, number>(async (batch) => {
    batches.push(batch);
    if (batches.length === 1) await gate.p;
    return batch.map((x) => x * 10);
  });
  const first = c.submit('k', 1);
  const rest = [2, 3, 4].map((x) => c.submit('k', x));
  const other = c.submit('other', 9);
  gate.release();
  assert.deepEqual(await Promise.all([first, ...rest, other]), [10, 20, 30, 40, 90]);
  assert.deepEqual(batches, [[1], [9], [2, 3, 4]]);
});

test('a failing batch is retried one by one, so one bad request fails alone', async () => {
  const c = new Coalescer<number, number>(async (batch) => {
    if (batch.includes(13)) throw new Error('unlucky');
    return batch;
  });
  const results = await Promise.allSettled([c.submit('k', 1), c.submit('k', 13), c.submit('k', 2)]);
  assert.equal(results[0].status, 'fulfilled');
  assert.equal(results[1].status, 'rejected');
  assert.equal(results[2].status, 'fulfilled');
  assert.equal((results[2] as PromiseFulfilledResult<number>).value, 2);
});

test('batches are bounded by maxBatch', async () => {
  const sizes: number[] = [];
  const gate = deferred();
  const c = new Coalescer<number, number>(async (batch) => {
    sizes.push(batch.length);
    if (sizes.length === 1) await gate.p;
    return batch;
  }, 3);
  const all = Array.from({ length: 8 }, (_, i) => c.submit('k', i));
  gate.release();
  await Promise.all(all);
  assert.deepEqual(sizes, [1, 3, 3, 1]);
});
