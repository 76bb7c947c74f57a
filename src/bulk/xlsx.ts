/**
 * Reading the rows of an XLSX file's first worksheet within bounded memory and work, whatever the
 * file claims (docs/people-api.md, "Importing tasks"). An XLSX file is a ZIP archive of XML parts;
 * a few MB of it may inflate to gigabytes (a "zip bomb"). So:
 *
 * - the upload is written to a temporary file (a Buffer is read where it is), and the archive's
 *   central directory is read first: each part the import reads (the workbook, its relations, the
 *   styles, the shared strings and the first worksheet) must declare an inflated size within its
 *   limit, and all of them together within XLSX_LIMITS.totalBytes, or the file is refused (413)
 *   before anything is inflated;
 * - each part is inflated as a stream that stops the moment it passes its declared size (a part
 *   that lies about its size is refused as corrupt, 400); no other part is inflated at all;
 * - the shared strings (the text cells point into) are the one thing held whole: at most
 *   XLSX_LIMITS.sharedStrings strings in at most XLSX_LIMITS.sharedStringsBytes of XML, kept as
 *   plain text; the worksheet is read row by row, and one row may take at most
 *   XLSX_LIMITS.rowBytes of XML.
 *
 * The XML is parsed by exceljs's streaming reader (its part parsers; this module feeds them the
 * parts it inflated itself).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { StringDecoder } from 'node:string_decoder';
import { Readable, Transform, pipeline } from 'node:stream';
import { pipeline as pipelineAsync } from 'node:stream/promises';
import { Refusal } from '../lib/errors.js';

const MiB = 1024 * 1024;

/** What an XLSX upload may inflate to. */
export const XLSX_LIMITS = {
  /** the first worksheet's XML */
  sheetBytes: 256 * MiB,
  /** the shared strings' XML (xl/sharedStrings.xml) */
  sharedStringsBytes: 64 * MiB,
  /** shared strings (`<si>` items) */
  sharedStrings: 1_000_000,
  /** the styles' XML (xl/styles.xml: number formats tell dates from numbers) */
  stylesBytes: 8 * MiB,
  /** any other part read (the workbook and its relations) */
  otherPartBytes: 4 * MiB,
  /** all the parts read, together */
  totalBytes: 320 * MiB,
  /** one row of the worksheet (the XML between two rows) */
  rowBytes: 4 * MiB,
  /** entries in the archive */
  entries: 10_000,
  /** the archive's central directory */
  directoryBytes: 16 * MiB,
};

const showBytes = (n: number) => (n >= MiB ? `${Math.round((n / MiB) * 10) / 10} MiB` : `${n} bytes`);
const tooBig = (message: string) => new Refusal('payload_too_large', message);
const corrupt = (message: string) => new Refusal('invalid_body', `The XLSX file cannot be read: ${message}`);

/** The archive's bytes: a temporary file, or a Buffer. */
interface Source {
  size: number;
  read(pos: number, len: number): Promise<Buffer>;
  stream(start: number, end: number): Readable;
}

function bufferSource(buf: Buffer): Source {
  return {
    size: buf.length,
    read: async (pos, len) => buf.subarray(pos, Math.min(buf.length, pos + len)),
    stream: (start, end) => Readable.from([buf.subarray(start, end)]),
  };
}

async function fileSource(file: string, handle: fs.promises.FileHandle): Promise<Source> {
  const { size } = await handle.stat();
  return {
    size,
    async read(pos, len) {
      const buf = Buffer.alloc(Math.max(0, Math.min(len, size - pos)));
      if (buf.length) await handle.read(buf, 0, buf.length, pos);
      return buf;
    },
    stream: (start, end) => (end > start ? fs.createReadStream(file, { start, end: end - 1 }) : Readable.from([])),
  };
}

interface Entry {
  name: string;
  flags: number;
  method: number;
  compressedSize: number;
  size: number;
  offset: number;
}

const EOCD = 0x06054b50;
const ZIP64_LOCATOR = 0x07064b50;
const ZIP64_EOCD = 0x06064b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;

