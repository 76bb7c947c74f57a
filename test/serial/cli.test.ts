/**
 * The real `queuemate` command line in child processes: first start and restart, health, graceful
 * shutdown, the scripting commands, and one clear line for every kind of bad input. The flows run
 * on the store of the suite: a temporary PGlite data directory, or a fresh PostgreSQL database
 * when DATABASE_URL is set.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { openStore, type Store } from '../../src/db/store.js';
import { emptyDatabase, DATABASE_URL, STORE_KIND } from '../helpers/db.js';
import { spawnCli, runCli, killAll, tempDir, oneLineError, ROOT, type CliProcess } from '../foundation-support.js';

after(killAll);

const VERSION: string = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version;

const LISTENING = /Queuemate is listening on (http:\/\/127\.0\.0\.1:\d+) \(store: ([^)]*)\)/;

async function startServer(target: Target): Promise<{ proc: CliProcess; url: string }> {
  const proc = spawnCli(['start', '--port', '0', ...target.args], { env: target.env, timeoutMs: 60_000 });
  const m = await proc.waitFor(LISTENING, 45_000);
  return { proc, url: m[1] };
}

async function stop(proc: CliProcess, signal: NodeJS.Signals = 'SIGTERM') {
  proc.child.kill(signal);
  return proc.exited;
}

interface Target {
  args: string[];
  env: Record<string, string>;
  /** A store on the same data, opened in this process once the servers have stopped. */
  open(): Promise<Store>;
  close(): Promise<void>;
}

