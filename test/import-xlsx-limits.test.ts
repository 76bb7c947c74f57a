/**
 * XLSX uploads are bounded by what they inflate to (src/bulk/xlsx.ts): a "zip bomb" (a few MB
 * whose shared strings inflate to 1.5 GB) is refused before it is inflated, one whose ZIP
 * directory understates a part is refused the moment the part passes its declared size, too many
 * shared strings or too long a row are refused naming the limit, and the server's memory stays
 * within the bound docs/people-api.md states while it reads the worst of them.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant } from './helpers/seed.js';
import { asPerson, peopleOfEveryRole, type TestPerson } from './helpers/people.js';
import { XLSX_LIMITS } from '../src/bulk/xlsx.js';

/** docs/people-api.md: how much an XLSX import may add to the server's memory (resident set) */
const MEMORY_BOUND = 384 * 1024 * 1024;

let t: TestApp;
let agent: TestPerson;
let pid: number;

before(async () => {
  t = await testApp();
  const tenant = await seedTenant(t.store, 'xlsxlim', { processes: [{ processKey: 'Plain' }] });
  agent = (await peopleOfEveryRole(t.store, tenant.tenantId, '', new Date())).agent;
  pid = (await t.store.db.selectFrom('processes').select('id').where('tenant_id', '=', tenant.tenantId).executeTakeFirstOrThrow()).id;
});
after(() => t.close());

/** A part's deflated bytes and its real inflated size. */
interface Part {
  name: string;
  data: Buffer;
  size: number;
  /** the size the ZIP directory says (default: the real one) */
  declared?: number;
}

const deflated = (name: string, text: string): Part => {
  const raw = Buffer.from(text);
  return { name, data: zlib.deflateRawSync(raw), size: raw.length };
};

/**
 * A part of `head`, then `unit` repeated `times`, then `tail`, deflated without ever holding it
 * inflated: each piece is deflated on its own with a full flush (self-contained and byte-aligned),
 * so the repeated piece's few bytes are simply repeated.
 */
function repeated(name: string, head: string, unit: string, times: number, tail: string): Part {
  const perBlock = Math.max(1, Math.floor((1024 * 1024) / unit.length));
  const full = zlib.constants.Z_FULL_FLUSH;
  const chunks: Buffer[] = [zlib.deflateRawSync(Buffer.from(head), { finishFlush: full })];
  const block = zlib.deflateRawSync(Buffer.from(unit.repeat(perBlock)), { finishFlush: full });
  for (let left = times; left > 0; left -= perBlock) {
    chunks.push(left >= perBlock ? block : zlib.deflateRawSync(Buffer.from(unit.repeat(left)), { finishFlush: full }));
  }
  chunks.push(zlib.deflateRawSync(Buffer.from(tail)));
  return { name, data: Buffer.concat(chunks), size: Buffer.byteLength(head) + unit.length * times + Buffer.byteLength(tail) };
}

/** A ZIP archive of the parts (deflate), with sizes as declared. */
function zip(parts: Part[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const p of parts) {
    const name = Buffer.from(p.name);
    const size = p.declared ?? p.size;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(8, 8);
    local.writeUInt32LE(p.data.length, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(8, 10);
    central.writeUInt32LE(p.data.length, 20);
    central.writeUInt32LE(size, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, p.data);
    centrals.push(central, name);
    offset += 30 + name.length + p.data.length;
  }
  const dir = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(parts.length, 8);
  end.writeUInt16LE(parts.length, 10);
  end.writeUInt32LE(dir.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, dir, end]);
}

const NS = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
const REL = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';

