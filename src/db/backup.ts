/**
 * Backups of the embedded store (docs/operations.md, "Backups and restores").
 *
 * A running server owns its data directory (PGlite is one process: nothing else may open the
 * files), so the server takes the copy itself. It listens on a Unix socket in the data directory,
 * `queuemate.sock`, which only the user owning the directory can use (mode 0600: whoever can reach
 * it could read the files anyway), and answers a `backup` request with an archive
 * (src/db/archive.ts) of a copy of its files taken between two statements (Store.copyFiles): every
 * change acknowledged before the request is in it. `queuemate backup` asks the server there and
 * writes the file; when no server holds the directory, it archives the stopped store itself.
 *
 * `queuemate restore` unpacks a backup into an empty data directory, then opens it once, which
 * recovers it like a store after a power cut (the copy is that instant's image) and checkpoints it.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { once } from 'node:events';
import { ArchiveError, readArchive, writeArchive, type Manifest, FORMAT } from './archive.js';
import { lockDataDir, DataDirInUseError, type DataDirLock } from './lock.js';
import { openStore } from './store.js';

export const SOCKET_NAME = 'queuemate.sock';
// sockaddr_un.sun_path holds 108 bytes on Linux, 104 on macOS, with the terminating zero
const SOCKET_PATH_MAX = 103;
const STAGING = /^backup-\d+-\d+\.tmp$/;

/** A backup or restore that cannot be done; the message says why and what to do. */
export class BackupError extends Error {}

export interface BackupLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** The socket's path as this process reaches it (the shorter of absolute and relative), or null when too long. */
export function socketPath(dataDir: string): string | null {
  const abs = path.resolve(dataDir, SOCKET_NAME);
  const rel = path.relative(process.cwd(), abs);
  const best = rel.length < abs.length && !rel.startsWith('/') ? (rel.includes('/') ? rel : `./${rel}`) : abs;
  return Buffer.byteLength(best) <= SOCKET_PATH_MAX ? best : null;
}

export interface BackupServer {
  readonly socket: string;
  close(): Promise<void>;
}

/**
 * Serves backup requests for a running server on the embedded store. Null (with a warning) when
 * the data directory's path is too long for a Unix socket.
 */
export async function serveBackups(opts: {
  dataDir: string;
  copyFiles: (dir: string) => Promise<void>;
  version: string;
  log: BackupLog;
}): Promise<BackupServer | null> {
  const where = socketPath(opts.dataDir);
  if (!where) {
    opts.log.warn(
      { dataDir: opts.dataDir },
      'online backups are off: the data directory path is too long for a Unix socket; back up with the server stopped',
    );
    return null;
  }
  // left by a process that stopped without closing the store (this one holds the lock now)
  for (const name of fs.readdirSync(opts.dataDir)) {
    if (STAGING.test(name)) fs.rmSync(path.join(opts.dataDir, name), { recursive: true, force: true });
  }
  fs.rmSync(where, { force: true });

  let queue: Promise<unknown> = Promise.resolve();
  let counter = 0;
  const server = net.createServer((sock) => {
    sock.on('error', () => {});
    sock.setTimeout(10_000, () => sock.destroy());
    let line = '';
    const onData = (d: Buffer) => {
      line += d.toString('utf8');
      if (line.length > 256) return sock.destroy();
      const nl = line.indexOf('\n');
      if (nl < 0) return;
      sock.off('data', onData);
      sock.setTimeout(0);
      const command = line.slice(0, nl).trim();
      if (command !== 'backup') {
        sock.end(JSON.stringify({ ok: false, error: `unknown request "${command.slice(0, 40)}"` }) + '\n');
        return;
      }
      // one backup at a time: each holds a copy of the store on disk until it is sent
      const run = queue.then(() => sendBackup(sock, ++counter));
      queue = run.catch(() => {});
    };
    sock.on('data', onData);
  });

  const sendBackup = async (sock: net.Socket, n: number) => {
    const staging = path.join(opts.dataDir, `backup-${process.pid}-${n}.tmp`);
    const started = Date.now();
    let answered = false;
    try {
      // every change acknowledged before this instant is in the copy
      const takenAt = new Date().toISOString();
      await opts.copyFiles(staging);
      const copyMs = Date.now() - started;
      sock.write(JSON.stringify({ ok: true, takenAt, copyMs }) + '\n');
      answered = true;
      const manifest: Manifest = { format: FORMAT, formatVersion: 1, queuemate: opts.version, takenAt, online: true };
      await writeArchive(manifest, staging, sock);
      opts.log.info({ takenAt, copyMs, ms: Date.now() - started }, 'sent a backup of the embedded store');
    } catch (err) {
      opts.log.warn({ err: (err as Error).message }, 'a backup of the embedded store failed');
      // once the archive has begun, the client finds it cut short
      if (answered) sock.destroy();
      else if (!sock.destroyed) sock.end(JSON.stringify({ ok: false, error: (err as Error).message }) + '\n');
    } finally {
      await fsp.rm(staging, { recursive: true, force: true });
    }
  };

  // the socket is made with no permission for group and others (bind applies the umask)
  const umask = process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(where, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } finally {
    process.umask(umask);
  }
  return {
    socket: where,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await queue;
      fs.rmSync(where, { force: true });
    },
  };
}

