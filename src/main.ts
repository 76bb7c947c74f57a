/**
 * The `queuemate` command line: the only place that listens on a port, handles signals and exits.
 *
 *   queuemate start      migrate, then serve (first start on an empty store creates a demo set-up)
 *   queuemate migrate    apply pending migrations and exit
 *   queuemate backup | restore | move-store   the embedded store's backups, and its move to PostgreSQL
 *   queuemate tenant create | user create | mate create | process create   scripting helpers
 */
import { loadConfig, ConfigError, SETTINGS, redact, type Config } from './config.js';
import type { FastifyInstance } from 'fastify';
import type { Store } from './db/store.js';
import { DataDirInUseError } from './db/lock.js';
import { migrate, MigrationError } from './db/migrator.js';
import { Refusal } from './lib/errors.js';
import { VERSION } from './lib/package.js';
import type { Role } from './accounts/service.js';
import type { FieldInput, RuleInput } from './processes/service.js';

// The store drivers, the HTTP app and the services are loaded when a command needs them: that is
// about a second of module loading, which usage and configuration errors need not wait for.
let StoreUnavailableError: (new (message: string) => Error) | null = null;
async function loadStore() {
  const m = await import('./db/store.js');
  StoreUnavailableError = m.StoreUnavailableError;
  return m;
}

class UsageError extends Error {}

const USAGE = `Usage: queuemate <command> [options]

Commands:
  start                               migrate the store, then serve
  migrate                             apply pending migrations and exit
  backup --to FILE                    back up the embedded store (the server may be running)
  restore --from FILE                 restore a backup into an empty data directory
  move-store --to postgres://...      copy the embedded store into an empty PostgreSQL database
  tenant create --client-id ID [--name NAME] [--time-zone TZ]
  user create --tenant ID --username NAME --role admin|developer|agent|viewer [--password PW]
  mate create --tenant ID --username NAME [--password PW]
  process create --tenant ID --key KEY [--name NAME] [--fields JSON] [--rules JSON] [--no-tasks]

Set-up commands print a JSON object with --json. Generated passwords and secrets are printed once.
queuemate --version (or queuemate version) prints the version.

Options (also environment variables):
${SETTINGS.map((s) => `  ${(s.flag + ' ').padEnd(32)}${s.env}`).join('\n')}`;

interface Parsed {
  words: string[];
  options: Map<string, string | true>;
  configArgs: string[];
}

const BOOLEAN_OPTIONS = new Set(['--json', '--no-tasks', '--help', '--version']);

export function parseArgs(argv: string[]): Parsed {
  const words: string[] = [];
  const options = new Map<string, string | true>();
  const configArgs: string[] = [];
  let i = 0;
  while (i < argv.length && !argv[i].startsWith('--')) words.push(argv[i++]);
  for (; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('--')) throw new UsageError(`Unexpected argument "${arg}"`);
    const eq = arg.indexOf('=');
    const name = eq >= 0 ? arg.slice(0, eq) : arg;
    if (SETTINGS.some((s) => s.flag === name)) {
      configArgs.push(arg);
      if (eq < 0 && i + 1 < argv.length) configArgs.push(argv[++i]);
      continue;
    }
    if (BOOLEAN_OPTIONS.has(name)) {
      options.set(name, true);
      continue;
    }
    // Without a value the option is kept as `true`: checkKnownOptions then reports an unknown
    // option as such, and opt() says a known one needs a value.
    const next = argv[i + 1];
    const value = eq >= 0 ? arg.slice(eq + 1) : next !== undefined && !next.startsWith('--') ? argv[++i] : true;
    options.set(name, value);
  }
  return { words, options, configArgs };
}

function opt(p: Parsed, name: string, required: true): string;
function opt(p: Parsed, name: string, required?: false): string | undefined;
function opt(p: Parsed, name: string, required = false): string | undefined {
  const v = p.options.get(name);
  if (v === true) throw new UsageError(`Option ${name} needs a value`);
  if (v === undefined && required) throw new UsageError(`Missing option ${name}`);
  return v;
}

function parseJsonOption<T>(p: Parsed, name: string): T | undefined {
  const raw = opt(p, name);
  if (raw === undefined) return undefined;
  try {
    return JSON.parse(raw) as T;
  } catch {
    throw new UsageError(`Option ${name} must be JSON`);
  }
}

function checkKnownOptions(p: Parsed, allowed: string[]): void {
  for (const k of p.options.keys()) {
    if (k !== '--json' && !allowed.includes(k)) throw new UsageError(`Unknown option ${k}`);
  }
}

