/**
 * The embedded store on a worker thread of its own (the setting QUEUEMATE_EMBEDDED_THREAD, default
 * `worker`). PGlite is WebAssembly PostgreSQL: a statement runs on the thread that calls it, and on
 * the server's own thread it would take turns with HTTP, JSON and the application. Here PGlite runs
 * in src/db/lite-worker.ts, and this thread holds a stand-in that PGlite's node-postgres adapter
 * (`createPgConfig`) accepts as an instance: it sends the adapter's protocol bytes to the worker
 * and parses the backend's answer with pg's own protocol parser, so the pool, the SQL and the
 * errors (pg's DatabaseError, with its code and constraint) are those of any PostgreSQL. Parsing
 * here costs this thread less than receiving messages parsed by the worker would: a statement's
 * answer of one row parsed in 25 µs where the structured clone of its parsed messages took 31 µs
 * to read, 100 rows 144 µs against 484 µs.
 *
 * Round trips: the adapter hands over each protocol message alone and waits for its answer before
 * the next. Parse, Bind, Describe, Execute and Close are answered by PostgreSQL only at the next
 * Sync or Flush (it holds its output until then), so the stand-in answers them at once with no
 * message and sends them to the worker with that Sync or Flush: one round trip per statement.
 */
import { Worker } from 'node:worker_threads';
import { Parser } from 'pg-protocol/dist/parser.js';
import type { BackendMessage } from 'pg-protocol/dist/messages.js';

export interface LiteWorkerData {
  dataDir: string;
}

export type LiteRequest = { op: 'exec'; bytes: Uint8Array } | { op: 'copy'; dir: string } | { op: 'close' };

export type LiteReply =
  { kind: 'ready' } | { kind: 'failed'; message: string } | { kind: 'done'; data?: Uint8Array } | { kind: 'error'; message: string };

/** The worker is gone or could not open the store; `code` makes the API answer 503 (isStoreUnavailable). */
export class LiteThreadError extends Error {
  readonly code = '57P01';
}

// Parse, Bind, Describe, Execute, Close: the backend answers them at the next Sync or Flush
const HELD = new Set([0x50, 0x42, 0x44, 0x45, 0x43]);

interface Waiting {
  resolve(data: Uint8Array | undefined): void;
  reject(err: Error): void;
}

/**
 * The worker's entry: the compiled .js beside this file, or in a checkout run through tsx the .ts
 * source, which the worker can load only once tsx is registered in it (Node.js 20 does not pass a
 * module loader given with --import on to worker threads).
 */
function startWorker(data: LiteWorkerData): Worker {
  const source = import.meta.url.endsWith('.ts');
  const entry = new URL(source ? './lite-worker.ts' : './lite-worker.js', import.meta.url);
  if (!source) return new Worker(entry, { workerData: data });
  const tsx = import.meta.resolve('tsx/esm/api');
  const boot = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry.href)}); });`;
  return new Worker(boot, { eval: true, workerData: data });
}

export class LiteThread {
  /** what the adapter awaits before its first statement: already resolved, as open() hands out a thread only once PGlite is open */
  readonly waitReady: Promise<void>;
  private readonly worker: Worker;
  private readonly waiting: Waiting[] = [];
  private readonly parser = new Parser();
  private held: Uint8Array[] = [];
  private heldBytes = 0;
  /** why the worker can no longer answer (it stopped, failed or was closed) */
  private gone: Error | null = null;
  private closing: Promise<void> | null = null;

  private constructor(
    private readonly dataDir: string,
    onReady: (err: Error | null) => void,
  ) {
    this.worker = startWorker({ dataDir });
    let opened = false;
    this.waitReady = Promise.resolve();
    this.worker.on('message', (reply: LiteReply) => {
      if (reply.kind === 'ready') {
        opened = true;
        this.worker.unref();
        onReady(null);
      } else if (reply.kind === 'failed') {
        this.stop(new LiteThreadError(reply.message));
        onReady(this.gone);
      } else {
        const w = this.waiting.shift();
        if (this.waiting.length === 0 && !this.closing) this.worker.unref();
        if (reply.kind === 'error') w?.reject(new LiteThreadError(`the embedded store failed: ${reply.message}`));
        else w?.resolve(reply.data);
      }
    });
    this.worker.on('error', (err) => {
      this.stop(new LiteThreadError(opened ? `the embedded store's thread stopped: ${err.message}` : err.message));
      if (!opened) onReady(this.gone);
    });
    this.worker.on('exit', (code) => {
      this.stop(new LiteThreadError(`the embedded store's thread exited (code ${code})`));
      if (!opened) {
        opened = true;
        onReady(this.gone);
      }
    });
  }

  /** Starts the worker and opens PGlite on `dataDir` in it; rejects with the reason it did not open. */
  static open(dataDir: string): Promise<LiteThread> {
    return new Promise((resolve, reject) => {
      let settled = false;
      const thread: LiteThread = new LiteThread(dataDir, (err) => {
        if (settled) return;
        settled = true;
        if (err) {
          void thread.worker.terminate();
          reject(err);
        } else resolve(thread);
      });
    });
  }

  private stop(err: Error): void {
    if (this.gone) return;
    this.gone = err;
    for (const w of this.waiting.splice(0)) w.reject(err);
  }

  private request(req: LiteRequest, transfer: ArrayBuffer[] = []): Promise<Uint8Array | undefined> {
    if (this.gone) return Promise.reject(this.gone);
    return new Promise((resolve, reject) => {
      if (this.waiting.length === 0) this.worker.ref();
      this.waiting.push({ resolve, reject });
      this.worker.postMessage(req, transfer);
    });
  }

  /** What PGlite's node-postgres adapter calls for each protocol message (with throwOnError false). */
  async execProtocolStream(bytes: Uint8Array): Promise<BackendMessage[]> {
    if (HELD.has(bytes[0]!)) {
      this.held.push(bytes);
      this.heldBytes += bytes.length;
      return [];
    }
    // one array of its own, handed over to the worker rather than copied (pg's messages may be
    // slices of a shared buffer)
    const batch = new Uint8Array(this.heldBytes + bytes.length);
    let at = 0;
    for (const part of this.held) {
      batch.set(part, at);
      at += part.length;
    }
    batch.set(bytes, at);
    this.held = [];
    this.heldBytes = 0;
    const data = await this.request({ op: 'exec', bytes: batch }, [batch.buffer]);
    const messages: BackendMessage[] = [];
    if (data && data.length > 0) this.parser.parse(Buffer.from(data.buffer, data.byteOffset, data.byteLength), (m) => messages.push(m));
    return messages;
  }

  /** The backup copy of the database's files into `dir`, between two statements (src/db/embedded-open.ts). */
  async copyFiles(dir: string): Promise<void> {
    await this.request({ op: 'copy', dir });
  }

  /** Closes PGlite in the worker (its shutdown checkpoint done) and ends the thread. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.worker.ref();
      try {
        if (!this.gone) await this.request({ op: 'close' });
      } finally {
        this.stop(new LiteThreadError(`the embedded store in ${this.dataDir} is closed`));
        await this.worker.terminate();
      }
    })();
    return this.closing;
  }
}
