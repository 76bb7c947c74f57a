/**
 * The embedded store keeps what it acknowledged (src/db/embedded-flush.ts): an answer to a write
 * is sent only after the write-ahead log flush that covers it, concurrent writes share flushes,
 * and a start after an unclean stop vacuums the hot tables (a clean start does not).
 * On PostgreSQL the commit itself is durable: no flusher, answers as before.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { createApp } from '../src/app.js';
import { testConfig } from '../src/config.js';
import { openStore } from '../src/db/store.js';
import { migrate } from '../src/db/migrator.js';
import { nodeFlushFs, type FlushFs } from '../src/db/embedded-flush.js';
import { HOT_TABLES } from '../src/maintenance/embedded-vacuum.js';
import { testStore, type TestStore } from './helpers/db.js';
import { seedTenant } from './helpers/seed.js';
import { Mate } from './helpers/mate.js';
import { tempDir, deadPid } from './foundation-support.js';

const LITE = !process.env.DATABASE_URL;
const closers: Array<() => Promise<void>> = [];
after(async () => {
  for (const close of closers.reverse()) await close();
});

/**
 * A file system whose datasync, once held, waits at a gate the test opens; it records the flushed
 * files in order with the answers.
 */
function gatedFs(events: string[]) {
  let gate: Promise<void> = Promise.resolve();
  let open: () => void = () => {};
  let reached: () => void = () => {};
  const fsHook: FlushFs = {
    list: async () => ['000000010000000000000001', 'archive_status'],
    files: async () => [],
    modifiedMs: async () => Date.now(),
    async datasync(file) {
      events.push(`datasync ${path.basename(file)}`);
      reached();
      await gate;
    },
  };
  return {
    fsHook,
    /** closes the gate; resolves when a datasync reached it */
    hold(): Promise<void> {
      gate = new Promise<void>((resolve) => (open = resolve));
      return new Promise<void>((resolve) => (reached = resolve));
    },
    release() {
      open();
    },
  };
}

async function appOn(store: TestStore) {
  const app = await createApp(testConfig(), { store, sweeper: false });
  await app.ready();
  closers.push(async () => {
    await app.close();
    await store.close();
  });
  const tenant = await seedTenant(store, 'dur', { processes: [{ processKey: 'P' }] });
  const mate = await Mate.signIn(app, tenant);
  return { app, mate };
}

async function taskCount(store: TestStore): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM tasks`.execute(store.db);
  return rows[0]!.n;
}

test('an answered create was flushed to disk before its answer was sent', { skip: !LITE && 'PGlite only' }, async () => {
  const events: string[] = [];
  const gated = gatedFs(events);
  const store = await testStore({ flushFs: gated.fsHook });
  const { mate } = await appOn(store);
  const before = store.flusher!.flushes;
  events.length = 0;
  const held = gated.hold();
  const answer = mate.post('/api/CreateTasks/P', [{}]).then((r) => {
    events.push('answered');
    return r;
  });
  await held;
  // the create has committed (its row is visible) but its answer waits for the flush
  assert.equal(await taskCount(store), 1);
  assert.deepEqual(events, ['datasync 000000010000000000000001'], 'only WAL segments are flushed, and no answer yet');
  gated.release();
  const res = await answer;
  assert.equal(res.body.succeeded, true);
  assert.deepEqual(events, ['datasync 000000010000000000000001', 'answered']);
  assert.equal(store.flusher!.flushes, before + 1);

  // a read-only request is answered without a flush
  const flushes = store.flusher!.flushes;
  assert.equal((await mate.request('GET', '/healthz')).status, 200);
  assert.equal(store.flusher!.flushes, flushes);
});

test('concurrent commits share flushes: 20 creates answered after 2 flushes', { skip: !LITE && 'PGlite only' }, async () => {
  const events: string[] = [];
  const gated = gatedFs(events);
  const store = await testStore({ flushFs: gated.fsHook });
  const { mate } = await appOn(store);
  const flusher = store.flusher!;
  const before = flusher.flushes;

  const held = gated.hold();
  const answers = Array.from({ length: 20 }, () => mate.post('/api/CreateTasks/P', [{}]));
  await held;
  // the first flush is held at the gate until all 20 creates committed and wait for their answer
  while (flusher.waiting < 20) await new Promise((resolve) => setImmediate(resolve));
  assert.equal(await taskCount(store), 20);
  gated.release();
  for (const res of await Promise.all(answers)) assert.equal(res.body.succeeded, true);
  // the first flush covered the first create; the second, every create committed while it waited
  assert.equal(flusher.flushes - before, 2);
});

test('PostgreSQL: the commit is the flush, no flusher', { skip: LITE && 'PostgreSQL only' }, async () => {
  const store = await testStore();
  const { mate } = await appOn(store);
  assert.equal(store.flusher, null);
  assert.equal((await mate.post('/api/CreateTasks/P', [{}])).body.succeeded, true);
  assert.equal(await taskCount(store), 1);
});

async function vacuumedTables(db: TestStore['db']): Promise<string[]> {
  const { rows } = await sql<{ relname: string }>`SELECT relname FROM pg_stat_user_tables
    WHERE last_vacuum IS NOT NULL AND relname = ANY(${[...HOT_TABLES]}::text[]) ORDER BY relname`.execute(db);
  return rows.map((r) => r.relname);
}

test(
  'a data directory: real WAL flushes; a start after an unclean stop vacuums, a clean start does not',
  { skip: !LITE && 'PGlite only' },
  async () => {
    const dir = tempDir();
    const synced: string[] = [];
    const counting: FlushFs = {
      ...nodeFlushFs,
      datasync: (file) => {
        synced.push(path.relative(dir, file));
        return nodeFlushFs.datasync(file);
      },
    };
    const open = async () =>
      Object.assign(await openStore({ databaseUrl: null, dataDir: dir, flushFs: counting }), { url: null }) as TestStore;

    let store = await open();
    assert.equal(store.uncleanStop, false, 'a new directory');
    await migrate(store);
    await store.durable();
    assert.ok(store.flusher!.flushes >= 1);
    assert.ok(
      synced.some((f) => /^pgdata\/pg_wal\/[0-9A-F]{24}$/.test(f)),
      'the WAL segment PGlite writes is flushed',
    );
    // a checkpoint writes data pages: the next flush finds pg_control changed and flushes them too
    synced.length = 0;
    await sql`CHECKPOINT`.execute(store.db);
    await sql`CREATE TABLE probe (n int)`.execute(store.db);
    await store.durable();
    assert.ok(synced.includes('pgdata/global/pg_control'), 'pg_control flushed after a checkpoint');
    assert.ok(
      synced.some((f) => f.startsWith('pgdata/base/')),
      'data files flushed after a checkpoint',
    );
    await store.close();

    // clean start: no vacuum pass
    store = await open();
    assert.equal(store.uncleanStop, false);
    let app = await createApp(testConfig(), { store });
    await app.ready();
    await app.close();
    assert.deepEqual(await vacuumedTables(store.db), []);
    await store.close();

    // the lock file of a process that died: a pass over the hot tables right after start
    fs.writeFileSync(path.join(dir, 'queuemate.lock'), `${await deadPid()}\n`);
    store = await open();
    assert.equal(store.uncleanStop, true);
    app = await createApp(testConfig(), { store });
    await app.ready();
    try {
      while ((await vacuumedTables(store.db)).length < HOT_TABLES.length) await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(await vacuumedTables(store.db), [...HOT_TABLES].sort());
    } finally {
      await app.close();
      await store.close();
    }
  },
);