function u64(buf: Buffer, at: number): number {
  const n = buf.readBigUInt64LE(at);
  if (n > BigInt(Number.MAX_SAFE_INTEGER)) throw corrupt('a size in its ZIP directory is out of range');
  return Number(n);
}

/** The archive's central directory: every entry with its declared sizes. */
async function readDirectory(src: Source): Promise<Map<string, Entry>> {
  const tailLen = Math.min(src.size, 22 + 0xffff);
  const tail = await src.read(src.size - tailLen, tailLen);
  let at = -1;
  for (let i = tail.length - 22; i >= 0; i--) {
    if (tail.readUInt32LE(i) === EOCD) {
      at = i;
      break;
    }
  }
  if (at < 0) throw corrupt('it is not a ZIP archive (an XLSX file is one)');
  let count = tail.readUInt16LE(at + 10);
  let dirSize = tail.readUInt32LE(at + 12);
  let dirOffset = tail.readUInt32LE(at + 16);
  if (count === 0xffff || dirSize === 0xffffffff || dirOffset === 0xffffffff) {
    const locatorAt = src.size - tailLen + at - 20;
    const locator = locatorAt >= 0 ? await src.read(locatorAt, 20) : Buffer.alloc(0);
    if (locator.length < 20 || locator.readUInt32LE(0) !== ZIP64_LOCATOR) throw corrupt('its ZIP64 directory is missing');
    const z = await src.read(u64(locator, 8), 56);
    if (z.length < 56 || z.readUInt32LE(0) !== ZIP64_EOCD) throw corrupt('its ZIP64 directory is missing');
    count = u64(z, 32);
    dirSize = u64(z, 40);
    dirOffset = u64(z, 48);
  }
  if (count > XLSX_LIMITS.entries)
    throw tooBig(`The XLSX file has ${count} parts; an import reads files of at most ${XLSX_LIMITS.entries}`);
  if (dirSize > XLSX_LIMITS.directoryBytes)
    throw tooBig(
      `The XLSX file's ZIP directory takes ${showBytes(dirSize)}; an import reads at most ${showBytes(XLSX_LIMITS.directoryBytes)}`,
    );
  if (dirOffset + dirSize > src.size) throw corrupt('its ZIP directory lies past its end');
  const dir = await src.read(dirOffset, dirSize);
  const entries = new Map<string, Entry>();
  let p = 0;
  for (let i = 0; i < count; i++) {
    if (p + 46 > dir.length || dir.readUInt32LE(p) !== CENTRAL) throw corrupt('its ZIP directory is damaged');
    const nameLen = dir.readUInt16LE(p + 28);
    const extraLen = dir.readUInt16LE(p + 30);
    const commentLen = dir.readUInt16LE(p + 32);
    if (p + 46 + nameLen + extraLen + commentLen > dir.length) throw corrupt('its ZIP directory is damaged');
    const entry: Entry = {
      name: dir.toString('utf8', p + 46, p + 46 + nameLen),
      flags: dir.readUInt16LE(p + 8),
      method: dir.readUInt16LE(p + 10),
      compressedSize: dir.readUInt32LE(p + 20),
      size: dir.readUInt32LE(p + 24),
      offset: dir.readUInt32LE(p + 42),
    };
    // ZIP64 sizes: the extra field holds those whose 32-bit field is all ones, in this order
    let e = p + 46 + nameLen;
    const extraEnd = e + extraLen;
    while (e + 4 <= extraEnd) {
      const id = dir.readUInt16LE(e);
      const len = dir.readUInt16LE(e + 2);
      if (id === 0x0001) {
        let q = e + 4;
        const take = () => {
          if (q + 8 > e + 4 + len) throw corrupt('its ZIP64 sizes are damaged');
          const n = u64(dir, q);
          q += 8;
          return n;
        };
        if (entry.size === 0xffffffff) entry.size = take();
        if (entry.compressedSize === 0xffffffff) entry.compressedSize = take();
        if (entry.offset === 0xffffffff) entry.offset = take();
      }
      e += 4 + len;
    }
    entries.set(entry.name.replace(/^\//, ''), entry);
    p += 46 + nameLen + extraLen + commentLen;
  }
  return entries;
}

/**
 * One part, inflated as text: refused (corrupt) the moment it passes its declared size, which
 * the caller checked against its limit. `onBytes` sees the inflated byte count as it grows.
 */
async function openPart(src: Source, entry: Entry, onBytes?: (n: number) => Refusal | null): Promise<Readable> {
  if (entry.flags & 1) throw corrupt(`${entry.name} is encrypted`);
  if (entry.method !== 0 && entry.method !== 8) throw corrupt(`${entry.name} is compressed with method ${entry.method} (not deflate)`);
  const local = await src.read(entry.offset, 30);
  if (local.length < 30 || local.readUInt32LE(0) !== LOCAL) throw corrupt(`${entry.name} is not where its ZIP directory says`);
  const start = entry.offset + 30 + local.readUInt16LE(26) + local.readUInt16LE(28);
  const end = start + entry.compressedSize;
  if (end > src.size) throw corrupt(`${entry.name} lies past the file's end`);
  let seen = 0;
  const cap = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      seen += chunk.length;
      if (seen > entry.size) return cb(corrupt(`${entry.name} inflates to more than the ${entry.size} bytes its ZIP directory declares`));
      const refusal = onBytes?.(seen);
      if (refusal) return cb(refusal);
      cb(null, chunk);
    },
  });
  const decoder = new StringDecoder('utf8');
  const text = new Transform({
    readableObjectMode: true,
    transform(chunk: Buffer, _enc, cb) {
      const s = decoder.write(chunk);
      cb(null, s.length ? s : undefined);
    },
    flush(cb) {
      const s = decoder.end();
      cb(null, s.length ? s : undefined);
    },
  });
  const stages = entry.method === 8 ? [src.stream(start, end), zlib.createInflateRaw(), cap, text] : [src.stream(start, end), cap, text];
  // an error in any stage ends the text stream with it (the reader sees it)
  pipeline(stages as [Readable, ...Transform[]], (err) => {
    if (err && !text.destroyed) text.destroy(err);
  });
  return text;
}

