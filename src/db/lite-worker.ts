/**
 * The embedded store's worker thread (src/db/lite-thread.ts starts it): PGlite, WebAssembly
 * PostgreSQL, runs here, so that the server's own thread keeps to HTTP and the application while
 * a statement runs. Requests arrive in order on the thread's port and are answered in that order,
 * one at a time:
 *
 * - `exec`: bytes of the PostgreSQL protocol in, the backend's bytes out (transferred, not copied);
 * - `copy`: the backup copy of the database's files (src/db/embedded-open.ts);
 * - `close`: PGlite's close, whose shutdown checkpoint writes the data files.
 *
 * The first message posted is `ready`, or `failed` with the reason PGlite did not open.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { PGlite } from '@electric-sql/pglite';
import { copyEmbeddedFiles, openEmbedded } from './embedded-open.js';
import type { LiteReply, LiteRequest, LiteWorkerData } from './lite-thread.js';

const port = parentPort!;
const { dataDir } = workerData as LiteWorkerData;

function post(reply: LiteReply, transfer: ArrayBuffer[] = []): void {
  port.postMessage(reply, transfer);
}

let lite: PGlite;
try {
  lite = await openEmbedded(dataDir);
  post({ kind: 'ready' });
} catch (err) {
  post({ kind: 'failed', message: (err as Error)?.message ?? String(err) });
  port.close();
}

async function answer(req: LiteRequest): Promise<void> {
  try {
    switch (req.op) {
      case 'exec': {
        const out = await lite.execProtocolRaw(req.bytes);
        // a fresh array of its own (PGlite copies its output buffer): safe to hand over
        const data = out.byteOffset === 0 && out.byteLength === out.buffer.byteLength ? out : out.slice();
        post({ kind: 'done', data }, [data.buffer as ArrayBuffer]);
        return;
      }
      case 'copy':
        await copyEmbeddedFiles(lite, dataDir, req.dir);
        post({ kind: 'done' });
        return;
      case 'close':
        await lite.close();
        post({ kind: 'done' });
        port.close();
        return;
    }
  } catch (err) {
    post({ kind: 'error', message: (err as Error)?.message ?? String(err) });
  }
}

// one request at a time, in the order they came: PGlite's exec awaits between statements
let chain = Promise.resolve();
port.on('message', (req: LiteRequest) => {
  chain = chain.then(() => answer(req));
});
