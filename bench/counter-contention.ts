/**
 * Why the queue counters are append-only (docs/operations.md "Queue counters"): M concurrent
 * clients each commit transactions that write a task-like row and then count it, all for the same
 * process, either by updating one counter row of that process (held until commit, so the
 * transactions queue behind each other) or by appending a delta row (nothing shared). Alternating
 * rounds, transactions per second of each.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node --import tsx bench/counter-contention.ts [--clients 16] [--seconds 3] [--rounds 3]
 */
import crypto from 'node:crypto';
import pg from 'pg';

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
}
const CLIENTS = arg('clients', 16);
const SECONDS = arg('seconds', 3);
const ROUNDS = arg('rounds', 3);
const BASE_URL = process.env.DATABASE_URL;
if (!BASE_URL) {
  console.error('bench: set DATABASE_URL');
  process.exit(2);
}

const name = `qm_bench_${crypto.randomBytes(4).toString('hex')}`;
const admin = new pg.Client({ connectionString: BASE_URL });
await admin.connect();
await admin.query(`CREATE DATABASE ${name}`);
const u = new URL(BASE_URL);
u.pathname = `/${name}`;
const pool = new pg.Pool({ connectionString: u.toString(), max: CLIENTS });
// the DROP … WITH (FORCE) at the end terminates connections the pool may still be closing
pool.on('error', () => {});
try {
  await pool.query(`CREATE TABLE work (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, process_id bigint, at timestamptz);
    CREATE TABLE counter (process_id bigint PRIMARY KEY, n bigint NOT NULL);
    CREATE TABLE delta (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, process_id bigint, n bigint);
    INSERT INTO counter VALUES (1, 0);`);
  const statements = {
    update:
      'WITH w AS (INSERT INTO work (process_id, at) VALUES (1, now()) RETURNING process_id) UPDATE counter SET n = n + 1 WHERE process_id = 1',
    append:
      'WITH w AS (INSERT INTO work (process_id, at) VALUES (1, now()) RETURNING process_id) INSERT INTO delta (process_id, n) SELECT process_id, 1 FROM w',
  };
  const run = async (kind: keyof typeof statements) => {
    const until = Date.now() + SECONDS * 1000;
    let done = 0;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        const c = await pool.connect();
        try {
          while (Date.now() < until) {
            // one statement, autocommitted, as a take is
            await c.query({ name: kind, text: statements[kind] });
            done++;
          }
        } finally {
          c.release();
        }
      }),
    );
    return done / SECONDS;
  };
  await run('update');
  await run('append');
  const out: { update: number; append: number }[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const update = await run('update');
    const append = await run('append');
    out.push({ update: Math.round(update), append: Math.round(append) });
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(
    JSON.stringify({
      clients: CLIENTS,
      rounds: out,
      medianPerSecond: { update: med(out.map((o) => o.update)), append: med(out.map((o) => o.append)) },
      ratio: +(med(out.map((o) => o.append)) / med(out.map((o) => o.update))).toFixed(2),
    }),
  );
} finally {
  await pool.end();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
}
