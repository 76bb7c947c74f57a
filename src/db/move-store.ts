/**
 * `queuemate move-store --to postgres://…` (docs/deployment.md, "Moving from the embedded store to
 * PostgreSQL"): copies every row of a stopped embedded store into an empty PostgreSQL database,
 * ids and all, so that the server started on PostgreSQL carries on where the embedded one stopped.
 *
 * - The target is migrated by the same migrations, then filled table by table in the order of
 *   TABLES (each after the tables it references), in one transaction: a failure leaves it empty.
 * - Rows travel as JSON text (row_to_json on the embedded store, json_populate_recordset on
 *   PostgreSQL), which carries every column type of the schema exactly; identity columns keep
 *   their values (OVERRIDING SYSTEM VALUE), and the triggers that write events are off meanwhile
 *   (the copied rows' events are copied too).
 * - Sequences (the id counters, the take order) continue from the embedded store's values (task
 *   and run ids are random, migration 0013: nothing to continue).
 * - Event ids derive from the writing transaction's id (xid, docs/events.md §3): PostgreSQL's
 *   transaction counter is moved past the highest one copied, so that new events come after the
 *   copied ones and the copied ones are visible (below the readers' horizon).
 * - Each table is verified before the commit: the row count and a checksum of its rows' JSON text
 *   on both sides.
 */
import fs from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import { openStore, type Store } from './store.js';
import { migrate } from './migrator.js';
import { DataDirInUseError } from './lock.js';
import { redact } from '../config.js';

/** Every table of the schema but schema_migrations, each after the tables its foreign keys reference. */
export const TABLES: readonly string[] = [
  'tenants',
  'tenant_api_secrets',
  'users',
  'user_tokens',
  'mates',
  'signing_keys',
  'sign_in_failures',
  'processes',
  'process_fields',
  'process_rules',
  'runs',
  'tasks',
  'task_comments',
  'task_history',
  'kpi_events',
  'notifications',
  'idempotency_keys',
  'webhook_subscriptions',
  'outbox_events',
  'webhook_deliveries',
  'webhook_attempts',
  'audit_log',
  'bulk_jobs',
  'bulk_job_rows',
  'queue_counts',
  'queue_count_deltas',
];

/** The schema's views: made by the migrations, nothing to copy (run_outcomes reads kpi_events). */
export const VIEWS = ['run_outcomes'];

export class MoveError extends Error {}

export interface TableReport {
  table: string;
  rows: number;
  checksum: string;
}

export interface MoveReport {
  tables: TableReport[];
  sequences: number;
  /** transaction ids PostgreSQL's counter was moved forward by (0: it was already past) */
  xidsAdvanced: number;
}

type Query = Pick<pg.PoolClient, 'query'>;

/** The schema's tables as a database has them, minus schema_migrations. */
async function tablesOf(db: Query): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.tables
     WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> 'schema_migrations' ORDER BY 1`,
  );
  return rows.map((r) => r.name);
}

/**
 * What is wrong with TABLES for this database: tables it lacks, tables it names that are not there,
 * and tables listed before a table they reference. Empty when the copy list is complete.
 */
export async function copyListProblems(db: Query): Promise<string[]> {
  const problems: string[] = [];
  const actual = await tablesOf(db);
  for (const t of actual) if (!TABLES.includes(t)) problems.push(`table ${t} is not in the copy list`);
  for (const t of TABLES) if (!actual.includes(t)) problems.push(`the copy list names ${t}, which the database does not have`);
  const { rows } = await db.query<{ child: string; parent: string }>(
    `SELECT c.conrelid::regclass::text AS child, c.confrelid::regclass::text AS parent FROM pg_constraint c
     JOIN pg_namespace n ON n.oid = c.connamespace WHERE c.contype = 'f' AND n.nspname = current_schema()`,
  );
  for (const r of rows) {
    const [c, p] = [TABLES.indexOf(r.child), TABLES.indexOf(r.parent)];
    if (c >= 0 && p >= 0 && c < p) problems.push(`${r.child} is copied before ${r.parent}, which it references`);
  }
  return problems;
}

/** Primary key columns of a table, in key order. */
async function primaryKey(db: Query, table: string): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT a.attname AS name FROM pg_index i
     CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
     JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
     WHERE i.indrelid = $1::regclass AND i.indisprimary ORDER BY k.ord`,
    [table],
  );
  if (rows.length === 0) throw new MoveError(`table ${table} has no primary key`);
  return rows.map((r) => r.name);
}

