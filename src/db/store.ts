/**
 * The store: a `pg` pool and a Kysely instance over either PostgreSQL (DATABASE_URL) or the
 * embedded PGlite, which is reached through PGlite's node-postgres adapter so that the same SQL,
 * the same driver and the same type parsing serve both. On a data directory PGlite runs on a worker
 * thread of its own by default (src/db/lite-thread.ts), the adapter reaching it through a stand-in.
 */
import crypto from 'node:crypto';
import pg from 'pg';
import { Kysely, PostgresDialect } from 'kysely';
// PGlite is loaded only for the embedded store: a server on PostgreSQL never holds its module
import type { PGlite } from '@electric-sql/pglite';
import type { Database } from './types.js';
import { lockDataDir, DataDirInUseError, type DataDirLock } from './lock.js';
import { redact } from '../config.js';
import { WalFlusher, mayWrite, nodeFlushFs, type FlushFs } from './embedded-flush.js';
import { copyEmbeddedFiles, openEmbedded, pgdataOf } from './embedded-open.js';
// the worker's stand-in (src/db/lite-thread.ts) is loaded only for the embedded store on its thread
import type { LiteThread } from './lite-thread.js';

// Ids are bigint columns kept below 2^53, so they are safe as JS numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
// `date` columns stay 'YYYY-MM-DD' strings: a Date would shift them by the local offset.
pg.types.setTypeParser(pg.types.builtins.DATE, (v) => v);

export type StoreKind = 'pglite' | 'postgres';

export interface Store {
  readonly kind: StoreKind;
  readonly pool: pg.Pool;
  readonly db: Kysely<Database>;
  /**
   * The Mate API's hot path (takes, hand-backs, the events watermark): on PostgreSQL with generic
   * plans (`genericPlans`), a pool of its own whose connections plan each prepared statement once;
   * otherwise `db` itself.
   */
  readonly hotDb: Kysely<Database>;
  /** the hot path's own pool, when it has one (metrics, tests) */
  readonly hotPool: pg.Pool | null;
  /** Where the data lives, safe to print (password redacted). */
  readonly location: string;
  /** The data directory was taken over from a process that stopped without closing it (embedded store). */
  readonly uncleanStop: boolean;
  /**
   * Resolves once every change committed before the call is on disk. PostgreSQL's commit already
   * is (synchronous_commit); the embedded store flushes its write-ahead log here (db/embedded-flush.ts).
   */
  durable(): Promise<void>;
  /**
   * PostgreSQL: how to open a connection with a session of its own (the events LISTEN, the
   * migrator's advisory lock), which a pooler in transaction mode cannot give; null on PGlite.
   */
  readonly sessionConfig: pg.ClientConfig | null;
  /** the embedded store's WAL flusher, when it flushes (tests, bench) */
  readonly flusher: WalFlusher | null;
  /**
   * The embedded store on a data directory: copies the database's files (pgdata) into `dir`, a new
   * directory, as one image taken between two statements (backups, src/db/backup.ts). Null on
   * PostgreSQL and on an injected PGlite.
   */
  readonly copyFiles: ((dir: string) => Promise<void>) | null;
  close(): Promise<void>;
}

export class StoreUnavailableError extends Error {}

/**
 * Is this error the store being unreachable or out of room for now (refused, reset, timed out,
 * shutting down, too many connections; a full disk or out of memory, PostgreSQL's class 53; a
 * lock or statement timeout)? Such errors are answered 503 with Retry-After, not 500.
 */
export function isStoreUnavailable(err: unknown): boolean {
  const code = (err as { code?: string })?.code ?? '';
  return (
    ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOSPC', '57P01', '57P02', '57P03', '08000', '08003', '08006'].includes(code) ||
    // 53xxx insufficient resources: 53100 disk full, 53200 out of memory, 53300 too many connections
    /^53[0-9A-Z]{3}$/.test(code) ||
    // lock_timeout (55P03) and statement_timeout (57014): one stuck row or query, try again shortly
    code === '55P03' ||
    code === '57014' ||
    /timeout exceeded when trying to connect|Connection terminated/i.test((err as Error)?.message ?? '')
  );
}

