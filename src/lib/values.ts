/**
 * Lenient readers for values on the Mate API wire (docs/mate-api.md §3): the official clients send ids as
 * strings, booleans as .NET's "True", decimals as strings, and every property with null.
 *
 * Each kind has a converter (`toX`: the value, or undefined when it cannot be read) for callers that
 * collect problems, and a reader (`readX`) that throws Refusal `invalid_field` with one problem
 * naming the key and the value as sent.
 */
import { Refusal, type FieldProblem } from './errors.js';

/** Ids are below 2^53 (docs/product.md §4); the largest integer a JSON number carries exactly. */
export const ID_RANGE = { min: -Number.MAX_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER } as const;
/** overwriteSecondsSaved, overwriteEntries (docs/mate-api.md §3 "integers"). */
export const OVERRIDE_RANGE = { min: 0, max: 2 ** 31 - 1 } as const;

export interface IntegerRange {
  min?: number;
  max?: number;
}

const INTEGER_TEXT = /^-?\d{1,20}$/;
/** A decimal with a `.` point and an optional exponent; no comma, no thousands separators. */
const DECIMAL_TEXT = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/** The value as it appears in a message: JSON, shortened to 100 characters. */
export function showValue(value: unknown): string {
  let s: string;
  try {
    s =
      value === undefined || (typeof value === 'number' && !Number.isFinite(value))
        ? String(value)
        : (JSON.stringify(value) ?? String(value));
  } catch {
    s = String(value);
  }
  return s.length > 100 ? s.slice(0, 97) + '...' : s;
}

/** A problem `invalid_field` naming the key and the value: `"numberField": "12,5" is not a number …`. */
export function invalidField(key: string, value: unknown, expected: string): FieldProblem {
  return { field: key, value, code: 'invalid_field', message: `"${key}": ${showValue(value)} is not ${expected}` };
}

function refuse(key: string, value: unknown, expected: string): never {
  const p = invalidField(key, value, expected);
  throw new Refusal('invalid_field', p.message, [p]);
}

/** `5`, `5.0` (the same JSON number) or `"5"`, within the range (default: the safe integers). */
export function toInteger(value: unknown, range: IntegerRange = ID_RANGE): number | undefined {
  let n: number;
  if (typeof value === 'number') n = value;
  else if (typeof value === 'string' && INTEGER_TEXT.test(value)) n = Number(value);
  else return undefined;
  if (!Number.isInteger(n)) return undefined;
  const min = range.min ?? ID_RANGE.min;
  const max = range.max ?? ID_RANGE.max;
  return n >= min && n <= max ? n + 0 : undefined; // + 0 turns -0 into 0
}

function describeRange(range: IntegerRange): string {
  const min = range.min ?? ID_RANGE.min;
  const max = range.max ?? ID_RANGE.max;
  return `an integer from ${min} to ${max}`;
}

export function readInteger(value: unknown, key: string, range: IntegerRange = ID_RANGE): number {
  const n = toInteger(value, range);
  return n === undefined ? refuse(key, value, describeRange(range)) : n;
}

/** true/false; "true"/"false" in any case; 1/0; "1"/"0". */
export function toBoolean(value: unknown): boolean | undefined {
  if (typeof value === 'boolean') return value;
  if (value === 1 || value === '1') return true;
  if (value === 0 || value === '0') return false;
  if (typeof value === 'string' && value.length <= 5) {
    const lower = value.toLowerCase();
    if (lower === 'true') return true;
    if (lower === 'false') return false;
  }
  return undefined;
}

export function readBoolean(value: unknown, key: string): boolean {
  const b = toBoolean(value);
  return b === undefined ? refuse(key, value, 'a boolean (true, false, "true", "false", 1 or 0)') : b;
}

/**
 * How a tenant's numbers in strings are read (the tenant setting numberFormat, docs/mate-api.md §3):
 * `point`, a `.` decimal point and no thousands separators (`"1234.56"`, `"1e3"`); `comma`, a `,`
 * decimal comma with optional `.` thousands separators (`"1234,56"`, `"1.234,56"`), as a robot
 * formats numbers with a Danish culture. JSON numbers are read alike under both.
 */
export const NUMBER_FORMATS = ['point', 'comma'] as const;
export type NumberFormat = (typeof NUMBER_FORMATS)[number];

/** Digits with an optional `,` decimal part: "1234", "1234,56", ",5", "-3,25". */
const COMMA_PLAIN = /^[+-]?(?:\d+(?:,\d*)?|,\d+)$/;
/** `.` thousands groups and a `,` decimal part: "1.234,56", "12.345.678,9". */
const COMMA_GROUPED_DECIMALS = /^[+-]?\d{1,3}(?:\.\d{3})+,\d*$/;
/** Two or more `.` thousands groups and no decimal part: "1.234.567" (a decimal point never repeats). */
const COMMA_GROUPED_MANY = /^[+-]?\d{1,3}(?:\.\d{3}){2,}$/;
/** One `.` before three digits: "1.234" is 1234 with a thousands separator, or 1.234 with a decimal point. */
const COMMA_AMBIGUOUS = /^[+-]?\d{1,3}\.\d{3}$/;