async function columnsOf(db: Query, table: string): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT attname AS name FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
    [table],
  );
  return rows.map((r) => r.name);
}

const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** Row count and an order-independent checksum of the rows' JSON text (the sum of their md5s' first 60 bits). */
async function verify(db: Query, table: string): Promise<{ rows: number; checksum: string }> {
  const { rows } = await db.query<{ n: string; sum: string }>(
    `SELECT count(*)::text AS n, coalesce(sum(('x' || substr(md5(row_to_json(t)::text), 1, 15))::bit(60)::bigint::numeric), 0)::text AS sum
     FROM ${ident(table)} t`,
  );
  return { rows: Number(rows[0].n), checksum: rows[0].sum };
}

/** The current schema holds no Queuemate rows and no other tables: what may be filled. */
async function checkEmpty(db: Query, where: string): Promise<void> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'f') ORDER BY 1`,
  );
  const known = new Set([...TABLES, ...VIEWS, 'schema_migrations']);
  const foreign = rows.map((r) => r.name).filter((n) => !known.has(n));
  if (foreign.length > 0)
    throw new MoveError(
      `${where} is not empty: it has ${foreign.slice(0, 3).join(', ')}${foreign.length > 3 ? ` and ${foreign.length - 3} more` : ''}; move into a new, empty database`,
    );
  for (const r of rows) {
    if (!TABLES.includes(r.name)) continue;
    const { rows: any } = await db.query(`SELECT 1 FROM ${ident(r.name)} LIMIT 1`);
    if (any.length > 0) throw new MoveError(`${where} is not empty: table ${r.name} has rows; move into a new, empty database`);
  }
}

/** The highest transaction id the copied events carry (their ids and the cursors derive from it). */
async function highestXid(db: Query): Promise<bigint> {
  const { rows } = await db.query<{ x: string }>(
    `SELECT GREATEST(
       (SELECT max(xid::text::bigint) FROM outbox_events),
       (SELECT max(cursor_seq >> 20) FROM webhook_subscriptions),
       (SELECT max(event_id >> 20) FROM webhook_deliveries), 0)::text AS x`,
  );
  return BigInt(rows[0].x);
}

/** Moves PostgreSQL's transaction counter past `above`; answers how many ids that took. */
async function advanceXid(client: pg.PoolClient, above: bigint, progress: (line: string) => void): Promise<number> {
  const current = async () => BigInt((await client.query<{ x: string }>('SELECT pg_current_xact_id()::text AS x')).rows[0].x);
  let now = await current();
  if (now > above) return 0;
  const start = now;
  const total = Number(above - now + 1n);
  progress(`Moving PostgreSQL's transaction counter forward by ${total} so that new event ids follow the copied ones…`);
  // each block is a transaction of its own; nothing in them needs to wait for the disk
  await client.query('SET synchronous_commit = off');
  let last = Date.now();
  while (now <= above) {
    const n = Math.min(1000, Number(above - now + 1n));
    await client.query('BEGIN; SELECT pg_current_xact_id(); COMMIT; '.repeat(n));
    now = await current();
    if (Date.now() - last > 2000) {
      last = Date.now();
      progress(`  ${Number(now - start)} of ${total}`);
    }
  }
  await client.query('RESET synchronous_commit');
  return Number(now - start);
}