export interface OpenStoreOptions {
  databaseUrl: string | null;
  dataDir: string;
  poolSize?: number;
  /** An already-open PGlite instance (tests clone one from a template). */
  pglite?: PGlite;
  /**
   * PostgreSQL only: how long a statement waits for a row or table lock (lock_timeout), and runs
   * at all (statement_timeout), in ms; 0 is no limit. A request that hits either is answered 503
   * with Retry-After instead of waiting as long as whoever holds the lock.
   */
  lockTimeoutMs?: number;
  statementTimeoutMs?: number;
  /**
   * PostgreSQL: where the connections that need a session go (LISTEN, the migrator): the database
   * itself when `databaseUrl` is a pooler in transaction mode. Default `databaseUrl`.
   */
  sessionUrl?: string | null;
  /** PostgreSQL: send the marked statements as named prepared statements (default true) */
  preparedStatements?: boolean;
  /**
   * PostgreSQL, with prepared statements: give the hot path (`hotDb`) half of the pool's
   * connections, opened with plan_cache_mode = force_generic_plan (default false; the server's
   * start turns it on with QUEUEMATE_DB_GENERIC_PLANS). Its statements then run on the plan made at
   * their first execution: with batches of varying size PostgreSQL otherwise plans the take and the
   * funnel's statement anew on every call (a custom plan per array length), 2-4 ms of planning
   * each. The people's searches keep the other connections and their custom plans.
   */
  genericPlans?: boolean;
  /**
   * Embedded store: flush the write-ahead log before an acknowledged change is answered (the
   * setting QUEUEMATE_EMBEDDED_FSYNC, default on). An injected PGlite flushes only when a test
   * passes `flushFs` (it has no files of its own).
   */
  embeddedFsync?: boolean;
  flushFs?: FlushFs;
  /**
   * Embedded store on a data directory: where PGlite runs (the setting QUEUEMATE_EMBEDDED_THREAD):
   * `worker` (the default), a worker thread of its own (src/db/lite-thread.ts), so that a statement
   * runs while this thread does HTTP and the application; `main`, this thread. An injected PGlite
   * always runs on this thread.
   */
  embeddedThread?: EmbeddedThread;
}

export type EmbeddedThread = 'worker' | 'main';

/** Defaults of the two timeouts (the settings QUEUEMATE_DB_LOCK_TIMEOUT and QUEUEMATE_DB_STATEMENT_TIMEOUT). */
export const DEFAULT_LOCK_TIMEOUT_MS = 5000;
export const DEFAULT_STATEMENT_TIMEOUT_MS = 30000;

/**
 * Statements of the hot paths start with a marker comment, `/* prepared *\/`; they are sent as
 * named prepared statements, so PostgreSQL parses and plans them once per connection instead of on
 * every call (the take-cycle bench: planning was a third of a take's time). The name is derived from
 * the text, so each distinct text is prepared once per connection; the marked statements have a
 * handful of texts each.
 */
export const PREPARED = '/* prepared */';

/**
 * Sets up each new pooled connection: named prepared statements (unless turned off: a pooler in
 * transaction mode without support for them hands each transaction any server connection, where
 * the statement may not be prepared), and error handling.
 */
function onConnect(client: pg.PoolClient, prepared = true): void {
  // A connection that breaks while a query runs also emits 'error' on its client; with no listener
  // that would crash the process. The query itself fails with the same error, which the API
  // answers as 503, and the pool replaces the connection.
  client.on('error', () => {});
  if (prepared) namedIfMarked(client);
}

// statement text → its name: hashing every call's text cost about 1 % of a request (bench)
const statementNames = new Map<string, string>();

function namedIfMarked(client: pg.PoolClient): void {
  const marked = client as pg.PoolClient & { queuemateNamed?: boolean };
  if (marked.queuemateNamed) return;
  marked.queuemateNamed = true;
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as { query: unknown }).query = (text: unknown, values?: unknown, callback?: unknown) => {
    if (typeof text === 'string' && text.startsWith(PREPARED)) {
      let name = statementNames.get(text);
      if (name === undefined) {
        name = `qm_${crypto.createHash('sha1').update(text).digest('base64url').slice(0, 20)}`;
        if (statementNames.size < 1000) statementNames.set(text, name);
      }
      return query({ name, text, values }, callback);
    }
    return query(text, values, callback);
  };
}

