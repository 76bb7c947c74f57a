import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FieldProblem } from '../src/lib/errors.js';
import { decodeBody, parseJsonStrict } from '../src/lib/json.js';
import {
  MAX_PROBLEMS,
  findMissingRequired,
  formatTaskValues,
  uniqueKeyOf,
  validateTaskData,
  type TaskData,
  type TaskDataMode,
  type TaskField,
} from '../src/processes/task-data.js';

const CPH = 'Europe/Copenhagen';

function field(name: string, type: TaskField['type'], more: Partial<TaskField> = {}): TaskField {
  return { name, type, required: false, isKey: false, isUnique: false, options: [], defaultValue: null, ...more };
}

/** Process PK of the compatibility checklist (docs/mate-api.md §9). */
const PK: TaskField[] = [field('coreSystemKey', 'text'), field('numberField', 'number'), field('flag', 'boolean')];

const ALL: TaskField[] = [
  field('invoiceNo', 'text', { required: true, isKey: true, isUnique: true }),
  field('amount', 'number'),
  field('lines', 'integer'),
  field('paid', 'boolean'),
  field('dueDate', 'date'),
  field('receivedAt', 'datetime'),
  field('status', 'dropdown', { options: ['Open', 'On hold', 'Closed'], defaultValue: 'open' }),
  field('contact', 'email', { required: true }),
  field('constructor', 'text'),
];

function body(json: string): Record<string, unknown> {
  return parseJsonStrict(json) as Record<string, unknown>;
}

function ok(
  fields: TaskField[],
  b: Record<string, unknown> | string,
  mode: TaskDataMode = 'create',
  timeZone = CPH,
  current?: Record<string, unknown>,
): TaskData {
  const r = validateTaskData({ fields, body: typeof b === 'string' ? body(b) : b, mode, timeZone, current });
  if (!r.ok) assert.fail(`refused: ${JSON.stringify(r.problems)}`);
  const { ok: _, ...data } = r;
  return data;
}

function problems(fields: TaskField[], b: Record<string, unknown> | string, mode: TaskDataMode = 'create', timeZone = CPH): FieldProblem[] {
  const r = validateTaskData({ fields, body: typeof b === 'string' ? body(b) : b, mode, timeZone });
  if (r.ok) assert.fail(`accepted: ${JSON.stringify(r)}`);
  return r.problems;
}

test('C5: "12.5" becomes the number 12.5; Æble sent as ISO-8859-1 is stored as Æble', () => {
  const r = ok(PK, body(decodeBody(Buffer.from('{"coreSystemKey":"Æble","numberField":"12.5"}', 'latin1'))));
  assert.deepEqual(r.values, { coreSystemKey: 'Æble', numberField: 12.5 });
  assert.deepEqual(formatTaskValues(PK, r.values, CPH), { coreSystemKey: 'Æble', numberField: 12.5, flag: null });
});

test('C15: PascalCase keys bind to fields; null keys (also unknown ones) are ignored', () => {
  const r = ok(PK, '{"CoreSystemKey":"A","NumberField":1.5,"Flag":null}');
  assert.deepEqual(r.values, { coreSystemKey: 'A', numberField: 1.5 });
  const r2 = ok(PK, '{"CoreSystemKey":"A","ActivationDate":null,"Comment":null,"Extra":null}');
  assert.deepEqual(r2.values, { coreSystemKey: 'A' });
  assert.deepEqual(r2.reserved, {});
});

test('C17: "12.5", "True" and an activation date in the tenant time zone', () => {
  const r = ok(PK, '{"coreSystemKey":"A","numberField":"12.5","flag":"True","activationDate":"2030-01-31T10:00:00"}');
  assert.deepEqual(r.values, { coreSystemKey: 'A', numberField: 12.5, flag: true });
  assert.equal(r.reserved.activationDate?.toISOString(), '2030-01-31T09:00:00.000Z');
  assert.equal(
    ok(PK, '{"activationDate":"2030-01-31T10:00:00"}', 'create', 'America/New_York').reserved.activationDate?.toISOString(),
    '2030-01-31T15:00:00.000Z',
  );
});

