import { test } from 'node:test';
import assert from 'node:assert/strict';
import { JsonBodyError, MAX_JSON_DEPTH, decodeBody, parseJsonStrict } from '../src/lib/json.js';
import { Refusal } from '../src/lib/errors.js';

function refusal(text: string): JsonBodyError {
  try {
    parseJsonStrict(text);
  } catch (e) {
    assert.ok(e instanceof JsonBodyError, `${text.slice(0, 40)}: ${String(e)}`);
    assert.ok(e instanceof Refusal);
    assert.equal(e.code, 'invalid_body');
    return e;
  }
  assert.fail(`accepted ${JSON.stringify(text.slice(0, 60))}`);
}

test('decodeBody: UTF-8 when valid, a UTF-8 BOM dropped', () => {
  assert.equal(decodeBody(Buffer.from('{"a":"Æble ✓ 😀"}', 'utf8')), '{"a":"Æble ✓ 😀"}');
  assert.equal(decodeBody(Buffer.from([0xef, 0xbb, 0xbf, ...Buffer.from('{"a":1}')])), '{"a":1}');
  assert.equal(decodeBody(Buffer.alloc(0)), '');
});

test('decodeBody: invalid UTF-8 is read as ISO-8859-1 (C5: "Æble" from the Python client)', () => {
  const latin1 = Buffer.from('{"coreSystemKey":"Æble","numberField":"12.5"}', 'latin1');
  assert.equal(latin1.includes(0xc6), true, 'Æ is the single byte 0xC6');
  const text = decodeBody(latin1);
  assert.equal(text, '{"coreSystemKey":"Æble","numberField":"12.5"}');
  assert.deepEqual(parseJsonStrict(text), { coreSystemKey: 'Æble', numberField: '12.5' });
  // A BOM followed by invalid UTF-8 still drops the BOM.
  assert.equal(decodeBody(Buffer.from([0xef, 0xbb, 0xbf, 0x22, 0xe6, 0x22])), '"æ"');
  // Bytes that are not UTF-8 on their own (a lone continuation byte).
  assert.equal(decodeBody(Buffer.from([0x22, 0x80, 0xff, 0x22])), '"\u0080ÿ"');
});

test('valid JSON parses like JSON.parse', () => {
  const samples = [
    '{}',
    '[]',
    '0',
    '-0',
    '1.5e3',
    '-12.25E-2',
    'true',
    'false',
    'null',
    '"x"',
    ' \t\r\n{ "a" : [ 1 , 2 ] } \n',
    '{"a":{"b":{"c":[null,true,false,"s",1e-7]}}}',
    '"\\u00c6ble \\"q\\" \\\\ \\/ \\b\\f\\n\\r\\t"',
    '"\\ud83d\\ude00"',
    '[{"a":1},{"a":2},{"A":3}]',
    '{"a":1,"b":{"a":2}}',
    '12345678901234567890',
    '{"":1}',
    '"😀"',
  ];
  for (const s of samples) assert.deepEqual(parseJsonStrict(s), JSON.parse(s), s);
});

test('numbers are JS numbers', () => {
  assert.deepEqual(parseJsonStrict('{"n":12.5,"i":42,"e":1e3,"big":9007199254740993}'), { n: 12.5, i: 42, e: 1000, big: 9007199254740992 });
});

test('syntax errors name the problem and the position', () => {
  const cases: [string, number, RegExp][] = [
    ['', 0, /empty/],
    ['   ', 3, /empty/],
    ['{"a":}', 5, /value expected/],
    ['{"a":1,}', 7, /key/],
    ['[1,]', 3, /value expected/],
    ['[1 2]', 3, /',' or ']'/],
    ['{"a" 1}', 5, /':' expected/],
    ['{a:1}', 1, /key/],
    ["{'a':1}", 1, /key/],
    ['{"a":1', 6, /',' or '}'/],
    ['"abc', 4, /unterminated/],
    ['"a\tb"', 2, /control character/],
    ['"a\\xb"', 3, /unknown escape/],
    ['"\\u12G4"', 1, /four hex digits/],
    ['01', 1, /end of the body/],
    ['1.', 2, /decimal point/],
    ['1e', 2, /exponent/],
    ['-', 1, /digit/],
    ['+1', 0, /value expected/],
    ['.5', 0, /value expected/],
    ['NaN', 0, /value expected/],
    ['Infinity', 0, /value expected/],
    ['tru', 0, /value expected/],
    ['nul', 0, /value expected/],
    ['{"a":1}x', 7, /end of the body/],
    ['{"a":1}{"b":2}', 7, /end of the body/],
    ['\ufeff{"a":1}', 0, /value expected/],
    ['{"a":1}\n\n  ]', 11, /line 3, column 3/],
  ];
  for (const [text, position, message] of cases) {
    const e = refusal(text);
    assert.equal(e.position, position, `${JSON.stringify(text)}: ${e.message}`);
    assert.match(e.message, message, JSON.stringify(text));
    assert.match(e.message, new RegExp(`position ${position}\\b`), e.message);
  }
});