/**
 * Counts the statements that may have written, as they complete (their WAL record is then in the
 * page cache), so that durable() knows what its flush must cover.
 */
function noteWrites(client: pg.PoolClient, flusher: WalFlusher): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as { query: unknown }).query = (text: unknown, values?: unknown, callback?: unknown) => {
    const statement = typeof text === 'string' ? text : ((text as { text?: string })?.text ?? '');
    if (!mayWrite(statement)) return query(text, values, callback);
    const cb = typeof values === 'function' ? values : callback;
    if (typeof cb === 'function') {
      const noted = (err: unknown, res: unknown) => {
        flusher.noteWrite();
        (cb as (e: unknown, r: unknown) => void)(err, res);
      };
      return typeof values === 'function' ? query(text, noted) : query(text, values, noted);
    }
    // a failed statement may still have ended a transaction that wrote (a failing COMMIT): count it too
    return (query(text, values) as Promise<unknown>).finally(() => flusher.noteWrite());
  };
}

interface WrapExtras {
  hotPool?: pg.Pool | null;
  sessionConfig?: pg.ClientConfig;
  uncleanStop?: boolean;
  flusher?: WalFlusher | null;
  copyFiles?: ((dir: string) => Promise<void>) | null;
}

function wrap(kind: StoreKind, pool: pg.Pool, location: string, onClose: () => Promise<void>, extras: WrapExtras = {}): Store {
  const sessionConfig = extras.sessionConfig ?? null;
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  const hotPool = extras.hotPool ?? null;
  const hotDb = hotPool ? new Kysely<Database>({ dialect: new PostgresDialect({ pool: hotPool }) }) : db;
  let closed = false;
  const flusher = extras.flusher ?? null;
  return {
    kind,
    pool,
    db,
    hotDb,
    hotPool,
    location,
    uncleanStop: extras.uncleanStop ?? false,
    sessionConfig,
    flusher,
    copyFiles: extras.copyFiles ?? null,
    durable: flusher ? () => flusher.durable() : async () => {},
    async close() {
      if (closed) return;
      closed = true;
      // a command's last writes (`queuemate` subcommands answer on exit) are on disk before it exits
      if (flusher && !pool.ended && !pool.ending) await flusher.durable().catch(() => {});
      // a pool someone already ended (a test cutting the database off) has nothing left to close;
      // Kysely would end it a second time, which throws
      if (!pool.ended && !pool.ending) await db.destroy();
      // Kysely ends the pool only if it ran a query itself; the migrator and /readyz use the pool
      // directly, and a pool left open keeps the process alive (`queuemate migrate` would hang).
      if (!pool.ended && !pool.ending) await pool.end();
      if (hotPool && !hotPool.ended && !hotPool.ending) await hotDb.destroy();
      if (hotPool && !hotPool.ended && !hotPool.ending) await hotPool.end();
      await onClose();
    },
  };
}