test('C17: "12,5" is refused with invalid_field naming the field and the value', () => {
  const [p, ...rest] = problems(PK, '{"coreSystemKey":"A","numberField":"12,5"}');
  assert.equal(rest.length, 0);
  assert.equal(p.code, 'invalid_field');
  assert.equal(p.field, 'numberField');
  assert.equal(p.value, '12,5');
  assert.match(p.message, /numberField/);
  assert.match(p.message, /"12,5"/);
});

test('problems name the key as sent and are all listed, in key order', () => {
  const ps = problems(PK, '{"NumberField":"abc","flag":"yes","extra":1,"coreSystemKey":{"a":1}}');
  assert.deepEqual(
    ps.map((p) => [p.field, p.code, p.value]),
    [
      ['NumberField', 'invalid_field', 'abc'],
      ['flag', 'invalid_field', 'yes'],
      ['extra', 'unknown_field', 1],
      ['coreSystemKey', 'invalid_field', { a: 1 }],
    ],
  );
  for (const p of ps) assert.ok(p.message.includes(p.field!), p.message);
});

test(`at most ${MAX_PROBLEMS} problems`, () => {
  const b = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`x${i}`, i]));
  assert.equal(problems(PK, b).length, MAX_PROBLEMS);
});

test('unknown_field for a non-null key that is neither a field nor reserved', () => {
  const [p] = problems(PK, '{"coreSystemKey":"A","customer":"B"}');
  assert.equal(p.code, 'unknown_field');
  assert.equal(p.field, 'customer');
  assert.equal(p.value, 'B');
  assert.match(p.message, /"customer"/);
  assert.match(p.message, /coreSystemKey, numberField, flag/);
  // Prototype-like keys are ordinary unknown keys, not fields or crashes.
  const ps = problems(PK, '{"__proto__":{"x":1},"toString":"t"}');
  assert.deepEqual(
    ps.map((q) => [q.field, q.code]),
    [
      ['__proto__', 'unknown_field'],
      ['toString', 'unknown_field'],
    ],
  );
  assert.deepEqual(
    problems(PK, '{"customer":""}').map((q) => q.code),
    ['unknown_field'],
    '"" is not null',
  );
});

test('reserved keys on create: comment/newNote, activationDate, deadline, urgent; the others ignored', () => {
  const r = ok(PK, {
    coreSystemKey: 'A',
    Comment: 'first',
    activationDate: '2030-01-31',
    Deadline: '2030-02-01T12:00:00.1234567+01:00',
    URGENT: 'true',
    taskId: 99,
    reason: { any: 'thing' },
    runId: 'x',
    processKey: 'Other',
    queue: 'Solved',
    error: true,
    retryCount: 7,
  });
  assert.deepEqual(r.values, { coreSystemKey: 'A' });
  assert.equal(r.reserved.comment, 'first');
  assert.equal(r.reserved.activationDate?.toISOString(), '2030-01-30T23:00:00.000Z', 'date only: midnight in the zone');
  assert.equal(r.reserved.deadline?.toISOString(), '2030-02-01T11:00:00.123Z');
  assert.equal(r.reserved.urgent, true);
  assert.equal(r.reserved.taskId, undefined, 'taskId is ignored on create');
});

test('a task object can be posted back to CreateTask', () => {
  const taskObject = {
    taskId: 5,
    reason: null,
    runId: 3,
    processKey: 'PK',
    coreSystemKey: 'A',
    numberField: 1,
    flag: false,
    activationDate: '2024-05-02T09:30:00.000+02:00',
    deadline: null,
    urgent: false,
    retryCount: 0,
  };
  const r = ok(PK, taskObject);
  assert.deepEqual(r.values, { coreSystemKey: 'A', numberField: 1, flag: false });
  assert.equal(r.reserved.activationDate?.toISOString(), '2024-05-02T07:30:00.000Z');
  assert.equal(r.reserved.urgent, false);
});

test('comment: newNote alias, comment wins, "" is none', () => {
  assert.equal(ok(PK, { newNote: 'n' }).reserved.comment, 'n');
  assert.equal(ok(PK, { newNote: 'n', comment: 'c' }).reserved.comment, 'c');
  assert.equal(ok(PK, { comment: '', newNote: 'n' }).reserved.comment, 'n');
  assert.equal(ok(PK, { comment: '' }).reserved.comment, undefined);
  assert.equal(ok(PK, { comment: 42 }).reserved.comment, '42');
  assert.deepEqual(
    problems(PK, { comment: ['x'] }).map((p) => [p.field, p.code]),
    [['comment', 'invalid_field']],
  );
});

