/**
 * A fresh, migrated database for each test file: a PGlite instance loaded from a migrated
 * template (cached on disk per migration checksum), or, when DATABASE_URL is set, a new
 * PostgreSQL database created from a migrated template database.
 */
import type { FlushFs } from '../../src/db/embedded-flush.js';
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import pg from 'pg';
import { PGlite } from '@electric-sql/pglite';
import { openStore, type Store } from '../../src/db/store.js';
import { migrate, loadMigrations } from '../../src/db/migrator.js';

export const DATABASE_URL = process.env.DATABASE_URL || null;
export const STORE_KIND = DATABASE_URL ? 'postgres' : 'pglite';

const CACHE_DIR = path.resolve('.test-cache');
const checksum = crypto
  .createHash('sha256')
  .update(
    loadMigrations()
      .map((m) => m.checksum)
      .join(','),
  )
  .digest('hex')
  .slice(0, 12);

async function pgliteTemplate(): Promise<Blob> {
  const file = path.join(CACHE_DIR, `pglite-template-${checksum}.tar.gz`);
  if (fs.existsSync(file)) return new Blob([fs.readFileSync(file)]);
  const lite = await PGlite.create();
  const store = await openStore({ databaseUrl: null, dataDir: '', pglite: lite });
  await migrate(store);
  await store.close();
  const blob = await lite.dumpDataDir('gzip');
  await lite.close();
  fs.mkdirSync(CACHE_DIR, { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, Buffer.from(await blob.arrayBuffer()));
  fs.renameSync(tmp, file); // atomic: a parallel test file sees the whole template or none
  return blob;
}

export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

// pg_advisory_lock key guarding template creation across parallel test files.
const TEMPLATE_LOCK = 720_451_995;

async function postgresDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const admin = new pg.Client({ connectionString: DATABASE_URL! });
  await admin.connect();
  const template = `qm_template_${checksum}`;
  try {
    await admin.query('SELECT pg_advisory_lock($1)', [TEMPLATE_LOCK]);
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [template]);
    if (exists.rowCount === 0) {
      await admin.query(`CREATE DATABASE ${template}`);
      const store = await openStore({ databaseUrl: withDatabase(DATABASE_URL!, template), dataDir: '', poolSize: 1 });
      try {
        await migrate(store);
      } catch (err) {
        await store.close();
        await admin.query(`DROP DATABASE ${template}`);
        throw err;
      }
      await store.close();
    }
    const name = `qm_test_${process.pid}_${crypto.randomBytes(4).toString('hex')}`;
    // 55006: another session is connected to the template (a test run of another checkout, with the
    // advisory lock taken in another database): wait for it rather than fail, for at most ~10 s.
    for (let attempt = 0; ; attempt++) {
      try {
        await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
        break;
      } catch (err) {
        if ((err as { code?: string }).code !== '55006' || attempt >= 50) throw err;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
    return {
      url: withDatabase(DATABASE_URL!, name),
      drop: async () => {
        const c = new pg.Client({ connectionString: DATABASE_URL! });
        await c.connect();
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await c.end();
      },
    };
  } finally {
    await admin.query('SELECT pg_advisory_unlock($1)', [TEMPLATE_LOCK]).catch(() => {});
    await admin.end();
  }
}

export interface TestStore extends Store {
  /** Connection string of the test's PostgreSQL database (null on PGlite). */
  readonly url: string | null;
}

/** A fresh migrated store; close() also drops its database. */
export async function testStore(opts: { poolSize?: number; flushFs?: FlushFs } = {}): Promise<TestStore> {
  if (DATABASE_URL) {
    const { url, drop } = await postgresDatabase();
    // as `queuemate start` opens it: the hot path on connections with generic plans
    const store = await openStore({ databaseUrl: url, dataDir: '', poolSize: opts.poolSize ?? 10, genericPlans: true });
    return Object.assign(Object.create(null), store, {
      url,
      async close() {
        await store.close();
        await drop();
      },
    });
  }
  const lite = await PGlite.create({ loadDataDir: await pgliteTemplate() });
  const store = await openStore({ databaseUrl: null, dataDir: '', pglite: lite, flushFs: opts.flushFs });
  return Object.assign(Object.create(null), store, {
    url: null,
    async close() {
      await store.close();
      await lite.close();
    },
  });
}

/** A fresh, empty (not migrated) database: for migration tests. */
export async function emptyDatabase(): Promise<{ url: string | null; store: Store; close: () => Promise<void> }> {
  if (DATABASE_URL) {
    const admin = new pg.Client({ connectionString: DATABASE_URL });
    await admin.connect();
    const name = `qm_empty_${process.pid}_${crypto.randomBytes(4).toString('hex')}`;
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    const url = withDatabase(DATABASE_URL, name);
    const store = await openStore({ databaseUrl: url, dataDir: '', poolSize: 4 });
    return {
      url,
      store,
      close: async () => {
        await store.close();
        const c = new pg.Client({ connectionString: DATABASE_URL });
        await c.connect();
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await c.end();
      },
    };
  }
  const lite = await PGlite.create();
  const store = await openStore({ databaseUrl: null, dataDir: '', pglite: lite });
  return {
    url: null,
    store,
    close: async () => {
      await store.close();
      await lite.close();
    },
  };
}
