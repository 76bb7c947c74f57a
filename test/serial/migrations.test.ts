/**
 * Migrations: applied once and in order, idempotent, recorded in schema_migrations, refused when an
 * applied one was changed, and safe when two processes run them at once (PostgreSQL).
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { loadMigrations, migrate, isMigrated, latestVersion, MigrationError } from '../../src/db/migrator.js';
import { emptyDatabase, DATABASE_URL, STORE_KIND } from '../helpers/db.js';
import { runCli, killAll, tempDir, oneLineError, EXPECTED_TABLES } from '../foundation-support.js';

after(killAll);

function tempMigrations(files: Record<string, string>): string {
  const dir = tempDir('qm-migrations-');
  for (const [name, sql] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), sql);
  return dir;
}

test(`${STORE_KIND}: migrating an empty database creates the whole schema, once`, async () => {
  const db = await emptyDatabase();
  try {
    assert.equal(await isMigrated(db.store), false);
    const first = await migrate(db.store);
    assert.deepEqual(
      first.applied,
      loadMigrations().map((m) => m.name),
    );
    assert.equal(await isMigrated(db.store), true);

    const { rows: tables } = await db.store.pool.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name",
    );
    assert.deepEqual(
      tables.map((t) => t.table_name),
      [...EXPECTED_TABLES].sort(),
    );

    const { rows } = await db.store.pool.query<{ version: number; name: string; checksum: string; applied_at: Date }>(
      'SELECT version, name, checksum, applied_at FROM schema_migrations ORDER BY version',
    );
    assert.deepEqual(
      rows.map((r) => [r.version, r.name, r.checksum]),
      loadMigrations().map((m) => [m.version, m.name, m.checksum]),
    );
    assert.ok(rows.every((r) => r.applied_at instanceof Date));

    const again = await migrate(db.store);
    assert.deepEqual(again.applied, [], 'a second run has nothing to do');
    const { rows: count } = await db.store.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM schema_migrations');
    assert.equal(count[0].n, latestVersion());
  } finally {
    await db.close();
  }
});

test(`${STORE_KIND}: migrations apply in order, each in its own transaction; a failing one leaves the earlier ones`, async () => {
  const dir = tempMigrations({
    '0001_one.sql': 'CREATE TABLE one (id int);',
    '0002_two.sql': 'CREATE TABLE two (id int); INSERT INTO one VALUES (1);',
    '0003_bad.sql': 'CREATE TABLE three (id int); SELECT no_such_function();',
  });
  const db = await emptyDatabase();
  try {
    await assert.rejects(migrate(db.store, loadMigrations(dir)), (err: unknown) => {
      assert.ok(err instanceof MigrationError);
      assert.match(err.message, /^migration 0003_bad failed: .*no_such_function/);
      return true;
    });
    const { rows } = await db.store.pool.query<{ name: string }>('SELECT name FROM schema_migrations ORDER BY version');
    assert.deepEqual(
      rows.map((r) => r.name),
      ['0001_one', '0002_two'],
    );
    const { rows: three } = await db.store.pool.query("SELECT to_regclass('three') AS t");
    assert.equal(three[0].t, null, 'the failed migration was rolled back');

    // Fixed, it applies on the next run and only it does.
    fs.writeFileSync(path.join(dir, '0003_bad.sql'), 'CREATE TABLE three (id int);');
    assert.deepEqual((await migrate(db.store, loadMigrations(dir))).applied, ['0003_bad']);
  } finally {
    await db.close();
  }
});

test(`${STORE_KIND}: an applied migration that was changed is refused, and nothing runs`, async () => {
  const dir = tempMigrations({ '0001_one.sql': 'CREATE TABLE one (id int);' });
  const db = await emptyDatabase();
  try {
    await migrate(db.store, loadMigrations(dir));
    fs.writeFileSync(path.join(dir, '0001_one.sql'), 'CREATE TABLE one (id bigint);');
    fs.writeFileSync(path.join(dir, '0002_two.sql'), 'CREATE TABLE two (id int);');
    await assert.rejects(migrate(db.store, loadMigrations(dir)), (err: unknown) => {
      assert.ok(err instanceof MigrationError);
      assert.equal(err.message, 'migration 0001_one was changed after it was applied; migrations are append-only');
      return true;
    });
    const { rows } = await db.store.pool.query("SELECT to_regclass('two') AS t");
    assert.equal(rows[0].t, null, 'no later migration ran');
  } finally {
    await db.close();
  }
});

test(`${STORE_KIND}: a database newer than this code is refused`, async () => {
  const db = await emptyDatabase();
  try {
    await migrate(db.store, loadMigrations(tempMigrations({ '0001_one.sql': 'SELECT 1;', '0002_two.sql': 'SELECT 2;' })));
    await assert.rejects(
      migrate(db.store, loadMigrations(tempMigrations({ '0001_one.sql': 'SELECT 1;' }))),
      /the database has migration 0002_two, which this version of Queuemate does not know/,
    );
  } finally {
    await db.close();
  }
});

test('migration numbers rise strictly (a gap is allowed, a repeat is not); other files are ignored', () => {
  assert.throws(
    () => loadMigrations(tempMigrations({ '0001_a.sql': '', '0002_b.sql': '', '0002_c.sql': '' })),
    /0002_c\.sql is out of sequence \(expected a number above 0002\)/,
  );
  assert.deepEqual(
    loadMigrations(tempMigrations({ '0001_a.sql': '', '0003_c.sql': '' })).map((m) => m.version),
    [1, 3],
  );
  const ms = loadMigrations(tempMigrations({ '0001_a.sql': 'SELECT 1;', 'README.md': '', '0002_b.sql.orig': '' }));
  assert.deepEqual(
    ms.map((m) => m.name),
    ['0001_a'],
  );
  assert.match(ms[0].checksum, /^[0-9a-f]{64}$/);
});

test('the shipped migrations are numbered from 0001 and named in lower case', () => {
  const files = fs.readdirSync(path.resolve('src/db/migrations'));
  assert.ok(files.length >= 1);
  for (const f of files) assert.match(f, /^\d{4}_[a-z0-9_]+\.sql$/, `${f} follows NNNN_name.sql`);
  assert.equal(loadMigrations().length, files.length);
});

test(
  'two `queuemate migrate` processes at once: both succeed and each migration is applied exactly once',
  {
    skip: DATABASE_URL
      ? false
      : 'PostgreSQL only: set DATABASE_URL (the embedded store allows one process per data directory; see foundation-lock)',
  },
  async () => {
    const db = await emptyDatabase();
    try {
      const env = { DATABASE_URL: db.url! };
      const [a, b] = await Promise.all([
        runCli(['migrate', '--json'], { env, timeoutMs: 30_000 }),
        runCli(['migrate', '--json'], { env, timeoutMs: 30_000 }),
      ]);
      assert.equal(a.code, 0, a.stderr);
      assert.equal(b.code, 0, b.stderr);
      const applied = [...JSON.parse(a.stdout).applied, ...JSON.parse(b.stdout).applied];
      assert.deepEqual(
        applied.sort(),
        loadMigrations().map((m) => m.name),
        'every migration applied by exactly one of the two',
      );
      const { rows } = await db.store.pool.query<{ version: number; n: number }>(
        'SELECT version, count(*)::int AS n FROM schema_migrations GROUP BY version ORDER BY version',
      );
      assert.deepEqual(
        rows.map((r) => r.version),
        loadMigrations().map((m) => m.version),
      );
      assert.ok(rows.every((r) => r.n === 1));
      assert.equal(await isMigrated(db.store), true);
    } finally {
      await db.close();
    }
  },
);

test(
  '`queuemate migrate` refuses a changed migration with one line (PostgreSQL)',
  { skip: DATABASE_URL ? false : 'PostgreSQL only: set DATABASE_URL' },
  async () => {
    const db = await emptyDatabase();
    try {
      await migrate(db.store);
      await db.store.pool.query("UPDATE schema_migrations SET checksum = 'x' WHERE version = 1");
      const r = await runCli(['migrate'], { env: { DATABASE_URL: db.url! }, timeoutMs: 20_000 });
      assert.equal(r.code, 1);
      assert.equal(oneLineError(r.stderr), 'queuemate: migration 0001_schema was changed after it was applied; migrations are append-only');
    } finally {
      await db.close();
    }
  },
);

test(`${STORE_KIND}: 0012 turns task events written one row each into rows of task events; ids, types, payloads and deliveries are kept`, async () => {
  const { sql } = await import('kysely');
  const { createTenant } = await import('../../src/tenants/service.js');
  const { createProcess } = await import('../../src/processes/service.js');
  const { readEvents, RANK_BITS } = await import('../../src/events/store.js');
  const db = await emptyDatabase();
  try {
    await migrate(
      db.store,
      loadMigrations().filter((m) => m.version < 12),
    );
    const { tenant } = await createTenant(db.store.db, { clientId: 'mig12' });
    const proc = await createProcess(db.store.db, tenant.id, { processKey: 'Work' });
    const at = new Date('2026-02-01T08:00:00.000Z');
    // as migration 0010's writers did: one row per task event, pointing at its history row,
    // with another event between them in the same transaction
    const written = await db.store.db.transaction().execute(async (trx) => {
      const ids: number[] = [];
      for (let i = 0; i < 2; i++) {
        const task = await sql<{ id: number }>`INSERT INTO tasks (tenant_id, process_id, queue, data, activation_date, queue_position,
            created_at, created_by_type, updated_at)
          VALUES (${tenant.id}, ${proc.id}, 'Ready', '{}'::jsonb, ${at}, ${at}, ${at}, 'system', ${at}) RETURNING id`.execute(trx);
        const h = await sql<{ id: number }>`INSERT INTO task_history (tenant_id, task_id, process_id, at, actor_type, actor_name, action,
            to_queue, from_error)
          VALUES (${tenant.id}, ${task.rows[0].id}, ${proc.id}, ${at}, 'system', 'system', 'Created', 'Ready', false) RETURNING id`.execute(
          trx,
        );
        await sql`INSERT INTO outbox_events (tenant_id, type, payload, created_at, history_id)
          VALUES (${tenant.id}, 'task.created', '{}'::jsonb, ${at}, ${h.rows[0].id})`.execute(trx);
        if (i === 0)
          await sql`INSERT INTO outbox_events (tenant_id, type, payload, created_at) VALUES (${tenant.id}, 'test.between', '{}'::jsonb, ${at})`.execute(
            trx,
          );
        ids.push(Number(task.rows[0].id), Number(h.rows[0].id));
      }
      return ids;
    });
    const rows = (
      await sql<{
        id: number;
        xid: string;
      }>`SELECT id, xid::text AS xid FROM outbox_events WHERE tenant_id = ${tenant.id} ORDER BY id`.execute(db.store.db)
    ).rows;
    assert.equal(rows.length, 3);
    const eventId = (rank: number) => Number((BigInt(rows[0].xid) << BigInt(RANK_BITS)) + BigInt(rank));
    const sub = await sql<{
      id: number;
    }>`INSERT INTO webhook_subscriptions (tenant_id, url, secret) VALUES (${tenant.id}, 'https://example.com/h', 'whsec_x')
      RETURNING id`.execute(db.store.db);
    await sql`INSERT INTO webhook_deliveries (tenant_id, subscription_id, event_id, event_row_id, status, created_at)
      VALUES (${tenant.id}, ${sub.rows[0].id}, ${eventId(3)}, ${rows[2].id}, 'pending', ${at}),
             (${tenant.id}, ${sub.rows[0].id}, ${eventId(2)}, ${rows[1].id}, 'delivered', ${at})`.execute(db.store.db);

    // 0012 and whatever follows it (readers use the functions of the latest schema)
    assert.equal((await migrate(db.store)).applied[0], '0012_task_events_per_statement');
    const evs = await readEvents(db.store.db, tenant.id, 0, 100);
    assert.deepEqual(
      evs.map((e) => [e.id, e.type, e.payload.taskId ?? null, e.payload.at]),
      [
        [eventId(1), 'task.created', written[0], at.toISOString()],
        [eventId(2), 'test.between', null, at.toISOString()],
        [eventId(3), 'task.created', written[2], at.toISOString()],
      ],
    );
    const stored = await sql<{ type: string; history_ids: number[] | null }>`SELECT type, history_ids FROM outbox_events
      WHERE tenant_id = ${tenant.id} ORDER BY id`.execute(db.store.db);
    assert.deepEqual(
      stored.rows.map((r) => [r.type, r.history_ids?.map(Number) ?? null]),
      [
        ['task', [written[1]]],
        ['test.between', null],
        ['task', [written[3]]],
      ],
    );
    const deliveries = await sql<{ event_id: number; event_history_id: number | null }>`SELECT event_id, event_history_id
      FROM webhook_deliveries WHERE tenant_id = ${tenant.id} ORDER BY event_id`.execute(db.store.db);
    assert.deepEqual(
      deliveries.rows.map((r) => [Number(r.event_id), r.event_history_id === null ? null : Number(r.event_history_id)]),
      [
        [eventId(2), null],
        [eventId(3), written[3]],
      ],
    );
  } finally {
    await db.close();
  }
});

test(`${STORE_KIND}: 0013 keeps task ids and earlier tokens working (found by hash alone, marked legacy); new ids are random, new tokens name their tenant`, async () => {
  const { sql } = await import('kysely');
  const { createTenant } = await import('../../src/tenants/service.js');
  const { createUser } = await import('../../src/accounts/service.js');
  const { createProcess } = await import('../../src/processes/service.js');
  const { authenticatePersonToken, createPersonalToken } = await import('../../src/accounts/sessions.js');
  const { randomSecret, sha256 } = await import('../../src/lib/secrets.js');
  const db = await emptyDatabase();
  try {
    await migrate(
      db.store,
      loadMigrations().filter((m) => m.version < 13),
    );
    const { tenant } = await createTenant(db.store.db, { clientId: 'mig13' });
    const user = await createUser(db.store.db, tenant.id, { username: 'ann', password: 'a-long-enough-password', role: 'agent' });
    const proc = await createProcess(db.store.db, tenant.id, { processKey: 'Work' });
    const at = new Date('2026-02-01T08:00:00.000Z');
    // as 0.1.0 wrote them: a task with a permuted counter id, a personal token that is the secret alone
    const task = await sql<{ id: number }>`INSERT INTO tasks (tenant_id, process_id, queue, data, activation_date, queue_position,
        created_at, created_by_type, updated_at)
      VALUES (${tenant.id}, ${proc.id}, 'Ready', '{}'::jsonb, ${at}, ${at}, ${at}, 'system', ${at}) RETURNING id`.execute(db.store.db);
    const oldId = Number(task.rows[0].id);
    const oldToken = `qmp_${randomSecret()}`;
    await db.store.db
      .insertInto('user_tokens')
      .values({ tenant_id: tenant.id, user_id: user.id, kind: 'personal', name: 'old', token_hash: sha256(oldToken), created_at: at })
      .execute();

    assert.equal((await migrate(db.store)).applied[0], '0013_tenant_keys');
    const now = new Date('2026-02-02T08:00:00.000Z');
    const person = await authenticatePersonToken(db.store.db, oldToken, 'personal', now);
    assert.equal(person?.user.username, 'ann');
    const rows = await db.store.db.selectFrom('user_tokens').select(['name', 'legacy']).where('tenant_id', '=', tenant.id).execute();
    assert.deepEqual(rows, [{ name: 'old', legacy: true }]);
    const fresh = await createPersonalToken(
      db.store.db,
      tenant.id,
      user.id,
      { name: 'new', expiresAt: new Date('2026-03-01T00:00:00Z') },
      now,
    );
    assert.match(fresh.token, new RegExp(`^qmp_${tenant.id.toString(36)}_`));
    assert.equal((await authenticatePersonToken(db.store.db, fresh.token, 'personal', now))?.user.username, 'ann');
    // the old task keeps its id, and the counter and key behind it are gone
    const ids = await sql<{ id: number }>`SELECT id FROM tasks WHERE tenant_id = ${tenant.id}`.execute(db.store.db);
    assert.deepEqual(
      ids.rows.map((r) => Number(r.id)),
      [oldId],
    );
    const gone = await sql<{
      n: number;
    }>`SELECT count(*)::int AS n FROM pg_class WHERE relname IN ('id_secret', 'tasks_id_counter', 'runs_id_counter')`.execute(db.store.db);
    assert.equal(gone.rows[0].n, 0);
  } finally {
    await db.close();
  }
});
