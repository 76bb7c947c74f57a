/**
 * The embedded store on its worker thread (src/db/lite-thread.ts, QUEUEMATE_EMBEDDED_THREAD): the
 * same SQL, transactions and errors as PGlite on the server's own thread and as PostgreSQL; what
 * it commits is there after a reopen; and, the reason it exists, the server's thread keeps running
 * its event loop while a statement runs. On PostgreSQL the shared checks run on the test database.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { openStore, isStoreUnavailable, StoreUnavailableError, type Store, type EmbeddedThread } from '../src/db/store.js';
import { LiteThread } from '../src/db/lite-thread.js';
import { testStore } from './helpers/db.js';
import { ROOT, tempDir } from './foundation-support.js';

const LITE = !process.env.DATABASE_URL;
const closers: Array<() => Promise<void>> = [];
after(async () => {
  for (const close of closers.reverse()) await close();
});

async function openOn(dataDir: string, embeddedThread: EmbeddedThread): Promise<Store> {
  const store = await openStore({ databaseUrl: null, dataDir, embeddedThread });
  closers.push(() => store.close());
  return store;
}

/** Statements, transactions and errors as the application meets them (pool and Kysely alike). */
async function sharedChecks(store: Store): Promise<void> {
  await store.pool.query('CREATE TABLE thread_check (id int PRIMARY KEY, label text NOT NULL CONSTRAINT thread_check_label UNIQUE)');
  await store.pool.query('INSERT INTO thread_check VALUES ($1, $2), ($3, $4)', [1, 'one', 2, 'two']);

  // a transaction that commits and one that rolls back
  const client = await store.pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('INSERT INTO thread_check VALUES ($1, $2)', [3, 'three']);
    await client.query('COMMIT');
    await client.query('BEGIN');
    await client.query('INSERT INTO thread_check VALUES ($1, $2)', [4, 'four']);
    await client.query('ROLLBACK');

    // a unique violation: pg's error with PostgreSQL's code, constraint and detail
    const dup = await client.query('INSERT INTO thread_check VALUES ($1, $2)', [5, 'one']).then(
      () => null,
      (err: unknown) => err,
    );
    assert.ok(dup instanceof Error, 'the duplicate is refused');
    assert.equal((dup as { code?: string }).code, '23505');
    assert.equal((dup as { constraint?: string }).constraint, 'thread_check_label');
    assert.match((dup as { detail?: string }).detail ?? '', /\(label\)=\(one\) already exists/);

    // a failing statement inside a transaction: the transaction is aborted, ROLLBACK ends it and the
    // connection goes on
    await client.query('BEGIN');
    await client.query('INSERT INTO thread_check VALUES ($1, $2)', [6, 'six']);
    await assert.rejects(client.query('SELECT 1 / $1::int', [0]), (err: { code?: string }) => err.code === '22012');
    await assert.rejects(client.query('SELECT 1'), (err: { code?: string }) => err.code === '25P02');
    await client.query('ROLLBACK');
    const { rows } = await client.query<{ id: number }>('SELECT id FROM thread_check ORDER BY id');
    assert.deepEqual(
      rows.map((r) => r.id),
      [1, 2, 3],
    );
    // a notice arrives as a notice, not as an error
    const notices: string[] = [];
    client.on('notice', (n) => notices.push(n.message ?? ''));
    await client.query("DO $$ BEGIN RAISE NOTICE 'thread notice %', 7; END $$");
    assert.deepEqual(notices, ['thread notice 7']);
  } finally {
    client.release();
  }

  // through Kysely, with a statement error in the transaction: it rolls back, the pool goes on
  await assert.rejects(
    store.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('thread_check' as never)
        .values({ id: 7, label: 'seven' } as never)
        .execute();
      await trx
        .insertInto('thread_check' as never)
        .values({ id: 8, label: 'two' } as never)
        .execute();
    }),
    (err: { code?: string }) => err.code === '23505',
  );
  const count = await store.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM thread_check');
  assert.equal(count.rows[0]!.n, 3);
}

/** The longest the event loop of this thread went without running a timer while `work` ran. */
async function longestStall(work: () => Promise<unknown>): Promise<number> {
  let last = performance.now();
  let longest = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, 5);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  return Math.max(longest, performance.now() - last);
}