/** A workbook of one sheet: the header `name`, then one row per value; `strings` replaces the shared strings part. */
function workbook(opts: { strings?: Part; sheet?: Part } = {}): Buffer {
  const parts = [
    deflated(
      '[Content_Types].xml',
      '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>',
    ),
    deflated(
      'xl/workbook.xml',
      `<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="${NS}" xmlns:r="${REL}"><sheets><sheet name="S" sheetId="1" r:id="rId1"/></sheets></workbook>`,
    ),
    deflated(
      'xl/_rels/workbook.xml.rels',
      `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
        `<Relationship Id="rId1" Type="${REL}/worksheet" Target="worksheets/sheet1.xml"/>` +
        `<Relationship Id="rId2" Type="${REL}/sharedStrings" Target="sharedStrings.xml"/></Relationships>`,
    ),
    opts.strings ??
      deflated(
        'xl/sharedStrings.xml',
        `<?xml version="1.0" encoding="UTF-8"?><sst xmlns="${NS}"><si><t>name</t></si><si><t>Ada</t></si></sst>`,
      ),
    opts.sheet ??
      deflated(
        'xl/worksheets/sheet1.xml',
        `<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="${NS}"><sheetData>` +
          '<row r="1"><c r="A1" t="s"><v>0</v></c></row><row r="2"><c r="A2" t="s"><v>1</v></c></row></sheetData></worksheet>',
      ),
  ];
  return zip(parts);
}

/** Shared strings: `name`, `Ada`, then `count` more of `text`. */
const manyStrings = (count: number, text: string, declared?: number): Part => ({
  ...repeated(
    'xl/sharedStrings.xml',
    `<?xml version="1.0" encoding="UTF-8"?><sst xmlns="${NS}"><si><t>name</t></si><si><t>Ada</t></si>`,
    `<si><t>${text}</t></si>`,
    count,
    '</sst>',
  ),
  ...(declared !== undefined ? { declared } : {}),
});

/**
 * The dry run of `file`, with the most the server's resident set grew while it ran (sampled every
 * 5 ms and at the end; the worst case runs first, before other uploads have grown the heap).
 */
async function dryRun(file: Buffer): Promise<{ status: number; body: any; grew: number }> {
  const base = process.memoryUsage.rss();
  let peak = base;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 5);
  try {
    const res = await asPerson(t.app, agent, {
      method: 'POST',
      url: `/v1/processes/${pid}/tasks/import?dryRun=true`,
      headers: { 'content-type': 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet' },
      payload: file,
    });
    peak = Math.max(peak, process.memoryUsage.rss());
    return { status: res.statusCode, body: res.json(), grew: peak - base };
  } finally {
    clearInterval(timer);
  }
}

test('the writer of these files makes a workbook the import reads', async () => {
  const r = await dryRun(workbook());
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.rows, 1);
  assert.equal(r.body.valid, 1);
  assert.deepEqual(r.body.columns, [{ column: 'name', field: 'name' }]);
});

test('the worst upload within the limits (1,000,000 shared strings filling 64 MiB) is read within the memory bound', async () => {
  const unit = Math.floor((XLSX_LIMITS.sharedStringsBytes - 200) / (XLSX_LIMITS.sharedStrings - 2)) - '<si><t></t></si>'.length;
  const strings = manyStrings(XLSX_LIMITS.sharedStrings - 2, 'y'.repeat(unit));
  assert.ok(strings.size <= XLSX_LIMITS.sharedStringsBytes && strings.size > XLSX_LIMITS.sharedStringsBytes - 1024 * 1024);
  const r = await dryRun(workbook({ strings }));
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.rows, 1);
  assert.ok(r.grew < MEMORY_BOUND, `memory grew ${r.grew}`);
  console.log(`# worst case within the limits: resident set grew ${Math.round(r.grew / 1024 / 1024)} MiB`);
});

test('a zip bomb (3 MB whose shared strings inflate to 1.5 GB, 1.5 million strings) is refused 413 naming the limit, without reading it', async () => {
  const strings = manyStrings(1_500_000, 'x'.repeat(1000));
  assert.ok(strings.size > 1.5e9);
  const file = workbook({ strings });
  assert.ok(file.length < 8 * 1024 * 1024, `the file is small: ${file.length}`);
  const r = await dryRun(file);
  assert.equal(r.status, 413, JSON.stringify(r.body));
  assert.equal(r.body.code, 'payload_too_large');
  assert.match(r.body.message, /shared strings/);
  assert.match(r.body.message, /64 MiB/);
  assert.ok(r.grew < MEMORY_BOUND, `memory grew ${r.grew}`);
});

test('the same bomb with its ZIP directory understating it is refused 400 once it passes the declared size; memory stays bounded', async () => {
  const declared = XLSX_LIMITS.sharedStringsBytes;
  const r = await dryRun(workbook({ strings: manyStrings(1_500_000, 'x'.repeat(1000), declared) }));
  assert.equal(r.status, 400, JSON.stringify(r.body));
  assert.equal(r.body.code, 'invalid_body');
  assert.match(r.body.message, new RegExp(`xl/sharedStrings\\.xml inflates to more than the ${declared} bytes`));
  assert.ok(r.grew < MEMORY_BOUND, `memory grew ${r.grew}`);
});

test('more shared strings than the limit, in fewer bytes than its limit, are refused 413 naming the count; memory stays bounded', async () => {
  const r = await dryRun(workbook({ strings: manyStrings(1_500_000, '') }));
  assert.equal(r.status, 413, JSON.stringify(r.body));
  assert.match(r.body.message, new RegExp(`more than ${XLSX_LIMITS.sharedStrings} shared strings`));
  assert.ok(r.grew < MEMORY_BOUND, `memory grew ${r.grew}`);
});

test('a row longer than the row limit is refused 413 naming it', async () => {
  const sheet = repeated(
    'xl/worksheets/sheet1.xml',
    `<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="${NS}"><sheetData><row r="1"><c r="A1" t="s"><v>0</v></c></row>` +
      '<row r="2"><c r="A2" t="inlineStr"><is><t>',
    'z'.repeat(1024),
    5 * 1024,
    '</t></is></c></row></sheetData></worksheet>',
  );
  const r = await dryRun(workbook({ sheet }));
  assert.equal(r.status, 413, JSON.stringify(r.body));
  assert.match(r.body.message, /A row of the XLSX file's first worksheet takes more than 4 MiB/);
});

test('a part whose declared size passes its limit is refused before anything is inflated', async () => {
  const sheet = {
    ...deflated('xl/worksheets/sheet1.xml', `<worksheet xmlns="${NS}"><sheetData/></worksheet>`),
    declared: 300 * 1024 * 1024,
  };
  const r = await dryRun(workbook({ sheet }));
  assert.equal(r.status, 413, JSON.stringify(r.body));
  assert.match(r.body.message, /first worksheet \(xl\/worksheets\/sheet1\.xml\) inflate to 300 MiB; an import reads at most 256 MiB/);
  const garbage = await dryRun(Buffer.concat([Buffer.from('PK\x03\x04'), Buffer.alloc(100)]));
  assert.equal(garbage.status, 400);
  assert.equal(garbage.body.code, 'invalid_body');
});