test('errors inside long strings are found with their position (the fast scan defers to a strict one)', () => {
  const text = '{"comment":"' + 'x'.repeat(5000) + '\u0001' + '"}';
  const e = refusal(text);
  assert.equal(e.position, 12 + 5000);
  assert.match(e.message, /control character.*U\+0001/);
});

test('two keys in one object equal ignoring case are refused', () => {
  let e = refusal('{"taskId":1,"TaskId":2}');
  assert.match(e.message, /"TaskId" appears twice/);
  assert.match(e.message, /"taskId" and "TaskId"/);
  assert.equal(e.position, 12);
  e = refusal('{"a":1,"a":2}');
  assert.match(e.message, /"a" appears twice/);
  // Escaped keys are compared by their value.
  refusal('{"comment":1,"\\u0043omment":2}');
  // Duplicates deep inside and in big objects (beyond the linear comparison).
  refusal('[{"x":[{"k":1,"K":2}]}]');
  const many = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`key${i}`, i]));
  const text = JSON.stringify(many);
  assert.deepEqual(parseJsonStrict(text), many);
  refusal(text.slice(0, -1) + ',"KEY7":0}');
  refusal(text.slice(0, -1) + ',"key39":0}');
});

test('equal keys in different objects, or differing only in length, are fine', () => {
  assert.deepEqual(parseJsonStrict('[{"a":1},{"A":2}]'), [{ a: 1 }, { A: 2 }]);
  assert.deepEqual(parseJsonStrict('{"a":{"A":1},"b":{"a":2}}'), { a: { A: 1 }, b: { a: 2 } });
  assert.deepEqual(parseJsonStrict('{"ab":1,"a":2,"abc":3}'), { ab: 1, a: 2, abc: 3 });
  // Frames are reused by depth: keys of a closed object do not leak into its sibling.
  assert.deepEqual(parseJsonStrict('{"x":{"k":1},"y":{"k":2},"z":[{"k":3}]}'), { x: { k: 1 }, y: { k: 2 }, z: [{ k: 3 }] });
});

test('__proto__, constructor and prototype are ordinary own keys; nothing is polluted', () => {
  const r = parseJsonStrict('{"__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":2}},"prototype":3}') as Record<
    string,
    unknown
  >;
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.equal((Object.prototype as unknown as Record<string, unknown>).polluted, undefined);
  assert.deepEqual(Object.keys(r), ['__proto__', 'constructor', 'prototype']);
  assert.ok(Object.prototype.hasOwnProperty.call(r, '__proto__'));
  assert.equal(Object.getPrototypeOf(r), Object.prototype);
  assert.deepEqual(Object.getOwnPropertyDescriptor(r, '__proto__')?.value, { polluted: 1 });
  assert.equal((r.__proto__ as Record<string, unknown>).polluted, 1);
  const nested = parseJsonStrict('[{"__proto__":[]}]') as Record<string, unknown>[];
  assert.ok(!Array.isArray(nested[0]), 'the element is still a plain object');
  refusal('{"__proto__":1,"__PROTO__":2}');
});

test(`nesting deeper than ${MAX_JSON_DEPTH} levels is refused without a stack overflow`, () => {
  const ok = '['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH);
  assert.ok(Array.isArray(parseJsonStrict(ok)));
  let e = refusal('['.repeat(MAX_JSON_DEPTH + 1) + ']'.repeat(MAX_JSON_DEPTH + 1));
  assert.match(e.message, /nested deeper than 1000/);
  assert.equal(e.position, MAX_JSON_DEPTH);
  e = refusal('{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000));
  assert.match(e.message, /nested deeper/);
  // Unbalanced garbage deep down: still a clean refusal.
  refusal('['.repeat(1_000_000));
});

test('a CreateTasks batch of 10,000 items and a 1 MiB string parse correctly', () => {
  const items = Array.from({ length: 10_000 }, (_, i) => ({
    CoreSystemKey: `S-${i}`,
    NumberField: i * 1.5,
    Flag: i % 2 === 0,
    Comment: null,
  }));
  const text = JSON.stringify(items);
  assert.deepEqual(parseJsonStrict(text), items);
  const trace = { taskId: 5, comment: 'at X.Y() in C:\\src\\a.cs:line 42\n\t"quoted"\n'.repeat(20_000) };
  assert.deepEqual(parseJsonStrict(JSON.stringify(trace)), trace);
});