test('PostgreSQL: statements, transactions and errors', { skip: LITE && 'PostgreSQL only' }, async () => {
  const store = await testStore();
  closers.push(() => store.close());
  await sharedChecks(store);
});

test('worker thread: statements, transactions, errors; a reopen finds what was committed', { skip: !LITE && 'PGlite only' }, async () => {
  const dir = tempDir();
  let store = await openOn(dir, 'worker');
  assert.equal(store.kind, 'pglite');
  assert.equal(store.location, dir);
  await sharedChecks(store);
  await store.close();

  store = await openOn(dir, 'worker');
  const { rows } = await store.pool.query<{ id: number; label: string }>('SELECT id, label FROM thread_check ORDER BY id');
  assert.deepEqual(rows, [
    { id: 1, label: 'one' },
    { id: 2, label: 'two' },
    { id: 3, label: 'three' },
  ]);

  // the server's thread runs its timers while the worker sleeps for half a second
  const stall = await longestStall(() => store.pool.query('SELECT pg_sleep(0.5)'));
  assert.ok(stall < 250, `the event loop stalled ${stall.toFixed(0)} ms during a 500 ms statement on the worker`);
  await store.close();
});

test('main thread: the same checks; a statement holds the event loop for its whole length', { skip: !LITE && 'PGlite only' }, async () => {
  const store = await openOn(tempDir(), 'main');
  await sharedChecks(store);
  // what the worker is for: on this thread no timer runs until the statement is done
  const stall = await longestStall(() => store.pool.query('SELECT pg_sleep(0.5)'));
  assert.ok(stall >= 450, `the event loop stalled only ${stall.toFixed(0)} ms during a 500 ms statement on this thread`);
  await store.close();
});

test('a store that cannot open says so in one line, on either thread', { skip: !LITE && 'PGlite only' }, async () => {
  for (const thread of ['worker', 'main'] as const) {
    const dir = tempDir();
    // the database's directory is a file: PGlite cannot open it
    fs.writeFileSync(path.join(dir, 'pgdata'), 'not a directory');
    await assert.rejects(openStore({ databaseUrl: null, dataDir: dir, embeddedThread: thread }), (err: Error) => {
      assert.ok(err instanceof StoreUnavailableError, `${thread}: ${err.stack}`);
      assert.ok(err.message.startsWith(`cannot open the embedded store in ${dir}: `), `${thread}: ${err.message}`);
      return true;
    });
    // the data directory's lock was let go: the next open gets past it to the same failure
    await assert.rejects(openStore({ databaseUrl: null, dataDir: dir, embeddedThread: thread }), StoreUnavailableError);
  }
});

test(
  'a worker that stops: statements fail as the store unavailable (503), and close still ends',
  { skip: !LITE && 'PGlite only' },
  async () => {
    const dir = tempDir();
    const thread = await LiteThread.open(dir);
    await (thread as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
    const query = new Uint8Array([0x51, 0, 0, 0, 13, ...Buffer.from('SELECT 1\0')]);
    await assert.rejects(thread.execProtocolStream(query), (err: Error) => {
      assert.ok(isStoreUnavailable(err), `${err.message} (${(err as { code?: string }).code})`);
      return true;
    });
    await assert.rejects(thread.copyFiles(path.join(dir, 'copy')), (err: Error) => isStoreUnavailable(err));
    await thread.close();
  },
);

test('a closed store leaves nothing running: the process exits by itself', { skip: !LITE && 'PGlite only' }, () => {
  const dir = tempDir();
  const script = `
    import { openStore } from ${JSON.stringify(path.join(ROOT, 'src/db/store.ts'))};
    const store = await openStore({ databaseUrl: null, dataDir: ${JSON.stringify(dir)}, embeddedThread: 'worker' });
    await store.pool.query('CREATE TABLE closed_check (id int)');
    await store.close();
    process.stdout.write('closed\\n');
  `;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 120_000,
  });
  assert.equal(r.signal, null, `the process did not exit by itself: ${r.stderr}`);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, 'closed\n');
});
