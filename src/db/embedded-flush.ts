/**
 * Makes the embedded store's acknowledged changes durable. PGlite writes its files through
 * ordinary write() calls and never calls fsync (traced: 0 fsync or fdatasync in 200 commits), so
 * a committed change sits in the operating system's page cache until the kernel writes it back,
 * and an operating-system crash or power cut would lose it. PostgreSQL's own rule is that a
 * commit is durable once its write-ahead log record is on disk; this module applies that rule
 * from outside: before an answer that follows a write is sent, it flushes (fdatasync) the WAL
 * segment files written since the previous flush. On Linux fdatasync on a freshly opened
 * descriptor flushes every dirty page of the file, whoever wrote it.
 *
 * Checkpoints: PostgreSQL writes data pages to their files at a checkpoint and may then recycle
 * the WAL before it; PGlite does not fsync those files either. A flush that finds pg_control
 * changed (a checkpoint completed) therefore also flushes every data file modified since the
 * previous checkpoint flush, and so does closing the store (its shutdown checkpoint). A crash in
 * the milliseconds between a checkpoint and that flush is the one window left: PostgreSQL would
 * have flushed the data files before pg_control, which cannot be done from outside.
 *
 * Group commit: the embedded store runs one statement at a time while a flush runs on libuv's
 * thread pool, so commits keep happening during a flush; a request whose write completed after a
 * flush began waits for the next one, which then covers every write completed meanwhile (one
 * flush per burst of commits, not one per commit).
 */
import fsp from 'node:fs/promises';
import path from 'node:path';

/** The file operations a flush uses; tests inject a spy. */
export interface FlushFs {
  /** names in the directory */
  list(dir: string): Promise<string[]>;
  /** last modification time, ms since the epoch */
  modifiedMs(file: string): Promise<number>;
  /** flushes the file's data to disk */
  datasync(file: string): Promise<void>;
  /** every file under dir (relative paths), recursively */
  files(dir: string): Promise<string[]>;
}

export const nodeFlushFs: FlushFs = {
  list: (dir) => fsp.readdir(dir),
  modifiedMs: async (file) => (await fsp.stat(file)).mtimeMs,
  files: async (dir) =>
    (await fsp.readdir(dir, { recursive: true, withFileTypes: true }))
      .filter((e) => e.isFile())
      .map((e) => path.relative(dir, path.join(e.parentPath, e.name))),
  async datasync(file) {
    const handle = await fsp.open(file, 'r');
    try {
      await handle.datasync();
    } finally {
      await handle.close();
    }
  },
};

// WAL segment names are 24 hex digits (timeline, log, segment); pg_wal also holds archive_status/
const SEGMENT = /^[0-9A-F]{24}$/;
// The kernel stamps mtimes with a coarse clock (one tick, up to 10 ms): a segment written in the
// same tick as the previous flush may show an unchanged mtime, so anything modified within this
// margin of the previous flush is flushed again (fdatasync of a clean file writes nothing).
const MTIME_MARGIN_MS = 2000;

/** Statements that may change data once they complete (a spurious match only costs a flush). */
const WRITES = /\b(insert|update|delete|merge|commit|create|alter|drop|truncate|vacuum|copy)\b/i;

export function mayWrite(statement: string): boolean {
  return WRITES.test(statement);
}

export class WalFlusher {
  /** write statements completed so far */
  private written = 0;
  /** how many of them the last completed flush covered */
  private covered = 0;
  private running: Promise<void> | null = null;
  private lastFlushStartedMs = 0;
  /** flushes run (tests, bench) */
  flushes = 0;
  /** callers of durable() waiting now (tests) */
  waiting = 0;

  private readonly walDir: string;
  private controlMs = -1;
  private lastCheckpointFlushMs = 0;

  constructor(
    /** the PGlite data directory (pgdata) */
    private readonly dataDir: string,
    private readonly fs: FlushFs = nodeFlushFs,
    private readonly now: () => number = Date.now,
  ) {
    this.walDir = path.join(dataDir, 'pg_wal');
  }

  /** Called when a statement that may have written completes: its WAL record is in the page cache now. */
  noteWrite(): void {
    this.written++;
  }

  /** Resolves once every write completed before this call is on disk. */
  async durable(): Promise<void> {
    const target = this.written;
    this.waiting++;
    try {
      await this.until(target);
    } finally {
      this.waiting--;
    }
  }

  private async until(target: number): Promise<void> {
    while (this.covered < target) {
      if (this.running) {
        // a flush that began before our write may not cover it: wait, then look again
        await this.running.catch(() => {});
        continue;
      }
      const run = this.flush();
      this.running = run;
      try {
        await run;
      } finally {
        if (this.running === run) this.running = null;
      }
    }
  }

  /** Flushes every file of the data directory modified since the previous call (after a checkpoint, and at close). */
  async dataFiles(started = this.now()): Promise<void> {
    const since = this.lastCheckpointFlushMs - MTIME_MARGIN_MS;
    for (const rel of await this.fs.files(this.dataDir)) {
      const file = path.join(this.dataDir, rel);
      const modified = await this.fs.modifiedMs(file).catch(() => -1);
      // a file removed meanwhile (a dropped table's) has nothing left to flush
      if (modified >= since)
        await this.fs.datasync(file).catch((err: NodeJS.ErrnoException) => {
          if (err.code !== 'ENOENT') throw err;
        });
    }
    this.lastCheckpointFlushMs = started;
  }

  private async flush(): Promise<void> {
    const covers = this.written;
    const since = this.lastFlushStartedMs - MTIME_MARGIN_MS;
    const started = this.now();
    const names = (await this.fs.list(this.walDir)).filter((n) => SEGMENT.test(n));
    const files = names.map((n) => path.join(this.walDir, n));
    const modified = await Promise.all(files.map((f) => this.fs.modifiedMs(f)));
    // one segment at a time: there are at most a few, and the last written is usually the only one
    for (let i = 0; i < files.length; i++) if (modified[i]! >= since) await this.fs.datasync(files[i]!);
    const control = await this.fs.modifiedMs(path.join(this.dataDir, 'global', 'pg_control')).catch(() => -1);
    if (control !== this.controlMs) {
      // the first flush of a process also lands here: whatever the last one left unflushed
      await this.dataFiles(started);
      this.controlMs = control;
    }
    this.flushes++;
    this.lastFlushStartedMs = started;
    this.covered = Math.max(this.covered, covers);
  }
}
