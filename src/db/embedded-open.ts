/**
 * Opening the embedded store's PGlite on a data directory, and copying its files: shared by the
 * store on the server's own thread (src/db/store.ts) and by its worker thread (src/db/lite-worker.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { PGlite } from '@electric-sql/pglite';

/**
 * PostgreSQL settings of the embedded store. shared_buffers at PostgreSQL's 128 MB default is
 * WebAssembly memory that is never given back: a server on PGlite peaked at 503 MB right after
 * start and 463 MB+ under load; at 32 MB it starts at about 390 MB. Pages beyond it come from
 * the operating system's file cache, one read() away.
 */
export const EMBEDDED_SETTINGS = ['-c', 'shared_buffers=32MB'];

/** The database's files inside a data directory. */
export function pgdataOf(dataDir: string): string {
  return path.join(dataDir, 'pgdata');
}

export async function openEmbedded(dataDir: string): Promise<PGlite> {
  const { PGlite } = await import('@electric-sql/pglite');
  return PGlite.create(pgdataOf(dataDir), { startParams: [...PGlite.defaultStartParams, ...EMBEDDED_SETTINGS] });
}

/**
 * One synchronous copy of the database's files into `dir` (a new directory) while PGlite runs no
 * statement: PGlite runs on the copying thread, so nothing writes the files during the copy, which
 * is then what a power cut at that instant would have left on disk, every committed change
 * included; opening it recovers like after such a stop.
 */
export function copyEmbeddedFiles(lite: PGlite, dataDir: string, dir: string): Promise<void> {
  return lite.runExclusive(async () => {
    fs.cpSync(pgdataOf(dataDir), dir, { recursive: true, errorOnExist: true, force: false });
  });
}