test('reserved values that do not convert are invalid_field on create, ignored on update', () => {
  const ps = problems(PK, { activationDate: '2024-02-30', deadline: 'soon', urgent: 'maybe' });
  assert.deepEqual(
    ps.map((p) => [p.field, p.code, p.value]),
    [
      ['activationDate', 'invalid_field', '2024-02-30'],
      ['deadline', 'invalid_field', 'soon'],
      ['urgent', 'invalid_field', 'maybe'],
    ],
  );
  assert.match(ps[0].message, /activationDate.*"2024-02-30"/);
  assert.deepEqual(
    problems(PK, { activationDate: 20300131 }).map((p) => p.field),
    ['activationDate'],
  );
  const r = ok(PK, { taskId: 5, activationDate: 'soon', deadline: 'x', urgent: 'maybe' }, 'update');
  assert.deepEqual(r.reserved, { taskId: 5 });
  // "" is absent for optional system keys.
  assert.deepEqual(ok(PK, { activationDate: '', deadline: '', urgent: '', comment: '' }).reserved, {});
});

test('update: taskId as sent (C16 newNote and "123"), comment appended', () => {
  const r = ok(PK, '{"coreSystemKey":"x","newNote":"note","taskId":"123"}', 'update');
  assert.deepEqual(r.values, { coreSystemKey: 'x' });
  assert.deepEqual(r.reserved, { taskId: '123', comment: 'note' });
  assert.equal(ok(PK, { TaskId: 7 }, 'update').reserved.taskId, 7);
  assert.equal(ok(PK, { taskId: null }, 'update').reserved.taskId, undefined, 'the caller answers missing_field');
});

test('update: null leaves a field alone, "" clears it', () => {
  const r = ok(PK, { taskId: 1, coreSystemKey: null, numberField: '', flag: 'false' }, 'update');
  assert.deepEqual(r.values, { numberField: null, flag: false });
  assert.ok(!('coreSystemKey' in r.values));
});

test('create: "" is absent, and the default applies', () => {
  const fields = [field('status', 'dropdown', { options: ['Open', 'Closed'], defaultValue: 'open' }), field('note', 'text')];
  assert.deepEqual(ok(fields, { status: '', note: '' }).values, { status: 'Open' });
  assert.deepEqual(ok(fields, { status: null }).values, { status: 'Open' });
  assert.deepEqual(ok(fields, { status: 'closed' }).values, { status: 'Closed' });
  assert.deepEqual(ok(fields, { taskId: 1 }, 'update').values, {}, 'no defaults on update');
});

test('defaults convert like sent values; one that no longer converts is skipped', () => {
  const fields = [
    field('n', 'integer', { defaultValue: '3' }),
    field('d', 'date', { defaultValue: '2024-01-31T23:30:00Z' }),
    field('b', 'boolean', { defaultValue: 'nonsense' }),
    field('t', 'text', { defaultValue: '' }),
  ];
  assert.deepEqual(ok(fields, {}).values, { n: 3, d: '2024-02-01' });
});

test('conversions: text', () => {
  const f = [field('t', 'text')];
  assert.deepEqual(ok(f, { t: 12.5 }).values, { t: '12.5' });
  assert.deepEqual(ok(f, { t: true }).values, { t: 'true' });
  assert.deepEqual(ok(f, { t: '  padded  ' }).values, { t: '  padded  ' });
  assert.deepEqual(
    problems(f, { t: [1] }).map((p) => p.code),
    ['invalid_field'],
  );
  assert.deepEqual(
    problems(f, { t: 'a\u0000b' }).map((p) => p.code),
    ['invalid_field'],
  );
});

test('conversions: number', () => {
  const f = [field('n', 'number')];
  assert.deepEqual(ok(f, { n: '1e3' }).values, { n: 1000 });
  assert.deepEqual(ok(f, { n: -0.5 }).values, { n: -0.5 });
  for (const v of ['12,5', '1,000', '1 000', 'NaN', 'Infinity', true, {}])
    assert.equal(problems(f, { n: v })[0].code, 'invalid_field', String(v));
});

