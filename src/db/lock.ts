/**
 * Lock file on the embedded store's data directory. PGlite has one connection and must never be
 * opened by two processes (it would corrupt the files), so a second process fails fast instead.
 */
import fs from 'node:fs';
import path from 'node:path';

export class DataDirInUseError extends Error {
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(`data directory ${dataDir} in use by PID ${pid}; stop that process or choose another --data-dir`);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface DataDirLock {
  /**
   * The lock file was left by a process that is gone: it stopped without closing the store (killed,
   * crashed, or the machine went down), so the store may need recovery and maintenance at start.
   */
  readonly takenOver: boolean;
  release(): void;
}

// Lock files this process holds. A file naming our own PID that is not in this set was left by an
// earlier process that had the same PID (PID 1 in a container restarted after a crash): stale.
const held = new Set<string>();

export function lockDataDir(dataDir: string): DataDirLock {
  fs.mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, 'queuemate.lock');
  // The PID goes into a private file first, which is then hard-linked into place: link() fails
  // when the lock exists, and a lock that exists always holds a PID. (open 'wx' then write would
  // let a process starting at the same moment read an empty file, take it for stale and remove it.)
  const mine = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(mine, `${process.pid}\n`);
  let takenOver = false;
  try {
    // Two attempts: the second after removing a stale file left by a process that was killed.
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        fs.linkSync(mine, file);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        let content: string;
        try {
          content = fs.readFileSync(file, 'utf8');
        } catch (readErr) {
          if ((readErr as NodeJS.ErrnoException).code === 'ENOENT') continue; // released meanwhile
          throw readErr;
        }
        const pid = Number.parseInt(content, 10);
        if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) throw new DataDirInUseError(dataDir, pid);
        if (pid === process.pid && held.has(file)) throw new DataDirInUseError(dataDir, pid);
        fs.rmSync(file, { force: true });
        takenOver = true;
        continue;
      }
      held.add(file);
      let released = false;
      return {
        takenOver,
        release() {
          if (released) return;
          released = true;
          held.delete(file);
          try {
            if (fs.readFileSync(file, 'utf8').trim() === String(process.pid)) fs.unlinkSync(file);
          } catch {
            /* already gone */
          }
        },
      };
    }
  } finally {
    fs.rmSync(mine, { force: true });
  }
  throw new Error(`could not lock data directory ${dataDir}`);
}