export interface BackupResult {
  file: string;
  bytes: number;
  files: number;
  takenAt: string;
  /** taken from a running server */
  online: boolean;
}

function hasStore(dataDir: string): boolean {
  return fs.existsSync(path.join(dataDir, 'pgdata', 'PG_VERSION'));
}

async function syncFileAndDir(file: string): Promise<void> {
  const h = await fsp.open(file, 'r');
  try {
    await h.sync();
  } finally {
    await h.close();
  }
  const d = await fsp.open(path.dirname(file), 'r');
  try {
    await d.sync();
  } finally {
    await d.close();
  }
}

/** A connection to the backup socket of a server running on dataDir, or null when none answers there. */
async function connectToServer(dataDir: string): Promise<net.Socket | null> {
  const where = socketPath(dataDir);
  if (!where || !fs.existsSync(where)) return null;
  const sock = net.connect(where);
  try {
    await once(sock, 'connect');
    return sock;
  } catch {
    // ECONNREFUSED: a socket file left by a server that stopped without closing
    sock.destroy();
    return null;
  }
}

/** Asks the server on the other end of `sock` for a backup and writes it to `partial`; answers takenAt. */
async function fromServer(sock: net.Socket, partial: string): Promise<string> {
  sock.write('backup\n');
  const out = await fsp.open(partial, 'wx', 0o600);
  let takenAt: string | null = null;
  let head: Buffer = Buffer.alloc(0);
  try {
    for await (const chunk of sock as AsyncIterable<Buffer>) {
      if (takenAt === null) {
        head = Buffer.concat([head, chunk]);
        const nl = head.indexOf(10);
        if (nl < 0) {
          if (head.length > 4096) throw new BackupError('the server answered the backup request with something else');
          continue;
        }
        let answer: { ok?: boolean; takenAt?: string; error?: string };
        try {
          answer = JSON.parse(head.subarray(0, nl).toString('utf8'));
        } catch {
          throw new BackupError('the server answered the backup request with something else');
        }
        if (!answer.ok || !answer.takenAt)
          throw new BackupError(`the server could not take a backup: ${answer.error ?? 'no reason given'}`);
        takenAt = answer.takenAt;
        await out.write(head.subarray(nl + 1));
      } else {
        await out.write(chunk);
      }
    }
  } finally {
    sock.destroy();
    await out.close();
  }
  if (takenAt === null) throw new BackupError('the server closed the connection without answering (its log says why)');
  return takenAt;
}

/**
 * `queuemate backup --to FILE`: a backup of the embedded store in dataDir, from the running server
 * when one holds the directory, else from the stopped store. The file is written under a temporary
 * name, read back whole, flushed to disk, then renamed to FILE.
 */