async function freshTarget(): Promise<Target> {
  if (DATABASE_URL) {
    const db = await emptyDatabase();
    return { args: [], env: { DATABASE_URL: db.url! }, open: async () => db.store, close: db.close };
  }
  const dir = tempDir('qm-cli-');
  let store: Store | null = null;
  return {
    args: ['--data-dir', dir],
    env: {},
    open: async () => (store = await openStore({ databaseUrl: null, dataDir: dir })),
    close: async () => {
      await store?.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

test('bad configuration, bad usage and an unreachable database: one clear line, non-zero exit', { concurrency: true }, async (t) => {
  const dir = tempDir('qm-cli-bad-');
  const cases: Array<[string, string[], Record<string, string>, number, RegExp]> = [
    [
      'PORT=abc',
      ['start'],
      { PORT: 'abc' },
      1,
      /^queuemate: Invalid environment variable \(PORT \/ --port\): "abc" is not a whole number$/,
    ],
    ['--port 99999', ['start', '--port', '99999'], {}, 1, /^queuemate: Invalid option \(PORT \/ --port\): 99999 is outside 0\.\.65535$/],
    [
      'LOG_LEVEL=loud',
      ['start'],
      { LOG_LEVEL: 'loud' },
      1,
      /^queuemate: Invalid environment variable \(LOG_LEVEL \/ --log-level\): "loud" is not one of fatal, /,
    ],
    [
      'DATABASE_URL=mysql://x',
      ['migrate'],
      { DATABASE_URL: 'mysql://x' },
      1,
      /^queuemate: Invalid environment variable \(DATABASE_URL \/ --database-url\): expected a postgres:\/\/ URL, got mysql:\/\/$/,
    ],
    ['short token secret', ['start'], { QUEUEMATE_TOKEN_SECRET: 'short' }, 1, /QUEUEMATE_TOKEN_SECRET: must be at least 32 characters$/],
    ['unknown flag', ['start', '--prot', '8080'], {}, 2, /^queuemate: Unknown option --prot$/],
    ['unknown flag without value', ['start', '--verbose'], {}, 2, /^queuemate: Unknown option --verbose$/],
    ['unknown command', ['serve'], {}, 2, /^queuemate: Unknown command "serve"\. Run "queuemate help"\.$/],
    ['missing option', ['tenant', 'create'], {}, 2, /^queuemate: Missing option --client-id$/],
    [
      'bad role',
      ['user', 'create', '--tenant', 'demo', '--username', 'x', '--role', 'boss'],
      {},
      2,
      /^queuemate: --role must be one of admin, developer, agent, viewer$/,
    ],
    [
      '--fields not JSON',
      ['process', 'create', '--tenant', 'demo', '--key', 'p', '--fields', '[{'],
      {},
      2,
      /^queuemate: Option --fields must be JSON$/,
    ],
    [
      'unreachable database',
      ['start'],
      { DATABASE_URL: 'postgres://postgres:pw@127.0.0.1:1/x' },
      1,
      /^queuemate: cannot reach PostgreSQL at postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:1\/x: connect ECONNREFUSED 127\.0\.0\.1:1$/,
    ],
    [
      'unusable data directory',
      ['migrate', '--data-dir', path.join(dir, 'file', 'sub')],
      {},
      1,
      /^queuemate: cannot use data directory .*file\/sub: ENOTDIR/,
    ],
  ];
  fs.writeFileSync(path.join(dir, 'file'), '');
  // four children at a time: each loads the TypeScript sources cold, and seventeen at once on two
  // busy cores measured the machine, not the command
  for (let i = 0; i < cases.length; i += 4) {
    await Promise.all(
      cases.slice(i, i + 4).map(([name, args, env, code, message]) =>
        t.test(name, async () => {
          const r = await runCli(args, { env, timeoutMs: 20_000 });
          assert.equal(r.code, code, `exit code; stderr: ${r.stderr}`);
          assert.match(oneLineError(r.stderr), message);
          assert.equal(r.stdout, '');
          assert.ok(r.ms < 15_000, `fails fast (${r.ms} ms)`);
        }),
      ),
    );
  }
});

test('--version and version print the version of package.json', async () => {
  for (const args of [['--version'], ['version']]) {
    const r = await runCli(args, { timeoutMs: 20_000 });
    assert.deepEqual([r.code, r.stdout, r.stderr], [0, `${VERSION}\n`, ''], args.join(' '));
  }
});

test('help lists the commands and every setting', async () => {
  const r = await runCli(['help'], { timeoutMs: 20_000 });
  assert.equal(r.code, 0);
  assert.equal(r.stderr, '');
  for (const word of ['start', 'migrate', 'tenant create', 'user create', 'mate create', 'process create', 'DATABASE_URL', '--data-dir']) {
    assert.ok(r.stdout.includes(word), `help mentions ${word}`);
  }
});

test(`${STORE_KIND}: first start prints the credentials once; health; SIGTERM exits 0; a restart keeps the data`, async () => {
  const target = await freshTarget();
  try {
    let first: { proc: CliProcess; url: string };
    let other: { proc: CliProcess; url: string } | null = null;
    if (DATABASE_URL) {
      // Several server processes may share one PostgreSQL database, even on their very first start.
      const both = await Promise.all([startServer(target), startServer(target)]);
      const withCredentials = both.filter((s) => s.proc.stdout().includes('API secret'));
      assert.equal(withCredentials.length, 1, 'two first starts at once set up one demo tenant, printed once');
      first = withCredentials[0];
      other = both.find((s) => s !== first)!;
    } else {
      first = await startServer(target);
    }
    const out = first.proc.stdout();
    const secret = out.match(/^ {2}API secret: +(\S+)$/m)?.[1];
    const admin = out.match(/^ {2}Admin: +admin \/ (\S+)$/m)?.[1];
    const mate = out.match(/^ {2}Mate: +demo-mate \/ (\S+)$/m)?.[1];
    assert.match(out, /^ {2}Client Id: +demo$/m);
    assert.match(out, /^ {2}Process: +demo$/m);
    assert.ok(secret && secret.length >= 32, `an API secret is printed:\n${out}`);
    assert.ok(admin && admin.length >= 12, 'an admin password is printed');
    assert.ok(mate && mate.length >= 12, 'a Mate password is printed');
    assert.ok(out.includes(`Address:        ${first.url}/`), 'the web address has the real port');
    assert.ok(out.includes(`curl -s -X POST ${first.url}/connect/token`), 'a curl for a token');
    assert.ok(out.includes(`client_secret='${secret}'`) && out.includes(`password='${mate}'`), 'the curl carries the credentials');
    assert.equal(first.proc.stderr(), '');

    const health = await fetch(`${first.url}/healthz`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: 'ok', version: VERSION });
    const ready = await fetch(`${first.url}/readyz`);
    assert.equal(ready.status, 200);
    const readyBody = await ready.json();
    assert.equal(readyBody.status, 'ready');
    assert.equal(readyBody.events.pendingDeliveries, 0, 'the events backlog is reported (docs/events.md)');

    if (!DATABASE_URL) {
      // The embedded store admits one process: a second one fails fast with one line.
      const second = await runCli(['start', '--port', '0', ...target.args], { timeoutMs: 20_000 });
      assert.notEqual(second.code, 0);
      assert.equal(
        oneLineError(second.stderr),
        `queuemate: data directory ${target.args[1]} in use by PID ${first.proc.pid}; stop that process or choose another --data-dir`,
      );
      assert.equal((await fetch(`${first.url}/healthz`)).status, 200, 'the first one keeps serving');
    } else {
      assert.equal((await fetch(`${other!.url}/readyz`)).status, 200, 'the second process serves the same database');
      assert.deepEqual(await stop(other!.proc), { code: 0, signal: null });
    }

    const t0 = Date.now();
    assert.deepEqual(await stop(first.proc), { code: 0, signal: null });
    assert.ok(Date.now() - t0 < 10_000, 'shuts down promptly');
    assert.equal(first.proc.stderr(), '', 'a clean shutdown writes nothing to stderr');
    if (!DATABASE_URL) assert.equal(fs.existsSync(path.join(target.args[1], 'queuemate.lock')), false, 'the lock is released');

    const again = await startServer(target);
    assert.doesNotMatch(again.proc.stdout(), /API secret|Client Id|Admin:|demo-mate/, 'credentials are printed only on the first start');
    assert.equal((await fetch(`${again.url}/readyz`)).status, 200);
    assert.deepEqual(await stop(again.proc), { code: 0, signal: null });

    const store = await target.open();
    const tenants = await store.db.selectFrom('tenants').select(['client_id']).execute();
    assert.deepEqual(
      tenants.map((r) => r.client_id),
      ['demo'],
      'one demo tenant after a restart',
    );
    const counts = await store.pool.query<{ users: number; mates: number; processes: number; fields: number }>(`SELECT
      (SELECT count(*)::int FROM users) AS users, (SELECT count(*)::int FROM mates) AS mates,
      (SELECT count(*)::int FROM processes) AS processes, (SELECT count(*)::int FROM process_fields) AS fields`);
    assert.deepEqual(counts.rows[0], { users: 1, mates: 1, processes: 1, fields: 4 });
    const fields = await store.pool.query<{ name: string; type: string; is_key: boolean }>(
      'SELECT name, type, is_key FROM process_fields ORDER BY position',
    );
    assert.deepEqual(fields.rows, [
      { name: 'coreSystemKey', type: 'text', is_key: true },
      { name: 'dropdownField', type: 'dropdown', is_key: false },
      { name: 'textField', type: 'text', is_key: false },
      { name: 'numberField', type: 'number', is_key: false },
    ]);
  } finally {
    await killAll();
    await target.close();
  }
});

test(`${STORE_KIND}: tenant, Mate, user and process create print JSON; bad input gives one line`, async () => {
  const target = await freshTarget();
  const cli = (...args: string[]) => runCli([...args, ...target.args], { env: target.env, timeoutMs: 30_000 });
  const json = async (...args: string[]) => {
    const r = await cli(...args, '--json');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
    return JSON.parse(r.stdout) as Record<string, unknown>;
  };
  try {
    const tenant = await json('tenant', 'create', '--client-id', 'Acme', '--name', 'Acme Inc', '--time-zone', 'Europe/Copenhagen');
    assert.equal(tenant.clientId, 'acme', 'Client Ids are lower-cased');
    assert.equal(tenant.name, 'Acme Inc');
    assert.equal(tenant.timeZone, 'Europe/Copenhagen');
    assert.equal(typeof tenant.id, 'number');
    assert.match(String(tenant.apiSecret), /^\S{32,}$/);

    const mate = await json('mate', 'create', '--tenant', 'acme', '--username', 'robot-1');
    assert.equal(mate.username, 'robot-1');
    assert.match(String(mate.password), /^\S{12,}$/, 'a generated password is shown once');

    const user = await json(
      'user',
      'create',
      '--tenant',
      'acme',
      '--username',
      'alice',
      '--role',
      'developer',
      '--password',
      'a-long-enough-password',
    );
    assert.deepEqual({ ...user, id: 0 }, { id: 0, username: 'alice', role: 'developer', password: null }, 'a given password is not echoed');

    const fields = [
      { name: 'invoiceNo', type: 'text', isKey: true, unique: true },
      { name: 'amount', type: 'number', required: true },
      { name: 'status', type: 'dropdown', options: ['new', 'paid'] },
    ];
    const proc = await json(
      'process',
      'create',
      '--tenant',
      'acme',
      '--key',
      'invoices',
      '--name',
      'Invoices',
      '--fields',
      JSON.stringify(fields),
    );
    assert.equal(proc.processKey, 'invoices');
    assert.equal(typeof proc.id, 'number');

    const text = await cli('mate', 'create', '--tenant', 'acme', '--username', 'robot-2');
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^Mate robot-2 created\.\nPassword \(shown once\): \S{12,}\n$/);

    const bad: Array<[string[], RegExp]> = [
      [['tenant', 'create', '--client-id', 'Bad Id!'], /^queuemate: Client Id "Bad Id!" must be 1-63 characters/],
      [['mate', 'create', '--tenant', 'nosuch', '--username', 'x'], /^queuemate: No tenant with Client Id "nosuch"$/],
      [
        ['process', 'create', '--tenant', 'acme', '--key', 'p2', '--fields', '[{"name":"colourField","type":"colour"}]'],
        /^queuemate: Field "colourField" has type "colour", not one of text, number/,
      ],
    ];
    for (const [args, message] of bad) {
      const r = await cli(...args);
      assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`);
      assert.match(oneLineError(r.stderr), message);
      assert.equal(r.stdout, '');
    }

    const store = await target.open();
    const rows = await store.pool.query<{ client_id: string; mates: number; users: number; processes: number; fields: number }>(`
      SELECT t.client_id,
        (SELECT count(*)::int FROM mates m WHERE m.tenant_id = t.id) AS mates,
        (SELECT count(*)::int FROM users u WHERE u.tenant_id = t.id) AS users,
        (SELECT count(*)::int FROM processes p WHERE p.tenant_id = t.id) AS processes,
        (SELECT count(*)::int FROM process_fields f WHERE f.tenant_id = t.id) AS fields
      FROM tenants t ORDER BY t.client_id`);
    assert.deepEqual(
      rows.rows,
      [{ client_id: 'acme', mates: 2, users: 1, processes: 1, fields: 3 }],
      'the failed commands changed nothing',
    );
  } finally {
    await killAll();
    await target.close();
  }
});

test('start --processes: refused on the embedded store and for bad values, in one clear line', async (t) => {
  const dir = tempDir('qm-cli-processes-');
  const cases: Array<[string, string[], Record<string, string>, number, RegExp]> = [
    [
      '--processes 2 on the embedded store',
      ['start', '--processes', '2', '--data-dir', dir],
      { DATABASE_URL: '' },
      2,
      /^queuemate: --processes 2 needs PostgreSQL: the embedded store is one process's \(it locks its data directory\); set DATABASE_URL, or start with --processes 1$/,
    ],
    [
      '--processes 0',
      ['start', '--processes', '0'],
      {},
      1,
      /^queuemate: Invalid option \(QUEUEMATE_PROCESSES \/ --processes\): 0 is outside 1\.\.256$/,
    ],
    [
      'QUEUEMATE_PROCESSES=many',
      ['start'],
      { QUEUEMATE_PROCESSES: 'many' },
      1,
      /^queuemate: Invalid environment variable \(QUEUEMATE_PROCESSES \/ --processes\): "many" is not a whole number or auto$/,
    ],
  ];
  for (const [name, args, env, code, message] of cases) {
    await t.test(name, async () => {
      const r = await runCli(args, { env, timeoutMs: 60_000 });
      assert.equal(r.code, code, `exit code; stderr: ${r.stderr}`);
      assert.match(oneLineError(r.stderr), message);
      assert.equal(r.stdout, '');
    });
  }
});