/** Opens the store, brings it up to date (unless migrating is what fn does), runs fn, closes. */
async function withStore<T>(config: Config, fn: (store: Store) => Promise<T>, opts: { migrateFirst?: boolean } = {}): Promise<T> {
  const { openStore } = await loadStore();
  const store = await openStore({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    poolSize: 2,
    embeddedFsync: config.embeddedFsync === 'on',
    embeddedThread: config.embeddedThread,
    sessionUrl: config.dbSessionUrl,
    preparedStatements: config.dbPreparedStatements === 'on',
  });
  try {
    if (opts.migrateFirst !== false) await migrate(store);
    return await fn(store);
  } finally {
    await store.close();
  }
}

function print(p: Parsed, json: unknown, text: string): void {
  process.stdout.write(p.options.has('--json') ? JSON.stringify(json, null, 2) + '\n' : text + '\n');
}

/** The web app's build folder, built first when missing or stale (src/web/build.ts); none without a web/ folder. */
async function buildWebApp(): Promise<string | undefined> {
  const { findWebDir, ensureWebBuild } = await import('./web/build.js');
  const webDir = findWebDir();
  if (!webDir) return undefined;
  return ensureWebBuild({
    webDir,
    log: { info: (m) => process.stdout.write(m + '\n'), warn: (m) => process.stderr.write(`queuemate: ${m}\n`) },
  });
}

/**
 * `start --processes N` with N > 1: the primary migrates, makes the first-start demo and builds the
 * web app once, then runs N server processes (src/cluster.ts), which each run start() below.
 */
async function startCluster(config: Config): Promise<void> {
  if (!config.databaseUrl) {
    throw new UsageError(
      `--processes ${config.processes} needs PostgreSQL: the embedded store is one process's (it locks its data directory); set DATABASE_URL, or start with --processes 1`,
    );
  }
  const [{ openStore }, { ensureDemo, formatDemoCredentials }, { superviseServers }] = await Promise.all([
    loadStore(),
    import('./setup/demo.js'),
    import('./cluster.js'),
  ]);
  const store = await openStore({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    poolSize: 1,
    lockTimeoutMs: config.dbLockTimeoutMs,
    statementTimeoutMs: config.dbStatementTimeoutMs,
    sessionUrl: config.dbSessionUrl,
    preparedStatements: config.dbPreparedStatements === 'on',
  });
  let demo;
  try {
    await migrate(store);
    demo = await ensureDemo(store);
  } finally {
    await store.close();
  }
  await buildWebApp();
  superviseServers({
    processes: config.processes,
    shutdownTimeoutSeconds: config.shutdownTimeoutSeconds,
    log: (line) => process.stderr.write(`queuemate: ${line}\n`),
    onReady: (port) => {
      const publicUrl = config.port === 0 ? config.publicUrl.replace(/:0$/, `:${port}`) : config.publicUrl;
      if (demo) process.stdout.write(formatDemoCredentials(demo, publicUrl) + '\n');
      process.stdout.write(
        `Queuemate is listening on ${publicUrl} (store: PostgreSQL, ${store.location}; ${config.processes} server processes, primary PID ${process.pid})\n`,
      );
    },
  });
}

async function start(config: Config): Promise<void> {
  const { isServerProcessOfCluster } = await import('./cluster.js');
  const inCluster = isServerProcessOfCluster();
  if (config.processes > 1 && !inCluster) return startCluster(config);
  const { openStore } = await loadStore();
  const [{ createApp }, { ensureDemo, formatDemoCredentials }] = await Promise.all([import('./app.js'), import('./setup/demo.js')]);
  const store = await openStore({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    poolSize: config.dbPoolSize,
    embeddedFsync: config.embeddedFsync === 'on',
    embeddedThread: config.embeddedThread,
    lockTimeoutMs: config.dbLockTimeoutMs,
    statementTimeoutMs: config.dbStatementTimeoutMs,
    sessionUrl: config.dbSessionUrl,
    preparedStatements: config.dbPreparedStatements === 'on',
    genericPlans: config.dbGenericPlans === 'on',
  });
  let app: FastifyInstance | undefined;
  let backups: import('./db/backup.js').BackupServer | null = null;
  try {
    await migrate(store);
    const demo = await ensureDemo(store);
    const webDist = await buildWebApp();
    let cluster;
    if (inCluster) {
      const { joinCluster } = await import('./cluster.js');
      cluster = joinCluster(() => app!.services.metrics.registry);
    }
    app = await createApp(config, { store, webDist, cluster });
    await app.listen({ port: config.port, host: config.host });
    if (store.copyFiles) {
      const { serveBackups } = await import('./db/backup.js');
      backups = await serveBackups({ dataDir: config.dataDir, copyFiles: store.copyFiles, version: VERSION, log: app.log });
    }
    // the primary says where the processes listen, once for all of them
    if (inCluster) return void onSignals(config, app, store, backups);
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    const publicUrl = config.port === 0 ? config.publicUrl.replace(/:0$/, `:${port}`) : config.publicUrl;
    if (demo) process.stdout.write(formatDemoCredentials(demo, publicUrl) + '\n');
    process.stdout.write(
      `Queuemate is listening on ${publicUrl} (store: ${store.kind === 'pglite' ? `embedded, ${store.location}` : `PostgreSQL, ${store.location}`})\n`,
    );
  } catch (err) {
    await backups?.close().catch(() => {});
    await app?.close().catch(() => {});
    await store.close().catch(() => {});
    throw err;
  }

  onSignals(config, app, store, backups);
}