test('conversions: integer takes integral values only ("12.0" → 12, "12.5" refused)', () => {
  const f = [field('i', 'integer')];
  assert.deepEqual(ok(f, { i: '12.0' }).values, { i: 12 });
  assert.deepEqual(ok(f, { i: 12 }).values, { i: 12 });
  assert.deepEqual(ok(f, body('{"i":12.0}')).values, { i: 12 });
  assert.deepEqual(ok(f, { i: '-7' }).values, { i: -7 });
  assert.deepEqual(ok(f, { i: '1e3' }).values, { i: 1000 });
  const [p] = problems(f, { i: '12.5' });
  assert.equal(p.code, 'invalid_field');
  assert.match(p.message, /"i": "12.5" is not a whole number/);
  assert.equal(problems(f, { i: 12.5 })[0].value, 12.5);
  assert.equal(problems(f, { i: 2 ** 53 })[0].code, 'invalid_field');
  assert.equal(problems(f, { i: '12,0' })[0].code, 'invalid_field');
});

test('conversions: boolean', () => {
  const f = [field('b', 'boolean')];
  for (const [v, want] of [
    [true, true],
    ['TRUE', true],
    ['False', false],
    [1, true],
    ['0', false],
  ] as const)
    assert.deepEqual(ok(f, { b: v }).values, { b: want }, String(v));
  assert.equal(problems(f, { b: 'ja' })[0].code, 'invalid_field');
});

test('conversions: date keeps a date, a date-time becomes its day in the tenant time zone', () => {
  const f = [field('d', 'date')];
  assert.deepEqual(ok(f, { d: '2024-01-31' }).values, { d: '2024-01-31' });
  assert.deepEqual(ok(f, { d: '2024-01-31T23:30:00Z' }).values, { d: '2024-02-01' });
  assert.deepEqual(ok(f, { d: '2024-01-31T23:30:00Z' }, 'create', 'UTC').values, { d: '2024-01-31' });
  assert.deepEqual(ok(f, { d: '2024-01-31T10:00:00.1234567+01:00' }).values, { d: '2024-01-31' });
  for (const v of ['2024-02-30', '31/01/2024', 20240131, true]) assert.equal(problems(f, { d: v })[0].code, 'invalid_field', String(v));
});

test('conversions: datetime is stored as ISO UTC and answered in the tenant time zone', () => {
  const f = [field('at', 'datetime')];
  const r = ok(f, { at: '2030-01-31T10:00:00' });
  assert.deepEqual(r.values, { at: '2030-01-31T09:00:00.000Z' });
  assert.deepEqual(formatTaskValues(f, r.values, CPH), { at: '2030-01-31T10:00:00.000+01:00' });
  assert.deepEqual(formatTaskValues(f, r.values, 'UTC'), { at: '2030-01-31T09:00:00.000+00:00' });
  assert.deepEqual(ok(f, { at: '2030-01-31T10:00:00.1234567-05:00' }).values, { at: '2030-01-31T15:00:00.123Z' });
  assert.deepEqual(ok(f, { at: '2024-03-31T02:30' }).values, { at: '2024-03-31T01:30:00.000Z' }, 'DST gap moves forward');
  assert.deepEqual(ok(f, { at: '2024-10-27T02:30' }).values, { at: '2024-10-27T00:30:00.000Z' }, 'ambiguous: earlier offset');
  assert.equal(problems(f, { at: '2024-01-31T25:00' })[0].code, 'invalid_field');
});

test('conversions: dropdown matches options ignoring case and stores the defined spelling', () => {
  const f = [field('status', 'dropdown', { options: ['Open', 'On hold', '42'] })];
  assert.deepEqual(ok(f, { status: 'ON HOLD' }).values, { status: 'On hold' });
  assert.deepEqual(ok(f, { Status: 'open' }).values, { status: 'Open' });
  assert.deepEqual(ok(f, { status: 42 }).values, { status: '42' });
  const [p] = problems(f, { status: 'Closed' });
  assert.equal(p.code, 'invalid_field');
  assert.match(p.message, /"status": "Closed" is not one of the options \["Open","On hold","42"\]/);
  assert.equal(problems(f, { status: ' open' })[0].code, 'invalid_field');
});

