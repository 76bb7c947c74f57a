/**
 * The database cost of one derived write of the funnel (default: writing events): the funnel's
 * statement for a batch of task changes (history, comments, KPI events, run counts, Failure clears,
 * events, queue counter deltas) with and without that write, alternating, each in a transaction
 * rolled back afterwards so that every round starts from the same state.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node --import tsx bench/events-cost.ts [--batch 64] [--rounds 300] [--write outbox|count_deltas]
 *   node --import tsx bench/events-cost.ts --lite …   (the embedded store, in memory)
 *
 * Prints one JSON line with the median time of each and their ratio. Alternating rounds share the
 * machine's noise, so the ratio is meaningful even when the absolute times are not.
 */
import crypto from 'node:crypto';
import pg from 'pg';
import { sql } from 'kysely';
import { PGlite } from '@electric-sql/pglite';
import { openStore, PREPARED, type Store } from '../src/db/store.js';
import { migrate } from '../src/db/migrator.js';
import { createTenant } from '../src/tenants/service.js';
import { createProcess } from '../src/processes/service.js';
import { derivedWrites } from '../src/tasks/funnel.js';

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
}
const BATCH = arg('batch', 64);
const WRITE = process.argv.includes('--write') ? process.argv[process.argv.indexOf('--write') + 1] : 'outbox';
const ROUNDS = arg('rounds', 300);
const LITE = process.argv.includes('--lite');
const BASE_URL = process.env.DATABASE_URL;
if (!BASE_URL && !LITE) {
  console.error('bench: set DATABASE_URL, or pass --lite (the embedded store, in memory)');
  process.exit(2);
}

const name = `qm_bench_${crypto.randomBytes(4).toString('hex')}`;
let admin: pg.Client | null = null;
let store: Store;
if (LITE) store = await openStore({ databaseUrl: null, dataDir: '', pglite: await PGlite.create() });
else {
  admin = new pg.Client({ connectionString: BASE_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const u = new URL(BASE_URL!);
  u.pathname = `/${name}`;
  store = await openStore({ databaseUrl: u.toString(), dataDir: '', poolSize: 2 });
}
try {
  await migrate(store);
  const { tenant } = await createTenant(store.db, { clientId: 'bench' });
  const proc = await createProcess(store.db, tenant.id, { processKey: 'bench' });
  await sql`INSERT INTO tasks (tenant_id, process_id, queue, data, activation_date, queue_position, created_at, created_by_type, updated_at)
    SELECT ${tenant.id}, ${proc.id}, 'Ready', '{}'::jsonb, now(), now(), now(), 'system', now() FROM generate_series(1, ${BATCH})`.execute(
    store.db,
  );

  // a batch of Solved hand-backs as the funnel's change relation
  const changes = sql`changes AS (
    SELECT tenant_id, id AS task_id, process_id, now() AS at, 'mate'::text AS actor_type, 1::bigint AS actor_id, 'bench-mate'::text AS actor_name,
      'req'::text AS request_id, 'Solved'::text AS action, 'Ready'::text AS from_queue, false AS from_error, 'Solved'::text AS queue, false AS error,
      NULL::text AS reason, NULL::text AS comment, 0 AS retry_count, NULL::jsonb AS details, 'Solved'::text AS kpi_outcome, 1 AS kpi_entries,
      0::bigint AS kpi_seconds, NULL::bigint AS run_id, 1::bigint AS mate_id, true AS clears_failure,
      false AS deleted, urgent, false AS locked, activation_date, deadline,
      false AS from_deleted, urgent AS from_urgent, true AS from_locked, activation_date AS from_activation_date, deadline AS from_deadline,
      updated_at AS from_updated_at
    FROM tasks WHERE tenant_id = ${tenant.id} LIMIT ${BATCH})`;
  const statement = (withEvents: boolean) => {
    const writes = derivedWrites('changes').filter(([n]) => withEvents || n !== WRITE);
    // prepared, as the funnel's statements are (planning once per connection, not per batch)
    return sql`${sql.raw(PREPARED)} WITH ${changes}, ${sql.join(
      writes.map(([n, q]) => sql`${sql.raw(n)} AS (${q})`),
      sql`,\n`,
    )} SELECT count(*) FROM changes`;
  };
  const time = async (withEvents: boolean) =>
    store.db
      .transaction()
      .execute(async (trx) => {
        const t0 = performance.now();
        await statement(withEvents).execute(trx);
        const ms = performance.now() - t0;
        await sql`ROLLBACK`.execute(trx).catch(() => {});
        throw Object.assign(new Error('rollback'), { ms });
      })
      .catch((e: { ms?: number }) => {
        if (e.ms === undefined) throw e;
        return e.ms;
      });
  for (let i = 0; i < 20; i++) await time(i % 2 === 0); // warm-up
  const on: number[] = [];
  const off: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    if (i % 2) {
      on.push(await time(true));
      off.push(await time(false));
    } else {
      off.push(await time(false));
      on.push(await time(true));
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const withMs = median(on);
  const withoutMs = median(off);
  console.log(
    JSON.stringify({
      store: LITE ? 'pglite' : 'postgres',
      write: WRITE,
      batch: BATCH,
      rounds: ROUNDS,
      medianMsWith: +withMs.toFixed(3),
      medianMsWithout: +withoutMs.toFixed(3),
      ratio: +(withMs / withoutMs).toFixed(3),
    }),
  );
} finally {
  await store.close();
  if (admin) {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}