async function sequencesOf(db: Query): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = current_schema() AND c.relkind = 'S' ORDER BY 1`,
  );
  return rows.map((r) => r.name);
}

export interface MoveOptions {
  dataDir: string;
  /** the target's connection string */
  to: string;
  /** a line of progress (stderr) */
  progress: (line: string) => void;
  /** rows per insert */
  batchRows?: number;
}

export async function moveStore(opts: MoveOptions): Promise<MoveReport> {
  if (!fs.existsSync(path.join(opts.dataDir, 'pgdata', 'PG_VERSION'))) throw new MoveError(`there is no embedded store in ${opts.dataDir}`);
  let source: Store;
  try {
    source = await openStore({ databaseUrl: null, dataDir: opts.dataDir, poolSize: 1 });
  } catch (err) {
    if (err instanceof DataDirInUseError)
      throw new MoveError(
        `the embedded store in ${opts.dataDir} is in use by PID ${err.pid}: stop the server first (the move copies a stopped store, so that no change is made after its copy)`,
      );
    throw err;
  }
  let target: Store | null = null;
  try {
    await migrate(source);
    target = await openStore({ databaseUrl: opts.to, dataDir: '', poolSize: 2, lockTimeoutMs: 0, statementTimeoutMs: 0 });
    const where = `the database ${redact(opts.to)}`;
    await checkEmpty(target.pool, where);
    await migrate(target);

    const versions = async (s: Store) =>
      (await s.pool.query<{ v: string }>("SELECT string_agg(version::text, ',' ORDER BY version) AS v FROM schema_migrations")).rows[0].v;
    if ((await versions(source)) !== (await versions(target)))
      throw new MoveError(`${where} has other migrations than the embedded store; move into a new, empty database`);
    const problems = await copyListProblems(source.pool);
    if (problems.length > 0) throw new MoveError(`this version of Queuemate cannot copy the store: ${problems.join('; ')}`);

    const src = await source.pool.connect();
    const dst = await target.pool.connect();
    try {
      const xidsAdvanced = await advanceXid(dst, await highestXid(src), opts.progress);
      // the same text on both sides: row_to_json writes timestamps in the session's time zone
      await src.query(`SET TimeZone = 'UTC'`);
      await dst.query(`SET TimeZone = 'UTC'`);
      await src.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      await dst.query('BEGIN');
      try {
        const { rows: triggered } = await dst.query<{ name: string }>(
          `SELECT DISTINCT c.relname AS name FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
           JOIN pg_namespace n ON n.oid = c.relnamespace WHERE NOT t.tgisinternal AND n.nspname = current_schema()`,
        );
        for (const t of triggered) await dst.query(`ALTER TABLE ${ident(t.name)} DISABLE TRIGGER USER`);

        const tables: TableReport[] = [];
        for (const table of TABLES) {
          const expected = await verify(src, table);
          const key = await primaryKey(src, table);
          const cols = (await columnsOf(dst, table)).map(ident).join(', ');
          const insert = `INSERT INTO ${ident(table)} (${cols}) OVERRIDING SYSTEM VALUE SELECT ${cols} FROM json_populate_recordset(NULL::${ident(table)}, $1::json)`;
          await src.query(
            `DECLARE rows NO SCROLL CURSOR FOR SELECT row_to_json(t)::text AS r FROM ${ident(table)} t ORDER BY ${key.map(ident).join(', ')}`,
          );
          let copied = 0;
          let shown = Date.now();
          for (;;) {
            const { rows } = await src.query<{ r: string }>(`FETCH ${opts.batchRows ?? 1000} FROM rows`);
            if (rows.length === 0) break;
            await dst.query(insert, [`[${rows.map((r) => r.r).join(',')}]`]);
            copied += rows.length;
            if (Date.now() - shown > 2000) {
              shown = Date.now();
              opts.progress(`  ${table}: ${copied} of ${expected.rows} rows`);
            }
          }
          await src.query('CLOSE rows');
          const got = await verify(dst, table);
          if (got.rows !== expected.rows || got.checksum !== expected.checksum)
            throw new MoveError(
              `table ${table} did not copy exactly (embedded: ${expected.rows} rows, checksum ${expected.checksum}; PostgreSQL: ${got.rows} rows, checksum ${got.checksum}); nothing was written`,
            );
          tables.push({ table, rows: got.rows, checksum: got.checksum });
          opts.progress(`${table}: ${got.rows} rows, verified`);
        }

        const seqs = await sequencesOf(src);
        const targetSeqs = await sequencesOf(dst);
        if (seqs.join() !== targetSeqs.join())
          throw new MoveError(
            `the sequences differ (embedded: ${seqs.join(', ')}; PostgreSQL: ${targetSeqs.join(', ')}); nothing was written`,
          );
        for (const s of seqs) {
          const { rows } = await src.query<{ last_value: string; is_called: boolean }>(
            `SELECT last_value::text, is_called FROM ${ident(s)}`,
          );
          await dst.query('SELECT setval($1::regclass, $2::bigint, $3)', [ident(s), rows[0].last_value, rows[0].is_called]);
        }
        for (const t of triggered) await dst.query(`ALTER TABLE ${ident(t.name)} ENABLE TRIGGER USER`);
        await dst.query('COMMIT');
        await src.query('COMMIT');
        return { tables, sequences: seqs.length, xidsAdvanced };
      } catch (err) {
        await dst.query('ROLLBACK').catch(() => {});
        await src.query('ROLLBACK').catch(() => {});
        throw err;
      }
    } finally {
      src.release();
      dst.release();
    }
  } finally {
    await target?.close();
    await source.close();
  }
}