test('conversions: email needs local@domain without spaces', () => {
  const f = [field('mail', 'email')];
  assert.deepEqual(ok(f, { mail: 'Anna.B+x@example.com' }).values, { mail: 'Anna.B+x@example.com' });
  assert.deepEqual(ok(f, { mail: 'a@localhost' }).values, { mail: 'a@localhost' });
  for (const v of [
    'anna',
    '@example.com',
    'anna@',
    'an na@example.com',
    'anna@exa mple.com',
    ' anna@example.com',
    'a@b@c',
    'anna@example.com\n',
    5,
  ]) {
    assert.equal(problems(f, { mail: v })[0].code, 'invalid_field', JSON.stringify(v));
  }
});

test('values are keyed by the defined name, whatever the case sent; field "constructor" is an ordinary field', () => {
  const r = ok(ALL, { INVOICENO: 'inv-1', Contact: 'a@b.c', CONSTRUCTOR: 'built', amount: '1.5' });
  assert.deepEqual(r.values, { invoiceNo: 'inv-1', contact: 'a@b.c', constructor: 'built', amount: 1.5, status: 'Open' });
  assert.ok(Object.prototype.hasOwnProperty.call(r.values, 'constructor'));
});

test('required fields missing or empty after defaults go to missingRequired', () => {
  assert.deepEqual(ok(ALL, {}).missingRequired, ['invoiceNo', 'contact']);
  assert.deepEqual(ok(ALL, { invoiceNo: 'I-1' }).missingRequired, ['contact']);
  assert.deepEqual(ok(ALL, { invoiceNo: '   ', contact: 'a@b.c' }).missingRequired, ['invoiceNo'], 'blank text is empty');
  assert.deepEqual(ok(ALL, { invoiceNo: 'I-1', contact: 'a@b.c' }).missingRequired, []);
  const withDefault = [field('k', 'text', { required: true, defaultValue: 'x' })];
  assert.deepEqual(ok(withDefault, {}).missingRequired, []);
  assert.deepEqual(findMissingRequired(ALL, { invoiceNo: 'I', contact: null }), ['contact']);
});

test('update: missingRequired and uniqueKey describe the task after merging current', () => {
  const current = { invoiceNo: 'INV-1', contact: 'a@b.c', amount: 3 };
  let r = ok(ALL, { taskId: 1, amount: 4 }, 'update', CPH, current);
  assert.deepEqual(r.values, { amount: 4 });
  assert.deepEqual(r.missingRequired, []);
  assert.equal(r.uniqueKey, 'inv-1');
  r = ok(ALL, { taskId: 1, contact: '' }, 'update', CPH, current);
  assert.deepEqual(r.values, { contact: null });
  assert.deepEqual(r.missingRequired, ['contact']);
  r = ok(ALL, { taskId: 1, invoiceNo: 'INV-2' }, 'update', CPH, current);
  assert.equal(r.uniqueKey, 'inv-2');
  r = ok(ALL, { taskId: 1, contact: 'x@y.z' }, 'update', CPH, { invoiceNo: 'INV-1' });
  assert.deepEqual(r.missingRequired, [], 'a NeedsData task that becomes complete');
  r = ok(ALL, { taskId: 1 }, 'update');
  assert.deepEqual(r.missingRequired, ['invoiceNo', 'contact'], 'without current: as if the task had no values');
  assert.equal(r.uniqueKey, null);
});

test('uniqueKey: normalized value of the unique key fields, null when none or empty', () => {
  assert.equal(ok(ALL, { invoiceNo: '  INV-7 ', contact: 'a@b.c' }).uniqueKey, 'inv-7');
  assert.equal(ok(ALL, { contact: 'a@b.c' }).uniqueKey, null);
  assert.equal(ok(ALL, { invoiceNo: '' }).uniqueKey, null);
  assert.equal(ok(PK, { coreSystemKey: 'A' }).uniqueKey, null, 'no unique field');
  const keyNotUnique = [field('k', 'text', { isKey: true })];
  assert.equal(ok(keyNotUnique, { k: 'A' }).uniqueKey, null, 'a key field that is not unique');
  const two = [
    field('sys', 'dropdown', { isKey: true, isUnique: true, options: ['SAP', 'Navision'] }),
    field('no', 'integer', { isKey: true, isUnique: true }),
  ];
  assert.equal(ok(two, { sys: 'sap', no: '12.0' }).uniqueKey, '["sap","12"]');
  assert.equal(ok(two, { no: 12 }).uniqueKey, '[null,"12"]');
  assert.equal(uniqueKeyOf(two, {}), null);
  const dated = [field('d', 'date', { isKey: true, isUnique: true })];
  assert.equal(ok(dated, { d: '2024-01-31T23:30:00Z' }).uniqueKey, '2024-02-01');
});