/** The text of a number under the decimal-comma format, as JavaScript reads it; undefined when it is none or ambiguous. */
function commaText(value: string): string | undefined {
  if (COMMA_PLAIN.test(value)) return value.replace(',', '.');
  if (COMMA_GROUPED_DECIMALS.test(value)) return value.replace(/\./g, '').replace(',', '.');
  if (COMMA_GROUPED_MANY.test(value)) return value.replace(/\./g, '');
  return undefined;
}

/** A finite number, or a string in the tenant's number format (default `point`: `"12.5"`, `"1e3"`). */
export function toDecimal(value: unknown, format: NumberFormat = 'point'): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value !== 'string' || value.length > 400) return undefined;
  const text = format === 'comma' ? commaText(value) : DECIMAL_TEXT.test(value) ? value : undefined;
  if (text === undefined) return undefined;
  const n = Number(text);
  return Number.isFinite(n) ? n + 0 : undefined;
}

export const DECIMAL_EXPECTED = "a number (a '.' decimal point, no thousands separators)";
export const DECIMAL_COMMA_EXPECTED = 'a number (a \',\' decimal comma and optional \'.\' thousands separators: "1234,56" or "1.234,56")';
const DECIMAL_COMMA_AMBIGUOUS =
  'a number read one way only ("1.234" could be 1234 or 1,234 with this tenant\'s decimal comma: send "1234" or "1,234")';

/** What "… is not <expected>" says of a string that is no number in `format`. */
export function decimalExpected(value: unknown, format: NumberFormat = 'point'): string {
  if (format === 'point') return DECIMAL_EXPECTED;
  return typeof value === 'string' && COMMA_AMBIGUOUS.test(value) ? DECIMAL_COMMA_AMBIGUOUS : DECIMAL_COMMA_EXPECTED;
}

export function readDecimal(value: unknown, key: string, format: NumberFormat = 'point'): number {
  const n = toDecimal(value, format);
  return n === undefined ? refuse(key, value, decimalExpected(value, format)) : n;
}

/** U+0000, or a UTF-16 surrogate without its other half: text PostgreSQL cannot store (nor UTF-8 carry). */
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Can PostgreSQL store this string as text or in jsonb: no U+0000, no lone surrogate? */
export function isStorableText(s: string): boolean {
  return !UNSTORABLE.test(s);
}

/** A string without U+0000 or a lone surrogate; numbers and booleans become their JSON text. */
export function toText(value: unknown): string | undefined {
  if (typeof value === 'string') return isStorableText(value) ? value : undefined;
  if (typeof value === 'number') return Number.isFinite(value) ? JSON.stringify(value) : undefined;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  return undefined;
}

export const TEXT_EXPECTED = 'a text (a string, number or boolean, without U+0000 or a lone UTF-16 surrogate)';

export function readText(value: unknown, key: string): string {
  const s = toText(value);
  return s === undefined ? refuse(key, value, TEXT_EXPECTED) : s;
}

/** As readText, but null, absent and `""` are null (docs/mate-api.md §3 `""` for optional system keys). */
export function readOptionalText(value: unknown, key: string): string | null {
  if (value === null || value === undefined || value === '') return null;
  return readText(value, key);
}

/** Body keys by their lower-cased name, explicit nulls left out (docs/mate-api.md §3 "nulls"). */
export type KeyMap = Map<string, { key: string; value: unknown }>;

/**
 * Indexes an object's own keys ignoring case. Keys whose value is null are absent. The JSON
 * parser refuses two keys equal ignoring case, so no entry hides another.
 */
export function keyMap(obj: Record<string, unknown>): KeyMap {
  const map: KeyMap = new Map();
  for (const key of Object.keys(obj)) {
    const value = obj[key];
    if (value !== null && value !== undefined) map.set(key.toLowerCase(), { key, value });
  }
  return map;
}

/** Keys read through another name when absent (docs/mate-api.md §3: `comment` has the alias `newNote`). */
const ALIASES = new Map([['comment', 'newnote']]);

function lookup(source: Record<string, unknown> | KeyMap, lower: string): { key: string; value: unknown } | undefined {
  if (source instanceof Map) return source.get(lower);
  for (const key of Object.keys(source)) {
    if (key.length === lower.length && key.toLowerCase() === lower) {
      const value = source[key];
      return value === null || value === undefined ? undefined : { key, value };
    }
  }
  return undefined;
}

/**
 * The entry for `name` ignoring case, or undefined when absent or null. `comment` falls back to
 * `newNote` when it is absent, null or `""` (the .NET client sends `"Comment": ""` by default), so
 * a non-empty `comment` wins when both are sent.
 */
export function getEntry(source: Record<string, unknown> | KeyMap, name: string): { key: string; value: unknown } | undefined {
  const lower = name.toLowerCase();
  const found = lookup(source, lower);
  const alias = ALIASES.get(lower);
  if (alias !== undefined && (found === undefined || found.value === '')) return lookup(source, alias) ?? found;
  return found;
}

/** The value of `name` ignoring case (see getEntry); undefined when absent or null. */
export function getKey(source: Record<string, unknown> | KeyMap, name: string): unknown {
  return getEntry(source, name)?.value;
}

/** The comment of a body: `comment`, else its alias `newNote`; absent, null and `""` are none. */
export function readComment(body: Record<string, unknown> | KeyMap): string | null {
  const e = getEntry(body, 'comment');
  return e === undefined ? null : readOptionalText(e.value, e.key);
}
