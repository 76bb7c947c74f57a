/**
 * The backup file of the embedded store: a gzip-compressed tar archive (POSIX ustar), so that
 * `tar -tzf` lists it. Its first entry is `queuemate-backup.json` (what made it and when), then the
 * files of the data directory under `pgdata/`. Only what a backup needs is written and read:
 * directories and regular files, with names short enough for ustar's 100 + 155 bytes.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import zlib from 'node:zlib';
import { Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

export const MANIFEST = 'queuemate-backup.json';
export const FORMAT = 'queuemate-backup';

export interface Manifest {
  format: typeof FORMAT;
  formatVersion: 1;
  /** the Queuemate version that wrote it */
  queuemate: string;
  /** when the copy of the data directory was taken (ISO 8601) */
  takenAt: string;
  /** taken from a running server (true) or from a stopped store */
  online: boolean;
}

export class ArchiveError extends Error {}

const BLOCK = 512;

function octal(value: number, width: number): string {
  return value.toString(8).padStart(width - 1, '0') + '\0';
}

function header(name: string, size: number, type: '0' | '5', mode: number, mtime: number): Buffer {
  const h = Buffer.alloc(BLOCK);
  let prefix = '';
  let base = name;
  if (Buffer.byteLength(name) > 100) {
    const cut = name.lastIndexOf('/', 155);
    if (cut <= 0 || Buffer.byteLength(name.slice(cut + 1)) > 100) throw new ArchiveError(`file name too long for the archive: ${name}`);
    prefix = name.slice(0, cut);
    base = name.slice(cut + 1);
  }
  h.write(base, 0, 100, 'utf8');
  h.write(octal(mode & 0o7777, 8), 100, 8, 'ascii');
  h.write(octal(0, 8), 108, 8, 'ascii');
  h.write(octal(0, 8), 116, 8, 'ascii');
  h.write(octal(size, 12), 124, 12, 'ascii');
  h.write(octal(Math.floor(mtime / 1000), 12), 136, 12, 'ascii');
  h.write('        ', 148, 8, 'ascii');
  h.write(type, 156, 1, 'ascii');
  h.write('ustar\0', 257, 6, 'ascii');
  h.write('00', 263, 2, 'ascii');
  h.write(prefix, 345, 155, 'utf8');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 8, 'ascii');
  return h;
}

function padding(size: number): Buffer {
  const rest = size % BLOCK;
  return Buffer.alloc(rest === 0 ? 0 : BLOCK - rest);
}

/** The archive's bytes (uncompressed tar): the manifest, then every file under `dir` as `pgdata/...`. */
async function* tarOf(manifest: Manifest, dir: string): AsyncGenerator<Buffer> {
  const json = Buffer.from(JSON.stringify(manifest, null, 2) + '\n');
  yield header(MANIFEST, json.length, '0', 0o644, Date.now());
  yield json;
  yield padding(json.length);
  yield header('pgdata/', 0, '5', 0o700, Date.now());
  const entries = await fsp.readdir(dir, { recursive: true, withFileTypes: true });
  entries.sort((a, b) => path.join(a.parentPath, a.name).localeCompare(path.join(b.parentPath, b.name)));
  for (const e of entries) {
    const abs = path.join(e.parentPath, e.name);
    const rel = path.relative(dir, abs).split(path.sep).join('/');
    const st = await fsp.stat(abs);
    if (e.isDirectory()) {
      yield header(`pgdata/${rel}/`, 0, '5', st.mode, st.mtimeMs);
    } else if (e.isFile()) {
      yield header(`pgdata/${rel}`, st.size, '0', st.mode, st.mtimeMs);
      let sent = 0;
      // the size in the header is the size read: the copy is not written to while it is archived
      if (st.size > 0)
        for await (const chunk of fs.createReadStream(abs, { end: st.size - 1 }) as AsyncIterable<Buffer>) {
          sent += chunk.length;
          yield chunk;
        }
      if (sent !== st.size) throw new ArchiveError(`${rel} changed size while it was archived`);
      yield padding(st.size);
    }
  }
  yield Buffer.alloc(BLOCK * 2);
}

/** Writes the archive of `dir` (gzip) to `out`. */
export async function writeArchive(manifest: Manifest, dir: string, out: Writable): Promise<void> {
  await pipeline(Readable.from(tarOf(manifest, dir)), zlib.createGzip({ level: 6 }), out);
}

export interface ReadResult {
  manifest: Manifest;
  files: number;
  bytes: number;
}