test('a process without fields stores every non-reserved key as given', () => {
  const r = ok(
    [],
    '{"Customer":"A","amount":"12,5","nested":{"x":[1,{"y":null}]},"skip":null,"empty":"","comment":"c","taskId":3,"__proto__":{"polluted":1}}',
  );
  assert.deepEqual(Object.keys(r.values), ['Customer', 'amount', 'nested', 'empty', '__proto__']);
  assert.equal(r.values.amount, '12,5');
  assert.deepEqual(r.values.nested, { x: [1, { y: null }] });
  assert.equal(r.values.empty, '');
  assert.ok(Object.prototype.hasOwnProperty.call(r.values, '__proto__'));
  assert.equal(Object.getPrototypeOf(r.values), Object.prototype);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.equal(r.reserved.comment, 'c');
  assert.deepEqual(r.missingRequired, []);
  assert.equal(r.uniqueKey, null);
  const u = ok([], { taskId: 1, a: '', b: null, c: 2 }, 'update');
  assert.deepEqual(u.values, { a: null, c: 2 });
  assert.deepEqual(
    problems([], { text: 'a\u0000' }).map((p) => [p.field, p.code]),
    [['text', 'invalid_field']],
  );
  assert.deepEqual(
    problems([], { deep: { k: ['a\u0000'] } }).map((p) => p.field),
    ['deep'],
  );
});

test('formatTaskValues: field order, defined names, null when empty', () => {
  const stored = {
    contact: 'a@b.c',
    invoiceNo: 'I-1',
    dueDate: '2024-02-01',
    receivedAt: '2024-05-02T07:30:00.000Z',
    amount: 0,
    paid: false,
    status: '',
    lines: null,
  };
  const out = formatTaskValues(ALL, stored, CPH);
  assert.deepEqual(Object.keys(out), ['invoiceNo', 'amount', 'lines', 'paid', 'dueDate', 'receivedAt', 'status', 'contact', 'constructor']);
  assert.deepEqual(out, {
    invoiceNo: 'I-1',
    amount: 0,
    lines: null,
    paid: false,
    dueDate: '2024-02-01',
    receivedAt: '2024-05-02T09:30:00.000+02:00',
    status: null,
    contact: 'a@b.c',
    constructor: null,
  });
  assert.ok(Object.prototype.hasOwnProperty.call(out, 'constructor'));
  // A value stored under another case (a field renamed in case only) is still found.
  assert.deepEqual(formatTaskValues(PK, { CoreSystemKey: 'x' }, CPH), { coreSystemKey: 'x', numberField: null, flag: null });
});

test('formatTaskValues: a process without fields answers its free keys as stored', () => {
  const stored = body('{"Customer":"A","nested":{"x":1},"__proto__":{"p":1}}');
  const out = formatTaskValues([], stored, CPH);
  assert.deepEqual(Object.keys(out), ['Customer', 'nested', '__proto__']);
  assert.equal(Object.getPrototypeOf(out), Object.prototype);
  assert.deepEqual(out.nested, { x: 1 });
});

test('a CreateTasks batch of 10,000 items validates quickly', () => {
  const items = Array.from({ length: 10_000 }, (_, i) => ({
    CoreSystemKey: `S-${i}`,
    NumberField: String(i * 1.5),
    Flag: 'True',
    ActivationDate: '2030-01-31T10:00:00',
    Comment: null,
  }));
  const start = performance.now();
  for (const item of items) assert.ok(validateTaskData({ fields: PK, body: item, mode: 'create', timeZone: CPH }).ok);
  const ms = performance.now() - start;
  // 25-80 ms here; a generous bound that still catches an accidental per-item formatToParts (~0.3 s).
  assert.ok(ms < 1000, `${ms} ms`);
});