export async function openStore(opts: OpenStoreOptions): Promise<Store> {
  if (opts.databaseUrl) {
    const lockTimeout = opts.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
    const statementTimeout = opts.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
    const prepared = opts.preparedStatements !== false;
    const size = opts.poolSize ?? 10;
    const hotSize = opts.genericPlans && prepared && size >= 2 ? Math.floor(size / 2) : 0;
    const poolConfig: pg.PoolConfig = {
      connectionString: opts.databaseUrl,
      // Fail a request fast rather than queue behind a database that is down (docs/mate-api.md §5: 503).
      connectionTimeoutMillis: 5000,
      idleTimeoutMillis: 30000,
      // sent as start-up parameters: every connection of the pool has them from its first statement.
      // 0 sends none, so that the database's (or role's) own setting applies: PgBouncer refuses
      // start-up parameters it does not know (docs/deployment.md, "PgBouncer").
      ...(lockTimeout > 0 ? { lock_timeout: lockTimeout } : {}),
      ...(statementTimeout > 0 ? { statement_timeout: statementTimeout } : {}),
    };
    const pool = new pg.Pool({ ...poolConfig, max: size - hotSize });
    // the start-up parameter `options` (a pooler may refuse it: the setting is then off)
    const hotPool = hotSize ? new pg.Pool({ ...poolConfig, max: hotSize, options: '-c plan_cache_mode=force_generic_plan' }) : null;
    for (const p of hotPool ? [pool, hotPool] : [pool]) {
      // An idle client losing its connection must not crash the process; the pool replaces it.
      p.on('error', () => {});
      p.on('connect', (client) => onConnect(client, prepared));
    }
    try {
      const client = await pool.connect();
      client.release();
      if (hotPool) (await hotPool.connect()).release();
    } catch (err) {
      await pool.end().catch(() => {});
      await hotPool?.end().catch(() => {});
      throw new StoreUnavailableError(
        `cannot reach PostgreSQL at ${redact(opts.databaseUrl)}: ${(err as Error).message || (err as NodeJS.ErrnoException).code}`,
      );
    }
    const sessionConfig: pg.ClientConfig = { connectionString: opts.sessionUrl || opts.databaseUrl, connectionTimeoutMillis: 5000 };
    return wrap('postgres', pool, redact(opts.databaseUrl), async () => {}, { sessionConfig, hotPool });
  }

  const { createPgConfig } = await import('@electric-sql/pglite/node-postgres');
  let lock: DataDirLock | null = null;
  let lite = opts.pglite;
  let thread: LiteThread | null = null;
  if (!lite) {
    try {
      lock = lockDataDir(opts.dataDir);
    } catch (err) {
      if (err instanceof DataDirInUseError) throw err;
      // e.g. EACCES or ENOTDIR: say which directory, in one line
      throw new StoreUnavailableError(`cannot use data directory ${opts.dataDir}: ${(err as Error).message}`);
    }
    try {
      if ((opts.embeddedThread ?? 'worker') === 'worker') {
        const { LiteThread } = await import('./lite-thread.js');
        thread = await LiteThread.open(opts.dataDir);
      } else lite = await openEmbedded(opts.dataDir);
    } catch (err) {
      lock.release();
      throw new StoreUnavailableError(`cannot open the embedded store in ${opts.dataDir}: ${(err as Error).message}`);
    }
  }
  const owned = !opts.pglite;
  const instance = lite;
  // PGlite is a single connection: a pool of one serializes queries and transactions. On the
  // worker, the adapter talks to the thread's stand-in, which has the one method it calls.
  const config = createPgConfig((thread ?? instance) as NonNullable<typeof instance>) as unknown as pg.PoolConfig;
  const pool = new pg.Pool({ ...config, max: 1, idleTimeoutMillis: 0 });
  const flushes = opts.embeddedFsync !== false && (owned || opts.flushFs !== undefined);
  const flusher = flushes ? new WalFlusher(pgdataOf(opts.dataDir), opts.flushFs ?? nodeFlushFs) : null;
  pool.on('connect', (client) => {
    onConnect(client);
    if (flusher) noteWrites(client, flusher);
  });
  const copyFiles = thread
    ? (dir: string) => thread.copyFiles(dir)
    : owned && instance
      ? (dir: string) => copyEmbeddedFiles(instance, opts.dataDir, dir)
      : null;
  return wrap(
    'pglite',
    pool,
    opts.pglite ? 'embedded (in memory)' : opts.dataDir,
    async () => {
      // PGlite's close (in the worker: waited for) runs the shutdown checkpoint
      if (thread) await thread.close();
      else if (owned) await instance!.close();
      // the shutdown checkpoint wrote the data files: on disk before the directory is let go
      if (owned && flusher) await flusher.dataFiles().catch(() => {});
      lock?.release();
    },
    {
      uncleanStop: lock?.takenOver ?? false,
      flusher,
      // the copy is one image taken between two statements (src/db/embedded-open.ts)
      copyFiles,
    },
  );
}
