import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Refusal } from '../src/lib/errors.js';
import { parseJsonStrict } from '../src/lib/json.js';
import {
  ID_RANGE,
  OVERRIDE_RANGE,
  getEntry,
  getKey,
  keyMap,
  readBoolean,
  readComment,
  readDecimal,
  readInteger,
  readOptionalText,
  readText,
  toBoolean,
  toDecimal,
  toInteger,
  toText,
} from '../src/lib/values.js';

/** Asserts an invalid_field refusal naming the key and the value. */
function refused(fn: () => unknown, key: string, value: unknown): Refusal {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof Refusal, String(e));
    assert.equal(e.code, 'invalid_field');
    assert.equal(e.problems.length, 1);
    const p = e.problems[0];
    assert.equal(p.code, 'invalid_field');
    assert.equal(p.field, key);
    assert.deepEqual(p.value, value);
    assert.ok(e.message.includes(`"${key}"`), e.message);
    assert.ok(e.message.includes(JSON.stringify(value).slice(0, 50)), e.message);
    return e;
  }
  assert.fail(`accepted ${JSON.stringify(value)} for ${key}`);
}

test('readInteger: 5, 5.0 and "5"', () => {
  assert.equal(readInteger(5, 'taskId'), 5);
  assert.equal(readInteger(parseJsonStrict('5.0'), 'taskId'), 5);
  assert.equal(readInteger('5', 'taskId'), 5);
  assert.equal(readInteger('123', 'taskId'), 123, 'C16: UiPath sends "123"');
  assert.equal(readInteger(-1, 'runId'), -1, 'any integer is looked up (C11: RunId -1)');
  assert.equal(readInteger('-1', 'runId'), -1);
  assert.equal(Object.is(readInteger('-0', 'taskId'), 0), true);
  for (const v of [5.5, '5.5', '5.0', '', ' 5', '5 ', '+5', '0x10', '1e3', 'five', true, null, [], {}, [5]])
    refused(() => readInteger(v, 'taskId'), 'taskId', v);
});

test('readInteger: ids below 2^53, overrides 0 to 2^31-1', () => {
  assert.equal(readInteger(2 ** 53 - 1, 'taskId', ID_RANGE), 2 ** 53 - 1);
  assert.equal(readInteger(String(2 ** 53 - 1), 'taskId'), 2 ** 53 - 1);
  refused(() => readInteger(2 ** 53, 'taskId'), 'taskId', 2 ** 53);
  refused(() => readInteger('9007199254740993', 'taskId'), 'taskId', '9007199254740993');
  refused(() => readInteger(1e300, 'taskId'), 'taskId', 1e300);
  assert.equal(readInteger(0, 'overwriteEntries', OVERRIDE_RANGE), 0);
  assert.equal(readInteger('2147483647', 'overwriteEntries', OVERRIDE_RANGE), 2147483647);
  refused(() => readInteger(2147483648, 'overwriteEntries', OVERRIDE_RANGE), 'overwriteEntries', 2147483648);
  const e = refused(() => readInteger(-1, 'overwriteSecondsSaved', OVERRIDE_RANGE), 'overwriteSecondsSaved', -1);
  assert.match(e.message, /from 0 to 2147483647/);
  refused(() => readInteger(101, 'count', { min: 1, max: 100 }), 'count', 101);
  assert.equal(toInteger('7', { max: 10 }), 7);
  assert.equal(toInteger(11, { max: 10 }), undefined);
});

test('readBoolean: true/false, "true"/"false" in any case, 1/0, "1"/"0"', () => {
  for (const v of [true, 'true', 'True', 'TRUE', 'tRuE', 1, '1']) assert.equal(readBoolean(v, 'flag'), true, String(v));
  for (const v of [false, 'false', 'False', 'FALSE', 0, '0']) assert.equal(readBoolean(v, 'flag'), false, String(v));
  for (const v of ['yes', 'no', '', ' true', 'true ', 2, -1, 0.5, '01', 't', null, {}, []])
    refused(() => readBoolean(v, 'flag'), 'flag', v);
  assert.equal(toBoolean('nope'), undefined);
});

test('readDecimal: a number or a string with a "." point (C5, C17 "12.5"; "12,5" refused)', () => {
  assert.equal(readDecimal(12.5, 'numberField'), 12.5);
  assert.equal(readDecimal('12.5', 'numberField'), 12.5);
  assert.equal(readDecimal('1e3', 'numberField'), 1000);
  assert.equal(readDecimal('-0.25', 'numberField'), -0.25);
  assert.equal(readDecimal('+3', 'numberField'), 3);
  assert.equal(readDecimal('.5', 'numberField'), 0.5);
  assert.equal(readDecimal('5.', 'numberField'), 5);
  assert.equal(readDecimal('1.5E-2', 'numberField'), 0.015);
  assert.equal(readDecimal('0012', 'numberField'), 12);
  const e = refused(() => readDecimal('12,5', 'numberField'), 'numberField', '12,5');
  assert.match(e.message, /"numberField": "12,5" is not a number/);
  for (const v of [
    '1,234.5',
    '1.234,5',
    '1 234',
    '1_000',
    '',
    ' ',
    ' 12',
    '12 ',
    'NaN',
    'Infinity',
    '-Infinity',
    '1e999',
    '0x1F',
    '12abc',
    '€12',
    '.',
    'e3',
    true,
    null,
    [],
    {},
  ]) {
    refused(() => readDecimal(v, 'numberField'), 'numberField', v);
  }
  assert.equal(toDecimal(Number.NaN), undefined);
  assert.equal(toDecimal(Number.POSITIVE_INFINITY), undefined);
});