/** SIGTERM and SIGINT stop the server: in-flight requests finish, then the store closes (docs/operations.md). */
function onSignals(config: Config, app: FastifyInstance, store: Store, backups: import('./db/backup.js').BackupServer | null = null): void {
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down: finishing in-flight requests');
    const timer = setTimeout(() => {
      process.stderr.write(`queuemate: shutdown took longer than ${config.shutdownTimeoutSeconds}s; exiting\n`);
      process.exit(1);
    }, config.shutdownTimeoutSeconds * 1000);
    timer.unref();
    // server.close() closes the keep-alive connections that are idle when it is called; a
    // connection whose request finishes later would stay open until its keep-alive timeout (72 s)
    // and hold the shutdown, so idle connections are closed again until the server has stopped
    const idle = setInterval(() => app.server.closeIdleConnections(), 100);
    app
      .close()
      .finally(() => clearInterval(idle))
      .then(() => backups?.close())
      .then(() => store.close())
      .then(() => process.exit(0))
      .catch((err) => {
        process.stderr.write(`queuemate: error during shutdown: ${(err as Error).message}\n`);
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

export async function run(argv: string[]): Promise<void> {
  const p = parseArgs(argv);
  const [cmd, sub] = p.words;
  // `version` too, because npx reads `npx queuemate --version` as its own option and prints npm's
  if (p.options.has('--version') || (cmd === 'version' && !sub)) {
    process.stdout.write(VERSION + '\n');
    return;
  }
  if (!cmd || cmd === 'help' || p.options.has('--help')) {
    process.stdout.write(USAGE + '\n');
    return;
  }
  const config = loadConfig(process.env, p.configArgs);
  const command = sub ? `${cmd} ${sub}` : cmd;
  switch (command) {
    case 'start':
      checkKnownOptions(p, []);
      return start(config);
    case 'migrate': {
      checkKnownOptions(p, []);
      const { applied } = await withStore(config, (store) => migrate(store), { migrateFirst: false });
      print(p, { applied }, applied.length ? `Applied ${applied.join(', ')}` : 'The store is up to date');
      return;
    }
    case 'backup': {
      checkKnownOptions(p, ['--to']);
      const to = opt(p, '--to', true);
      const { backupStore, BackupError } = await import('./db/backup.js');
      if (config.databaseUrl)
        throw new UsageError(
          'backup copies the embedded store; on PostgreSQL (DATABASE_URL is set) use pg_dump or a base backup, see docs/operations.md',
        );
      const r = await backupStore({ dataDir: config.dataDir, to, version: VERSION }).catch((err) => {
        throw err instanceof BackupError ? new UsageError(err.message) : err;
      });
      print(
        p,
        r,
        `Backup of ${config.dataDir} written to ${r.file} (${formatBytes(r.bytes)}, ${r.files} files), taken at ${r.takenAt} ` +
          (r.online ? 'from the running server.' : 'from the stopped store.'),
      );
      return;
    }
    case 'restore': {
      checkKnownOptions(p, ['--from']);
      const from = opt(p, '--from', true);
      const { restoreStore, BackupError } = await import('./db/backup.js');
      if (config.databaseUrl)
        throw new UsageError('restore fills an embedded store; on PostgreSQL (DATABASE_URL is set) use pg_restore, see docs/operations.md');
      const r = await restoreStore({ from, dataDir: config.dataDir }).catch((err) => {
        throw err instanceof BackupError ? new UsageError(err.message) : err;
      });
      print(
        p,
        r,
        `Restored ${from} (taken at ${r.takenAt}) into ${config.dataDir}: ${r.tenants} tenant(s), ${r.tasks} task(s).\n` +
          `Start Queuemate with --data-dir ${config.dataDir} (QUEUEMATE_DATA_DIR).`,
      );
      return;
    }
    case 'move-store': {
      checkKnownOptions(p, ['--to']);
      const to = opt(p, '--to', true);
      if (config.databaseUrl)
        throw new UsageError(
          'move-store copies the embedded store (--data-dir) to PostgreSQL; unset DATABASE_URL and name the target with --to',
        );
      if (!/^postgres(ql)?:\/\//.test(to)) throw new UsageError('--to must be a postgres:// connection string');
      await loadStore();
      const { moveStore, MoveError } = await import('./db/move-store.js');
      const progress = p.options.has('--json') ? () => {} : (line: string) => process.stderr.write(line + '\n');
      const r = await moveStore({ dataDir: config.dataDir, to, progress }).catch((err) => {
        throw err instanceof MoveError ? new UsageError(err.message) : err;
      });
      print(
        p,
        r,
        [
          `Moved ${r.tables.reduce((n, t) => n + t.rows, 0)} rows in ${r.tables.length} tables from ${config.dataDir} to ${redact(to)}; every table verified (row count and checksum).`,
          `The one setting to change: DATABASE_URL=${redact(to)} (or --database-url), then start Queuemate.`,
          `The embedded store in ${config.dataDir} is left as it was; a server started without DATABASE_URL would still use it.`,
        ].join('\n'),
      );
      return;
    }
    case 'tenant create': {
      checkKnownOptions(p, ['--client-id', '--name', '--time-zone']);
      const input = { clientId: opt(p, '--client-id', true), name: opt(p, '--name'), timeZone: opt(p, '--time-zone') };
      const { createTenant } = await import('./tenants/service.js');
      const { tenant, apiSecret } = await withStore(config, (store) => createTenant(store.db, input));
      print(p, { ...tenant, apiSecret }, `Tenant ${tenant.clientId} created.\nAPI secret (shown once): ${apiSecret}`);
      return;
    }
    case 'user create': {
      checkKnownOptions(p, ['--tenant', '--username', '--role', '--password']);
      const role = opt(p, '--role', true) as Role;
      const { createUser, ROLES } = await import('./accounts/service.js');
      const { requireTenant } = await import('./tenants/service.js');
      if (!ROLES.includes(role)) throw new UsageError(`--role must be one of ${ROLES.join(', ')}`);
      const clientId = opt(p, '--tenant', true);
      const input = { username: opt(p, '--username', true), role, password: opt(p, '--password') };
      const user = await withStore(config, async (store) => {
        const tenant = await requireTenant(store.db, clientId);
        return createUser(store.db, tenant.id, input);
      });
      print(p, user, `User ${user.username} (${user.role}) created.` + (user.password ? `\nPassword (shown once): ${user.password}` : ''));
      return;
    }
    case 'mate create': {
      checkKnownOptions(p, ['--tenant', '--username', '--password']);
      const clientId = opt(p, '--tenant', true);
      const input = { username: opt(p, '--username', true), password: opt(p, '--password') };
      const { createMate } = await import('./accounts/service.js');
      const { requireTenant } = await import('./tenants/service.js');
      const mate = await withStore(config, async (store) => {
        const tenant = await requireTenant(store.db, clientId);
        return createMate(store.db, tenant.id, input);
      });
      print(p, mate, `Mate ${mate.username} created.` + (mate.password ? `\nPassword (shown once): ${mate.password}` : ''));
      return;
    }
    case 'process create': {
      checkKnownOptions(p, ['--tenant', '--key', '--name', '--fields', '--rules', '--no-tasks', '--description']);
      const fields = parseJsonOption<FieldInput[]>(p, '--fields');
      const rules = parseJsonOption<RuleInput[]>(p, '--rules');
      if (fields !== undefined && !Array.isArray(fields)) throw new UsageError('--fields must be a JSON array of field definitions');
      if (rules !== undefined && !Array.isArray(rules)) throw new UsageError('--rules must be a JSON array of rule definitions');
      const clientId = opt(p, '--tenant', true);
      const input = {
        processKey: opt(p, '--key', true),
        name: opt(p, '--name'),
        description: opt(p, '--description'),
        tasksEnabled: !p.options.has('--no-tasks'),
        fields,
        rules,
      };
      const { createProcess } = await import('./processes/service.js');
      const { requireTenant } = await import('./tenants/service.js');
      const created = await withStore(config, async (store) => {
        const tenant = await requireTenant(store.db, clientId);
        return createProcess(store.db, tenant.id, input);
      });
      print(p, created, `Process ${created.processKey} created.`);
      return;
    }
    default:
      throw new UsageError(`Unknown command "${command}". Run "queuemate help".`);
  }
}

function formatBytes(n: number): string {
  return n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** Known failures become one line on stderr and a non-zero exit, never a stack trace. */
function fail(err: unknown): never {
  const known =
    err instanceof ConfigError ||
    err instanceof UsageError ||
    err instanceof DataDirInUseError ||
    (StoreUnavailableError !== null && err instanceof StoreUnavailableError) ||
    err instanceof MigrationError ||
    err instanceof Refusal;
  const message = known ? (err as Error).message : `unexpected error: ${(err as Error)?.stack ?? String(err)}`;
  process.stderr.write(`queuemate: ${message}\n`);
  process.exit(err instanceof UsageError ? 2 : 1);
}

run(process.argv.slice(2)).catch(fail);
