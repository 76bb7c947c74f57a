/**
 * Numbered, append-only SQL migrations (src/db/migrations/NNNN_name.sql), applied in order, each in
 * its own transaction, under a session advisory lock so that several processes starting at once
 * apply each migration exactly once (the others wait, then find nothing to do).
 */
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { StoreUnavailableError, type Store } from './store.js';
import { redact } from '../config.js';

const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');
// Arbitrary constant shared by every Queuemate process: pg_advisory_lock key of the migrator.
const MIGRATION_LOCK_KEY = 720_451_993;

export interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
}

export function loadMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return fs
    .readdirSync(dir)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((file, i, files) => {
      const version = Number(file.slice(0, 4));
      // Versions rise strictly; a gap is allowed because parallel branches each reserve a number
      // (0007 may be merged before 0006), and the loop in migrate() applies whatever is missing.
      const prev = i === 0 ? 0 : Number(files[i - 1].slice(0, 4));
      if (version <= prev)
        throw new Error(`migration ${file} is out of sequence (expected a number above ${String(prev).padStart(4, '0')})`);
      const sql = fs.readFileSync(path.join(dir, file), 'utf8');
      return { version, name: file.replace(/\.sql$/, ''), sql, checksum: crypto.createHash('sha256').update(sql).digest('hex') };
    });
}

let latest: number | null = null;
export function latestVersion(): number {
  latest ??= loadMigrations().length;
  return latest;
}

export class MigrationError extends Error {}

/**
 * A connection with a session of its own: on PostgreSQL a client of the session connection
 * settings (the advisory lock and the SETs below are session state, which a pooler in transaction
 * mode would spread over its server connections), on the embedded store its one connection.
 */
async function sessionClient(store: Store): Promise<{ query: pg.ClientBase['query']; release(): void }> {
  if (!store.sessionConfig) return store.pool.connect();
  const client = new pg.Client(store.sessionConfig);
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (err) {
    await client.end().catch(() => {});
    const url = store.sessionConfig.connectionString ?? '';
    throw new StoreUnavailableError(
      `cannot reach PostgreSQL at ${redact(url)} to migrate: ${(err as Error).message || (err as NodeJS.ErrnoException).code}`,
    );
  }
  return { query: client.query.bind(client) as pg.ClientBase['query'], release: () => void client.end().catch(() => {}) };
}

export async function migrate(store: Store, migrations = loadMigrations()): Promise<{ applied: string[] }> {
  const client = await sessionClient(store);
  const applied: string[] = [];
  try {
    // Waiting for another process's migration, and a migration itself, may take longer than the
    // pool's lock and statement timeouts allow a request (store.ts): none for this session.
    await client.query('SET lock_timeout = 0');
    await client.query('SET statement_timeout = 0');
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    try {
      await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version integer PRIMARY KEY,
        name text NOT NULL,
        checksum text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`);
      const { rows } = await client.query<{ version: number; name: string; checksum: string }>(
        'SELECT version, name, checksum FROM schema_migrations ORDER BY version',
      );
      const done = new Map(rows.map((r) => [r.version, r]));
      for (const r of rows) {
        const m = migrations.find((x) => x.version === r.version);
        if (!m)
          throw new MigrationError(
            `the database has migration ${r.name}, which this version of Queuemate does not know; run a newer version`,
          );
        if (m.checksum !== r.checksum)
          throw new MigrationError(`migration ${m.name} was changed after it was applied; migrations are append-only`);
      }
      for (const m of migrations) {
        if (done.has(m.version)) continue;
        await client.query('BEGIN');
        try {
          await client.query(m.sql);
          await client.query('INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)', [
            m.version,
            m.name,
            m.checksum,
          ]);
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK');
          throw new MigrationError(`migration ${m.name} failed: ${(err as Error).message}`);
        }
        applied.push(m.name);
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
    }
  } finally {
    await client.query('RESET lock_timeout').catch(() => {});
    await client.query('RESET statement_timeout').catch(() => {});
    client.release();
  }
  return { applied };
}

/** True when every migration this version knows has been applied (used by /readyz). */
export async function isMigrated(store: Store): Promise<boolean> {
  const { rows } = await store.pool
    .query<{ n: number }>("SELECT count(*)::int AS n FROM schema_migrations WHERE to_regclass('schema_migrations') IS NOT NULL")
    .catch(() => ({ rows: [{ n: -1 }] }));
  // >=: during a rolling upgrade, older processes stay ready once a newer one has migrated
  return rows[0].n >= latestVersion();
}