/** exceljs's streaming workbook reader, as this module drives it (its part parsers). */
interface WorkbookReaderParts {
  options: Record<string, unknown>;
  model?: { sheets?: { rId?: string }[] };
  workbookRels?: { Id: string; Target: string }[];
  sharedStrings?: unknown[];
  _parseRels(part: Readable): Promise<void>;
  _parseWorkbook(part: Readable): Promise<void>;
  _parseStyles(part: Readable): Promise<void>;
  _parseSharedStrings(part: Readable): AsyncGenerator<{ index: number; text: unknown }>;
  _parseWorksheet(part: Readable, sheetNo: string): Generator<{ eventType: string; value: AsyncIterable<{ values: unknown }> }>;
}

/** A shared string as plain text (rich text runs joined). */
function sharedText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object' && Array.isArray((v as { richText?: unknown }).richText))
    return ((v as { richText: { text?: string | null }[] }).richText ?? []).map((r) => r.text ?? '').join('');
  return v === null || v === undefined ? '' : String(v);
}

/**
 * The first worksheet's rows (each the cells' values, exceljs's, from column A), within
 * XLSX_LIMITS. Refuses a file beyond them (`payload_too_large`, naming the limit) and a damaged
 * one (`invalid_body`).
 */
export async function* xlsxRows(input: Readable | Buffer): AsyncGenerator<unknown[]> {
  let dir: string | null = null;
  let handle: fs.promises.FileHandle | null = null;
  try {
    let src: Source;
    if (Buffer.isBuffer(input)) src = bufferSource(input);
    else {
      dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'queuemate-import-'));
      const file = path.join(dir, 'upload.xlsx');
      await pipelineAsync(input, fs.createWriteStream(file));
      handle = await fs.promises.open(file, 'r');
      src = await fileSource(file, handle);
    }
    yield* rowsOf(src);
  } finally {
    await handle?.close();
    if (dir) await fs.promises.rm(dir, { recursive: true, force: true });
  }
}