/**
 * Reads an archive from `input` (gzip), checking it is whole: a Queuemate backup, every entry
 * complete, the end marker present. With `into`, writes the data directory's files there
 * (`into` is the pgdata directory itself); without, only checks.
 */
export async function readArchive(input: AsyncIterable<Buffer> | NodeJS.ReadableStream, into?: string): Promise<ReadResult> {
  const gunzip = zlib.createGunzip();
  const source = input as NodeJS.ReadableStream;
  let feedError: Error | null = null;
  const feed = pipeline(source, gunzip).catch((err: Error) => {
    feedError = err;
  });
  let buf: Buffer = Buffer.alloc(0);
  let manifest: Manifest | null = null;
  let files = 0;
  let bytes = 0;
  let ended = false;
  // the current entry: bytes still to read, where they go
  let remaining = 0;
  let pad = 0;
  let fd: number | null = null;
  let manifestBytes: Buffer[] | null = null;

  const target = (name: string): string | null => {
    if (!name.startsWith('pgdata/')) throw new ArchiveError(`unexpected entry ${name} in the backup`);
    const rel = name.slice('pgdata/'.length).replace(/\/$/, '');
    if (rel.split('/').some((p) => p === '..' || p === '') && rel !== '') throw new ArchiveError(`unsafe entry ${name} in the backup`);
    if (path.isAbsolute(rel)) throw new ArchiveError(`unsafe entry ${name} in the backup`);
    return into ? path.join(into, rel) : null;
  };

  try {
    for await (const chunk of gunzip as AsyncIterable<Buffer>) {
      buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
      while (!ended) {
        if (remaining > 0) {
          if (buf.length === 0) break;
          const take = Math.min(remaining, buf.length);
          const part = buf.subarray(0, take);
          if (fd !== null) fs.writeSync(fd, part);
          if (manifestBytes) manifestBytes.push(Buffer.from(part));
          bytes += take;
          remaining -= take;
          buf = buf.subarray(take);
          if (remaining > 0) break;
          if (fd !== null) {
            fs.closeSync(fd);
            fd = null;
          }
          if (manifestBytes) {
            try {
              manifest = JSON.parse(Buffer.concat(manifestBytes).toString('utf8')) as Manifest;
            } catch {
              throw new ArchiveError('not a Queuemate backup: its manifest is not JSON');
            }
            if (manifest?.format !== FORMAT) throw new ArchiveError('not a Queuemate backup: unknown manifest');
            manifestBytes = null;
          }
        }
        if (pad > 0) {
          const skip = Math.min(pad, buf.length);
          buf = buf.subarray(skip);
          pad -= skip;
          if (pad > 0) break;
        }
        if (buf.length < BLOCK) break;
        const h = buf.subarray(0, BLOCK);
        buf = buf.subarray(BLOCK);
        if (h.every((b) => b === 0)) {
          ended = true;
          break;
        }
        if (h.toString('ascii', 257, 262) !== 'ustar') throw new ArchiveError('not a Queuemate backup: not a tar archive');
        const str = (start: number, len: number) => h.toString('utf8', start, start + len).replace(/\0.*$/s, '');
        const prefix = str(345, 155);
        const name = prefix ? `${prefix}/${str(0, 100)}` : str(0, 100);
        const size = Number.parseInt(str(124, 12).trim() || '0', 8);
        const type = String.fromCharCode(h[156]!);
        if (manifest === null && name !== MANIFEST) throw new ArchiveError('not a Queuemate backup: no manifest first');
        if (name === MANIFEST) {
          if (manifest !== null) throw new ArchiveError('not a Queuemate backup: two manifests');
          manifestBytes = [];
        } else if (type === '5') {
          const dir = target(name);
          if (dir) fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
        } else if (type === '0' || type === '\0') {
          const file = target(name);
          if (file) {
            fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
            fd = fs.openSync(file, 'w', 0o600);
          }
          files++;
        } else {
          throw new ArchiveError(`unexpected entry type in the backup (${name})`);
        }
        remaining = size;
        pad = padding(size).length;
        if (size === 0 && fd !== null) {
          fs.closeSync(fd);
          fd = null;
        }
      }
    }
    await feed;
    if (feedError) throw feedError;
  } catch (err) {
    if (err instanceof ArchiveError) throw err;
    throw new ArchiveError(`not a Queuemate backup, or a damaged one: ${(err as Error).message}`);
  } finally {
    if (fd !== null) fs.closeSync(fd);
  }
  if (!ended || remaining > 0 || manifest === null) throw new ArchiveError('the backup is incomplete (it ends before its last file)');
  return { manifest, files, bytes };
}
