/** Importing tasks from CSV and XLSX (src/bulk/import.ts): mapping, per-row errors, all-or-nothing commit, as the user. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { sql } from 'kysely';
import ExcelJS from 'exceljs';
import { testApp, updateSettings, type TestApp } from './helpers/app.js';
import { seedTenant, seedUser, type SeededTenant } from './helpers/seed.js';
import { inTx, personCaller, refusalOf } from './helpers/person.js';
import { ManualClock } from '../src/lib/clock.js';
import { createProcess } from '../src/processes/service.js';
import { loadProcessById, type ProcessDef } from '../src/processes/store.js';
import { commitImport, importFormat, parseImportFile, previewImport } from '../src/bulk/import.js';
import type { Caller } from '../src/lib/caller.js';

const clock = new ManualClock('2026-06-01T08:00:00.000Z');
let t: TestApp;
let tenant: SeededTenant;
let other: SeededTenant;
let user: { id: number; username: string };
let n = 0;

before(async () => {
  t = await testApp({ clock });
  tenant = await seedTenant(t.store, 'imp', { timeZone: 'Europe/Copenhagen' });
  other = await seedTenant(t.store, 'imp-other');
  user = await seedUser(t.store, tenant.tenantId, 'ida', 'agent');
});
after(() => t.close());

const me = (): Caller => personCaller(tenant.tenantId, user, clock.now(), 'Europe/Copenhagen');

async function freshProcess(tenantId = tenant.tenantId, patch: Parameters<typeof updateSettings>[3] = {}): Promise<ProcessDef> {
  const p = await createProcess(t.store.db, tenantId, {
    processKey: `I${++n}`,
    fields: [
      { name: 'invoice', type: 'text', isKey: true, unique: true },
      { name: 'amount', type: 'number', required: true },
      { name: 'due', type: 'date' },
      { name: 'paid', type: 'boolean' },
    ],
  });
  if (Object.keys(patch).length) await updateSettings(t, tenantId, p.id, patch);
  return (await loadProcessById(t.store.db, tenantId, p.id))!;
}

async function tasksOf(proc: ProcessDef) {
  const { rows } =
    await sql<any>`SELECT id, queue, data, created_by_type, created_by_id FROM tasks WHERE process_id = ${proc.id} ORDER BY id`.execute(
      t.store.db,
    );
  return rows;
}

test('formats from file name or content type', () => {
  assert.equal(importFormat('x.CSV'), 'csv');
  assert.equal(importFormat('book.xlsx'), 'xlsx');
  assert.equal(importFormat(null, 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'), 'xlsx');
  assert.equal(importFormat('x.pdf', 'application/pdf'), null);
});

test('a good CSV (semicolons, BOM, quoted values): preview, then commit as the user, with history and comments', async () => {
  const proc = await freshProcess();
  const csv =
    '\uFEFFInvoice;AMOUNT;Due;Comment;Notes\r\nA-1;12.5;2026-07-01;"first; with a semicolon";x\r\nA-2;3;;;\r\n;;;;\r\nA-3;;2026-07-03;;\r\n';
  const table = await parseImportFile(Readable.from([Buffer.from(csv, 'utf8')]), 'csv');
  assert.deepEqual(table.columns, ['Invoice', 'AMOUNT', 'Due', 'Comment', 'Notes']);
  assert.equal(table.rows.length, 3, 'a blank row is skipped');
  const preview = await previewImport(t.store.db, me(), proc, table);
  assert.deepEqual(
    [preview.rows, preview.valid, preview.invalid, preview.errors, preview.ignoredColumns, preview.queues],
    [3, 3, 0, [], ['Notes'], { Ready: 2, NeedsData: 1 }],
  );
  assert.deepEqual(
    preview.columns.map((c) => c.field),
    ['invoice', 'amount', 'due', 'comment', null],
  );
  assert.equal((await tasksOf(proc)).length, 0, 'a preview writes nothing');

  const result = await inTx(t.app, (tx) => commitImport(tx, me(), proc, table));
  assert.equal(result.created, 3);
  const rows = await tasksOf(proc);
  assert.deepEqual(
    rows.map((r) => [r.queue, r.data.invoice, r.data.amount ?? null, r.data.due ?? null, r.created_by_type, Number(r.created_by_id)]),
    [
      ['Ready', 'A-1', 12.5, '2026-07-01', 'user', user.id],
      ['Ready', 'A-2', 3, null, 'user', user.id],
      ['NeedsData', 'A-3', null, '2026-07-03', 'user', user.id],
    ],
  );
  assert.deepEqual(
    result.taskIds,
    rows.map((r) => Number(r.id)),
  );
  const h = await sql<any>`SELECT action, actor_type, actor_name FROM task_history WHERE task_id = ${result.taskIds[0]}`.execute(
    t.store.db,
  );
  assert.deepEqual(h.rows, [{ action: 'Created', actor_type: 'user', actor_name: 'ida' }]);
  const c = await sql<any>`SELECT body FROM task_comments WHERE task_id = ${result.taskIds[0]}`.execute(t.store.db);
  assert.deepEqual(c.rows, [{ body: 'first; with a semicolon' }]);
});

test('bad rows: every problem with its row, field and value; the commit creates nothing', async () => {
  const proc = await freshProcess();
  const [existing] = (await inTx(t.app, async (tx) => commitImport(tx, me(), proc, { columns: ['invoice', 'amount'], rows: [['OLD', 1]] })))
    .taskIds;
  const csv = 'invoice,amount,paid\nB-1,1,maybe\nB-2,abc,true\nb-1,2,false\nold,3,\nB-5,5,1\nb-5 ,6,0\n';
  const table = await parseImportFile(Buffer.from(csv), 'csv');
  const preview = await previewImport(t.store.db, me(), proc, table);
  assert.deepEqual([preview.rows, preview.valid, preview.invalid], [6, 2, 4], JSON.stringify(preview.errors));
  assert.deepEqual(
    preview.errors.map((e) => [e.row, e.code, e.field ?? null, e.value ?? null]),
    [
      [2, 'invalid_field', 'paid', 'maybe'],
      [3, 'invalid_field', 'amount', 'abc'],
      [5, 'duplicate_key', null, null],
      [7, 'duplicate_key', null, null],
    ],
  );
  assert.match(preview.errors[2].message, new RegExp(`task ${existing}`));
  assert.match(preview.errors[3].message, /same key as row 6/);
  const r = await refusalOf(() => inTx(t.app, (tx) => commitImport(tx, me(), proc, table)));
  assert.equal(r.code, 'invalid_field');
  assert.equal(r.problems.length, 4);
  assert.equal(r.problems[0].index, 2);
  assert.match(r.message, /nothing was created/);
  assert.equal((await tasksOf(proc)).length, 1);
});

test('a problem names the field by its label, as the person knows it; the field stays its name', async () => {
  const made = await createProcess(t.store.db, tenant.tenantId, {
    processKey: `I${++n}`,
    fields: [
      { name: 'ref', label: 'Reference', type: 'text', isKey: true, unique: true },
      { name: 'numberField', label: 'Number field', type: 'number' },
      { name: 'plain', type: 'integer' },
    ],
  });
  const proc = (await loadProcessById(t.store.db, tenant.tenantId, made.id))!;
  assert.deepEqual(
    proc.fields.map((f) => f.label),
    ['Reference', 'Number field', 'plain'],
  );
  const table = await parseImportFile(Buffer.from('ref,numberField,plain\nR-1,abc,x\n'), 'csv');
  const preview = await previewImport(t.store.db, me(), proc, table);
  assert.deepEqual(
    preview.errors.map((e) => e.field),
    ['numberField', 'plain'],
  );
  assert.match(preview.errors[0].message, /^Row 2: Number field: "abc" is not a number/);
  // a field whose label is its name keeps the quoted key
  assert.match(preview.errors[1].message, /^Row 2: "plain": "x" is not a whole number/);
  const r = await refusalOf(() => inTx(t.app, (tx) => commitImport(tx, me(), proc, table)));
  assert.match(r.message, /Number field: "abc"/);
  assert.doesNotMatch(r.message, /numberField/);
  const twice = await refusalOf(() => previewImport(t.store.db, me(), proc, table, { ref: 'numberField', numberField: 'numberField' }));
  assert.match(twice.message, /both fill Number field$/);
});

test('an explicit mapping; unknown targets and missing columns refused; keys of another tenant do not collide', async () => {
  const proc = await freshProcess();
  const theirs = await freshProcess(other.tenantId);
  const oc = personCaller(other.tenantId, { id: 1, username: 'o' }, clock.now());
  await inTx(t.app, (tx) => commitImport(tx, oc, theirs, { columns: ['invoice', 'amount'], rows: [['M-1', 1]] }));
  const table = await parseImportFile(Buffer.from('Ref no,Sum,amount\nM-1,4,999\n'), 'csv');
  const mapping = { 'Ref no': 'invoice', Sum: 'Amount', amount: null };
  const preview = await previewImport(t.store.db, me(), proc, table, mapping);
  assert.deepEqual([preview.valid, preview.ignoredColumns], [1, ['amount']]);
  await inTx(t.app, (tx) => commitImport(tx, me(), proc, table, mapping));
  assert.deepEqual(
    (await tasksOf(proc)).map((r) => r.data),
    [{ invoice: 'M-1', amount: 4 }],
  );
  assert.equal((await refusalOf(() => previewImport(t.store.db, me(), proc, table, { 'Ref no': 'colour' }))).code, 'unknown_field');
  assert.equal((await refusalOf(() => previewImport(t.store.db, me(), proc, table, { Nope: 'invoice' }))).code, 'unknown_field');
  assert.equal(
    (await refusalOf(() => previewImport(t.store.db, me(), proc, table, { 'Ref no': 'invoice', Sum: 'INVOICE' }))).code,
    'invalid_field',
    'two columns fill invoice',
  );
});

test('XLSX: numbers, dates (read in the tenant time zone), booleans, rich text and formulas', async () => {
  const proc = await freshProcess();
  const wb = new ExcelJS.Workbook();
  const ws = wb.addWorksheet('Tasks');
  ws.addRow(['invoice', 'amount', 'due', 'paid', 'activationDate']);
  ws.addRow([
    { richText: [{ text: 'X-' }, { text: '1' }] },
    10.25,
    new Date(Date.UTC(2026, 6, 1)),
    true,
    new Date(Date.UTC(2026, 5, 2, 10, 30)),
  ]);
  ws.addRow(['X-2', { formula: '1+1', result: 2 }, null, false, null]);
  wb.addWorksheet('Ignored').addRow(['invoice']);
  const buf = Buffer.from(await wb.xlsx.writeBuffer());
  const table = await parseImportFile(Readable.from([buf]), 'xlsx');
  assert.deepEqual(table.columns, ['invoice', 'amount', 'due', 'paid', 'activationDate']);
  assert.equal(table.rows.length, 2);
  const result = await inTx(t.app, (tx) => commitImport(tx, me(), proc, table));
  const rows = await tasksOf(proc);
  assert.deepEqual(
    rows.map((r) => r.data),
    [
      { invoice: 'X-1', amount: 10.25, due: '2026-07-01', paid: true },
      { invoice: 'X-2', amount: 2, paid: false },
    ],
  );
  const a = await sql<any>`SELECT activation_date FROM tasks WHERE id = ${result.taskIds[0]}`.execute(t.store.db);
  assert.equal(a.rows[0].activation_date.toISOString(), '2026-06-02T08:30:00.000Z', '10:30 in Copenhagen (CEST)');
});

test('approval: all applies to imports by people, mateCreated does not', async () => {
  const all = await freshProcess(tenant.tenantId, { require_approval: 'all' });
  const mateOnly = await freshProcess(tenant.tenantId, { require_approval: 'mateCreated' });
  const table = { columns: ['invoice', 'amount'], rows: [['P-1', '1']] };
  assert.deepEqual((await previewImport(t.store.db, me(), all, table)).queues, { NeedsApproval: 1 });
  assert.deepEqual((await previewImport(t.store.db, me(), mateOnly, table)).queues, { Ready: 1 });
});

test('unreadable, empty and too long files are refused', async () => {
  assert.equal((await refusalOf(() => parseImportFile(Buffer.from('not a zip'), 'xlsx'))).code, 'invalid_body');
  assert.equal((await refusalOf(() => parseImportFile(Buffer.from(''), 'csv'))).code, 'invalid_body');
  assert.equal((await refusalOf(() => parseImportFile(Buffer.from('a,"b\n1,2\n'), 'csv'))).code, 'invalid_body');
  assert.equal((await refusalOf(() => parseImportFile(Buffer.from('a\n1\n2\n3\n'), 'csv', { maxRows: 2 }))).code, 'payload_too_large');
  const proc = await freshProcess();
  assert.equal(
    (await refusalOf(() => inTx(t.app, (tx) => commitImport(tx, me(), proc, { columns: ['invoice'], rows: [] })))).code,
    'invalid_body',
  );
});

test('a 20,000-row CSV is parsed, checked and created in one commit', async () => {
  const proc = await freshProcess();
  const lines = ['invoice,amount,due'];
  for (let i = 0; i < 20_000; i++) lines.push(`N-${i},${i},2026-08-${String((i % 28) + 1).padStart(2, '0')}`);
  const table = await parseImportFile(Readable.from([Buffer.from(lines.join('\n'))]), 'csv');
  assert.equal(table.rows.length, 20_000);
  const result = await inTx(t.app, (tx) => commitImport(tx, me(), proc, table));
  assert.equal(result.created, 20_000);
  const { rows } = await sql<{
    n: number;
  }>`SELECT count(*)::int AS n FROM task_history h JOIN tasks t ON t.tenant_id = h.tenant_id AND t.id = h.task_id
    WHERE t.process_id = ${proc.id}`.execute(t.store.db);
  assert.equal(rows[0].n, 20_000);
});