export async function backupStore(opts: { dataDir: string; to: string; version: string }): Promise<BackupResult> {
  const to = path.resolve(opts.to);
  if (fs.existsSync(to)) throw new BackupError(`${opts.to} exists; choose a new file name (a backup never overwrites a file)`);
  if (!fs.existsSync(path.dirname(to))) throw new BackupError(`the folder of ${opts.to} does not exist`);
  if (!hasStore(opts.dataDir)) throw new BackupError(`there is no embedded store in ${opts.dataDir}`);
  const partial = `${to}.partial-${process.pid}`;
  let lock: DataDirLock | null = null;
  try {
    let takenAt: string;
    let online: boolean;
    // the server first: a server in another container has PID 1 like this process would, and its
    // lock would look stale from here, while its socket answers
    const sock = await connectToServer(opts.dataDir);
    if (sock) {
      takenAt = await fromServer(sock, partial);
      online = true;
    } else {
      try {
        lock = lockDataDir(opts.dataDir);
      } catch (err) {
        if (!(err instanceof DataDirInUseError)) throw err;
        throw new BackupError(
          `the server (PID ${err.pid}) holding ${opts.dataDir} does not answer backup requests on ${path.join(opts.dataDir, SOCKET_NAME)}` +
            `${socketPath(opts.dataDir) ? '' : ' (the path is too long for a Unix socket)'}; stop it (SIGTERM) and run the backup again: a stopped store is copied directly`,
        );
      }
    }
    if (lock) {
      // no server: the files are the stopped store's (or a crashed one's, recovered on restore)
      takenAt = new Date().toISOString();
      online = false;
      const manifest: Manifest = { format: FORMAT, formatVersion: 1, queuemate: opts.version, takenAt, online };
      await writeArchive(manifest, path.join(opts.dataDir, 'pgdata'), fs.createWriteStream(partial, { flags: 'wx', mode: 0o600 }));
    }
    const check = await readArchive(fs.createReadStream(partial)).catch((err: Error) => {
      throw new BackupError(
        `the backup did not read back whole${online ? " (the server's log says why)" : ''}, so no file was written: ${err.message}`,
      );
    });
    await syncFileAndDir(partial);
    fs.renameSync(partial, to);
    await syncFileAndDir(to);
    return { file: to, bytes: fs.statSync(to).size, files: check.files, takenAt: takenAt!, online: online! };
  } finally {
    lock?.release();
    fs.rmSync(partial, { force: true });
  }
}

export interface RestoreResult {
  dataDir: string;
  takenAt: string;
  files: number;
  tenants: number;
  tasks: number;
}

/**
 * `queuemate restore --from FILE`: unpacks a backup into dataDir, which must be empty (or not
 * exist), then opens the store once (recovery, checkpoint) and closes it.
 */
export async function restoreStore(opts: { from: string; dataDir: string }): Promise<RestoreResult> {
  if (!fs.existsSync(opts.from)) throw new BackupError(`${opts.from} does not exist`);
  if (fs.existsSync(opts.dataDir)) {
    const names = fs.readdirSync(opts.dataDir);
    if (names.length > 0)
      throw new BackupError(
        `data directory ${opts.dataDir} is not empty (${names.slice(0, 3).join(', ')}${names.length > 3 ? ', …' : ''}); restore into an empty or new directory`,
      );
  }
  const lock = lockDataDir(opts.dataDir);
  const restoring = path.join(opts.dataDir, 'pgdata.restoring');
  let read;
  try {
    fs.mkdirSync(restoring, { mode: 0o700 });
    read = await readArchive(fs.createReadStream(opts.from), restoring).catch((err: Error) => {
      throw err instanceof ArchiveError ? new BackupError(`cannot restore ${opts.from}: ${err.message}`) : err;
    });
    if (!fs.existsSync(path.join(restoring, 'PG_VERSION'))) throw new BackupError(`cannot restore ${opts.from}: it holds no store`);
    fs.renameSync(restoring, path.join(opts.dataDir, 'pgdata'));
  } catch (err) {
    fs.rmSync(restoring, { recursive: true, force: true });
    throw err;
  } finally {
    lock.release();
  }
  // opening recovers the copy; closing checkpoints it and flushes every file to disk
  const store = await openStore({ databaseUrl: null, dataDir: opts.dataDir, poolSize: 1 });
  try {
    const { rows } = await store.pool.query<{ tenants: number; tasks: number }>(
      `SELECT (SELECT count(*)::int FROM tenants) AS tenants, (SELECT count(*)::int FROM tasks) AS tasks`,
    );
    return { dataDir: opts.dataDir, takenAt: read.manifest.takenAt, files: read.files, tenants: rows[0].tenants, tasks: rows[0].tasks };
  } finally {
    await store.close();
  }
}