async function* rowsOf(src: Source): AsyncGenerator<unknown[]> {
  const entries = await readDirectory(src);
  // loaded on the first XLSX import, not at start (it is the largest module of the server)
  const { default: ExcelJS } = await import('exceljs');
  const reader = new ExcelJS.stream.xlsx.WorkbookReader(Readable.from([]), {
    worksheets: 'emit',
    sharedStrings: 'emit',
    hyperlinks: 'ignore',
    styles: 'cache',
    entries: 'ignore',
  }) as unknown as WorkbookReaderParts;

  const rels = entries.get('xl/_rels/workbook.xml.rels');
  const workbook = entries.get('xl/workbook.xml');
  const styles = entries.get('xl/styles.xml');
  const strings = entries.get('xl/sharedStrings.xml');
  // the parts are read before the sheet is chosen (the workbook names it); their sizes are checked first
  const limited = (e: Entry | undefined, limit: number, what: string) => {
    if (e && e.size > limit)
      throw tooBig(
        `The XLSX file's ${what} (${e.name}) inflate to ${showBytes(e.size)}; an import reads at most ${showBytes(limit)} of them`,
      );
  };
  limited(rels, XLSX_LIMITS.otherPartBytes, 'workbook relations');
  limited(workbook, XLSX_LIMITS.otherPartBytes, 'workbook');
  limited(styles, XLSX_LIMITS.stylesBytes, 'styles');
  limited(strings, XLSX_LIMITS.sharedStringsBytes, 'shared strings');
  if (rels) await reader._parseRels(await openPart(src, rels));
  if (workbook) await reader._parseWorkbook(await openPart(src, workbook));

  // the first worksheet: the workbook's first sheet, else the first sheetN.xml in the archive
  const isSheet = /^xl\/worksheets\/sheet(\d+)\.xml$/;
  const firstRel = reader.model?.sheets?.[0]?.rId;
  const target = reader.workbookRels?.find((r) => r.Id === firstRel)?.Target;
  const named = target === undefined ? undefined : target.startsWith('/') ? target.slice(1) : `xl/${target}`;
  const sheetName = named && isSheet.test(named) && entries.has(named) ? named : [...entries.keys()].find((n) => isSheet.test(n));
  if (!sheetName) throw corrupt('it has no worksheet');
  const sheet = entries.get(sheetName)!;
  limited(sheet, XLSX_LIMITS.sheetBytes, 'first worksheet');
  const total = [rels, workbook, styles, strings, sheet].reduce((n, e) => n + (e?.size ?? 0), 0);
  if (total > XLSX_LIMITS.totalBytes)
    throw tooBig(
      `The XLSX file's parts an import reads inflate to ${showBytes(total)}; it reads at most ${showBytes(XLSX_LIMITS.totalBytes)}`,
    );

  if (styles) await reader._parseStyles(await openPart(src, styles));
  const shared: string[] = [];
  if (strings) {
    for await (const s of reader._parseSharedStrings(await openPart(src, strings))) {
      if (shared.length >= XLSX_LIMITS.sharedStrings)
        throw tooBig(
          `The XLSX file has more than ${XLSX_LIMITS.sharedStrings} shared strings; an import reads at most ${XLSX_LIMITS.sharedStrings}`,
        );
      shared.push(sharedText(s.text));
    }
  }
  reader.sharedStrings = shared;

  // the XML read since the last row: bounded, so one row (or what lies between rows) cannot grow without end
  let read = 0;
  let atLastRow = 0;
  const part = await openPart(src, sheet, (n) => {
    read = n;
    return read - atLastRow > XLSX_LIMITS.rowBytes
      ? tooBig(
          `A row of the XLSX file's first worksheet takes more than ${showBytes(XLSX_LIMITS.rowBytes)}; an import reads rows of at most that`,
        )
      : null;
  });
  const sheetNo = isSheet.exec(sheetName)![1];
  for (const { eventType, value } of reader._parseWorksheet(part, sheetNo)) {
    if (eventType !== 'worksheet') continue;
    for await (const row of value) {
      atLastRow = read;
      // row.values is 1-based (index 0 unused)
      yield (row.values as unknown[]).slice(1);
    }
    return;
  }
}