test('readText: strings; numbers and booleans as their JSON text; objects, arrays and U+0000 refused', () => {
  assert.equal(readText('abc', 'reason'), 'abc');
  assert.equal(readText('', 'reason'), '');
  assert.equal(readText(12.5, 'reason'), '12.5');
  assert.equal(readText(1e21, 'reason'), '1e+21');
  assert.equal(readText(-0, 'reason'), '0');
  assert.equal(readText(true, 'reason'), 'true');
  assert.equal(readText(false, 'reason'), 'false');
  const long = 'x'.repeat(200_000);
  assert.equal(readText(long, 'reason'), long, 'no limit but the body size');
  for (const v of [{}, { a: 1 }, [], ['a'], 'a\u0000b', null]) refused(() => readText(v, 'reason'), 'reason', v);
  assert.equal(toText(undefined), undefined);
});

test('readOptionalText: null, absent and "" are null', () => {
  assert.equal(readOptionalText(null, 'reason'), null);
  assert.equal(readOptionalText(undefined, 'reason'), null);
  assert.equal(readOptionalText('', 'reason'), null);
  assert.equal(readOptionalText(' ', 'reason'), ' ');
  assert.equal(readOptionalText(7, 'reason'), '7');
  refused(() => readOptionalText({}, 'reason'), 'reason', {});
});

test('messages show long values shortened', () => {
  const e = refused(() => readDecimal('9'.repeat(300) + ',5', 'numberField'), 'numberField', '9'.repeat(300) + ',5');
  assert.ok(e.message.length < 250, e.message);
  assert.match(e.message, /\.\.\./);
});

test('getKey and keyMap find keys ignoring case; null is absent (C15 PascalCase)', () => {
  const body = parseJsonStrict('{"TaskId":5,"Reason":"x","Comment":"","OverwriteSecondsSaved":null,"OverwriteEntries":null}') as Record<
    string,
    unknown
  >;
  assert.equal(getKey(body, 'taskId'), 5);
  assert.equal(getKey(body, 'TASKID'), 5);
  assert.equal(getKey(body, 'reason'), 'x');
  assert.equal(getKey(body, 'overwriteSecondsSaved'), undefined, 'explicit null = absent');
  assert.equal(getKey(body, 'missing'), undefined);
  assert.deepEqual(getEntry(body, 'reason'), { key: 'Reason', value: 'x' });
  const map = keyMap(body);
  assert.deepEqual([...map.keys()], ['taskid', 'reason', 'comment']);
  assert.equal(getKey(map, 'TaskID'), 5);
  assert.equal(getKey(map, 'overwriteEntries'), undefined);
  assert.equal(readComment(body), null, 'C9: "Comment": "" is no comment');
});

test('getKey does not read inherited properties', () => {
  const body = parseJsonStrict('{"a":1}') as Record<string, unknown>;
  for (const k of ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'prototype']) assert.equal(getKey(body, k), undefined, k);
  const own = parseJsonStrict('{"__proto__":"p","Constructor":"c"}') as Record<string, unknown>;
  assert.equal(getKey(own, '__proto__'), 'p');
  assert.equal(getKey(own, 'constructor'), 'c');
  assert.equal(getKey(keyMap(own), '__PROTO__'), 'p');
});

test('comment has the alias newNote; comment wins when both are given (C16)', () => {
  const uipath = parseJsonStrict('{"coreSystemKey":"x","newNote":"note","taskId":"123"}') as Record<string, unknown>;
  assert.equal(getKey(uipath, 'comment'), 'note');
  assert.equal(readComment(uipath), 'note');
  assert.equal(readComment({ comment: 'c', newNote: 'n' }), 'c');
  assert.equal(readComment({ NewNote: 'n', Comment: 'c' }), 'c');
  assert.equal(readComment({ comment: null, newNote: 'n' }), 'n');
  assert.equal(readComment({ comment: '', newNote: 'n' }), 'n', '"" is no comment, so newNote is used');
  assert.equal(readComment({ comment: '' }), null);
  assert.equal(readComment({}), null);
  assert.equal(readComment({ comment: 5 }), '5');
  assert.equal(getKey(keyMap({ NEWNOTE: 'n' }), 'comment'), 'n');
  refused(() => readComment({ newNote: ['a'] }), 'newNote', ['a']);
});

test('the decimal-comma number format: "1234,56" and "1.234,56" read, what a "." makes ambiguous refused; JSON numbers alike', () => {
  const read = (v: unknown) => toDecimal(v, 'comma');
  assert.equal(read('1234,56'), 1234.56);
  assert.equal(read('1.234,56'), 1234.56);
  assert.equal(read('-1.234.567,5'), -1234567.5);
  assert.equal(read('1.234.567'), 1234567);
  assert.equal(read('+12'), 12);
  assert.equal(read(',5'), 0.5);
  assert.equal(read(12.5), 12.5, 'a JSON number is a number under either format');
  // "1.234" is 1234 with a thousands separator, or 1.234 with a decimal point: refused
  for (const v of ['1.234', '1234.56', '12.5', '1,234.56', '1.23,4', '12,34,5', '1.2345,6', '1e3', '', ' 1,5', '1 234,5']) {
    assert.equal(read(v), undefined, v);
  }
  assert.throws(
    () => readDecimal('1.234', 'amount', 'comma'),
    (e: Refusal) => e.code === 'invalid_field' && /"amount": "1\.234" is not a number read one way only/.test(e.message),
  );
  assert.throws(
    () => readDecimal('12.5', 'amount', 'comma'),
    (e: Refusal) => /decimal comma/.test(e.message),
  );
  // the default reads as before
  assert.equal(toDecimal('1.234'), 1.234);
  assert.equal(toDecimal('1234,56'), undefined);
});
