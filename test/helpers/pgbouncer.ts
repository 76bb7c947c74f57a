/**
 * A PgBouncer of the test's own (Debian's `pgbouncer` package): its ini and auth files in a temp
 * directory, in front of the test's PostgreSQL, on a free port, in the given pool mode. Never a
 * system service's PgBouncer.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';

/** The pgbouncer binary, or null when it is not installed. */
export function pgbouncerBinary(): string | null {
  for (const p of ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer', '/usr/local/bin/pgbouncer']) if (fs.existsSync(p)) return p;
  const r = spawnSync('sh', ['-c', 'command -v pgbouncer'], { encoding: 'utf8' });
  return r.status === 0 && r.stdout.trim() ? r.stdout.trim() : null;
}

/** Its version, e.g. "1.18.0". */
export function pgbouncerVersion(bin: string): string {
  return /PgBouncer (\S+)/.exec(spawnSync(bin, ['--version'], { encoding: 'utf8' }).stdout)?.[1] ?? 'unknown';
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

export interface PgBouncer {
  /** the connection string of `databaseUrl`'s database through PgBouncer */
  url: string;
  port: number;
  version: string;
  /** transactions and queries PgBouncer passed on for the database (its SHOW STATS) */
  stats(): Promise<{ transactions: number; queries: number }>;
  log(): string;
  stop(): Promise<void>;
}

/**
 * Starts PgBouncer in front of `databaseUrl` (a postgres:// URL whose server trusts the test's
 * connections), in `poolMode`, with `poolSize` server connections, in `dir`.
 */
export async function startPgBouncer(
  bin: string,
  databaseUrl: string,
  dir: string,
  opts: { poolMode?: 'transaction' | 'session'; poolSize?: number } = {},
): Promise<PgBouncer> {
  const target = new URL(databaseUrl);
  const user = decodeURIComponent(target.username || 'postgres');
  const dbname = target.pathname.slice(1);
  const port = await freePort();
  const ini = path.join(dir, 'pgbouncer.ini');
  const auth = path.join(dir, 'userlist.txt');
  fs.writeFileSync(auth, `"${user}" "${decodeURIComponent(target.password)}"\n`);
  fs.writeFileSync(
    ini,
    [
      '[databases]',
      `${dbname} = host=${target.hostname} port=${target.port || 5432} dbname=${dbname} user=${user}` +
        (target.password ? ` password=${decodeURIComponent(target.password)}` : ''),
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${auth}`,
      `admin_users = ${user}`,
      `pool_mode = ${opts.poolMode ?? 'transaction'}`,
      `default_pool_size = ${opts.poolSize ?? 8}`,
      'max_client_conn = 500',
      // PgBouncer refuses start-up parameters it does not track; pg sends none but these
      'ignore_startup_parameters = extra_float_digits',
      'server_reset_query =',
      'log_connections = 0',
      'log_disconnections = 0',
      '',
    ].join('\n'),
  );
  // PgBouncer will not run as root: it then drops to nobody, who must read its files
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    fs.chmodSync(dir, 0o755);
    fs.chmodSync(ini, 0o644);
    fs.chmodSync(auth, 0o644);
  }
  const child: ChildProcess = spawn(bin, [...(asRoot ? ['-u', 'nobody'] : []), ini], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (log += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (log += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  const admin = { host: '127.0.0.1', port, user, database: 'pgbouncer' };
  // ready when it answers
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`pgbouncer stopped at start:\n${log}`);
    const c = new pg.Client(admin);
    try {
      await c.connect();
      await c.query('SHOW VERSION');
      await c.end();
      break;
    } catch (err) {
      await c.end().catch(() => {});
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`pgbouncer did not answer on port ${port}: ${(err as Error).message}\n${log}`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  return {
    url: url.toString(),
    port,
    version: pgbouncerVersion(bin),
    async stats() {
      const c = new pg.Client(admin);
      await c.connect();
      try {
        const { rows } = await c.query('SHOW STATS');
        const row = rows.find((r) => r.database === dbname) ?? {};
        return { transactions: Number(row.total_xact_count ?? 0), queries: Number(row.total_query_count ?? 0) };
      } finally {
        await c.end();
      }
    },
    log: () => log,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(t);
      }
    },
  };
}
