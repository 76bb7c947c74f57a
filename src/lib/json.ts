/**
 * Request bodies: decoding (docs/mate-api.md §3 "encoding") and strict JSON (docs/mate-api.md §3 "JSON", "key case").
 *
 * parseJsonStrict runs one hand-written, non-recursive validating scan over the text (syntax with
 * positions, duplicate keys ignoring case, nesting depth) and then builds the value with the
 * engine's JSON.parse. JSON.parse already creates `__proto__`, `constructor` and `prototype` as
 * ordinary own data properties (ECMA-262 CreateDataProperty), so no prototype is ever touched, and
 * it is several times faster at building values than any parser written in JavaScript.
 */
import { isUtf8 } from 'node:buffer';
import { Refusal } from './errors.js';

/** Deeper nesting is refused: no robot sends it, and recursive consumers would overflow the stack. */
export const MAX_JSON_DEPTH = 1000;

/** A body that is not acceptable JSON: the code is `invalid_body` (docs/mate-api.md §5). */
export class JsonBodyError extends Refusal {
  constructor(
    message: string,
    /** Offset in the text (UTF-16 code units) where the problem was found. */
    readonly position: number,
  ) {
    super('invalid_body', message);
    this.name = 'JsonBodyError';
  }
}

/**
 * Body bytes as text: UTF-8 when valid (a leading UTF-8 byte-order mark is dropped), otherwise
 * ISO-8859-1, as the Python client sends raw string bodies on older versions of its HTTP library.
 */
export function decodeBody(buf: Buffer): string {
  const bom = buf.length >= 3 && buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf;
  const bytes = bom ? buf.subarray(3) : buf;
  return isUtf8(bytes) ? bytes.toString('utf8') : bytes.toString('latin1');
}

function describeAt(text: string, pos: number): string {
  if (pos >= text.length) return 'the end of the body';
  const c = text.charCodeAt(pos);
  const shown = c < 0x20 || c === 0x7f ? `U+${c.toString(16).toUpperCase().padStart(4, '0')}` : `'${text[pos]}'`;
  return shown;
}

function lineColumn(text: string, pos: number): string {
  let line = 1,
    lineStart = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < pos; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return `line ${line}, column ${pos - lineStart + 1}`;
}

function fail(text: string, pos: number, what: string): never {
  throw new JsonBodyError(`Invalid JSON at position ${pos} (${lineColumn(text, pos)}): ${what}, found ${describeAt(text, pos)}`, pos);
}

const enum C {
  Tab = 9,
  Lf = 10,
  Cr = 13,
  Space = 32,
  Quote = 34,
  Plus = 43,
  Comma = 44,
  Minus = 45,
  Dot = 46,
  Zero = 48,
  Nine = 57,
  Colon = 58,
  UpperE = 69,
  LBracket = 91,
  Backslash = 92,
  RBracket = 93,
  LowerE = 101,
  LBrace = 123,
  RBrace = 125,
}

function skipWs(t: string, i: number): number {
  for (;;) {
    const c = t.charCodeAt(i);
    if (c === C.Space || c === C.Lf || c === C.Cr || c === C.Tab) i++;
    else return i;
  }
}

function isHex(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);
}

/** A run of string characters that need no attention: neither quote, backslash nor control. */
const PLAIN_RUN = /[^"\\\u0000-\u001f]*/y;

/**
 * Finds the end of a string starting at its opening quote without checking its contents (the
 * engine's JSON.parse does, and the strict scan names the position when it refuses). The native
 * indexOf makes this ~3x faster than scanString on long texts such as stack traces.
 */
function skipString(t: string, start: number): number {
  let i = start + 1;
  for (;;) {
    const q = t.indexOf('"', i);
    if (q === -1) fail(t, t.length, 'unterminated string');
    let b = q - 1;
    while (t.charCodeAt(b) === C.Backslash) b--;
    // An even number of backslashes before the quote: it closes the string.
    if ((q - 1 - b) % 2 === 0) return q + 1;
    i = q + 1;
  }
}

/** Scans a string starting at its opening quote; returns the index after the closing quote. */
function scanString(t: string, start: number): number {
  let i = start + 1;
  for (;;) {
    // The regex engine skips plain runs several times faster than a charCodeAt loop.
    PLAIN_RUN.lastIndex = i;
    PLAIN_RUN.test(t);
    i = PLAIN_RUN.lastIndex;
    const c = t.charCodeAt(i);
    if (c === C.Quote) return i + 1;
    if (c === C.Backslash) {
      const e = t.charCodeAt(i + 1);
      if (e === 117 /* u */) {
        if (!(isHex(t.charCodeAt(i + 2)) && isHex(t.charCodeAt(i + 3)) && isHex(t.charCodeAt(i + 4)) && isHex(t.charCodeAt(i + 5)))) {
          fail(t, i, 'a \\u escape needs four hex digits');
        }
        i += 6;
      } else if (e === C.Quote || e === C.Backslash || e === 47 || e === 98 || e === 102 || e === 110 || e === 114 || e === 116) {
        i += 2;
      } else {
        fail(t, i + 1, 'unknown escape in a string');
      }
    } else if (Number.isNaN(c)) {
      fail(t, i, 'unterminated string');
    } else {
      fail(t, i, 'control character in a string (escape it)');
    }
  }
}

function scanDigits(t: string, i: number): number {
  for (;;) {
    const c = t.charCodeAt(i);
    if (c >= C.Zero && c <= C.Nine) i++;
    else return i;
  }
}

function scanNumber(t: string, start: number): number {
  let i = start;
  if (t.charCodeAt(i) === C.Minus) i++;
  const c = t.charCodeAt(i);
  if (c === C.Zero) i++;
  else if (c > C.Zero && c <= C.Nine) i = scanDigits(t, i + 1);
  else fail(t, i, 'a digit expected in a number');
  if (t.charCodeAt(i) === C.Dot) {
    const j = scanDigits(t, i + 1);
    if (j === i + 1) fail(t, j, 'a digit expected after the decimal point');
    i = j;
  }
  const e = t.charCodeAt(i);
  if (e === C.LowerE || e === C.UpperE) {
    i++;
    const s = t.charCodeAt(i);
    if (s === C.Plus || s === C.Minus) i++;
    const j = scanDigits(t, i);
    if (j === i) fail(t, j, 'a digit expected in the exponent');
    i = j;
  }
  return i;
}

/**
 * One open object or array. Frames are reused by depth (no allocation per object). An object's
 * keys are compared as sent while few (two keys can only be equal ignoring case when their lengths
 * are), then through a Set of lower-cased keys.
 */
interface Frame {
  isObject: boolean;
  keys: string[];
  set: Set<string> | null;
}

const LINEAR_KEYS = 16;

function addKey(t: string, frame: Frame, key: string, pos: number): void {
  const keys = frame.keys;
  if (frame.set) {
    const lower = key.toLowerCase();
    if (frame.set.has(lower)) duplicate(t, frame, key, pos);
    frame.set.add(lower);
  } else {
    const len = key.length;
    for (let k = 0; k < keys.length; k++) {
      const other = keys[k];
      if (other.length === len && (other === key || other.toLowerCase() === key.toLowerCase())) duplicate(t, frame, key, pos);
    }
    if (keys.length === LINEAR_KEYS) frame.set = new Set(keys.map((k) => k.toLowerCase()).concat(key.toLowerCase()));
  }
  keys.push(key);
}

function duplicate(t: string, frame: Frame, key: string, pos: number): never {
  const lower = key.toLowerCase();
  const first = frame.keys.find((k) => k.toLowerCase() === lower) ?? key;
  throw new JsonBodyError(
    `Invalid JSON at position ${pos} (${lineColumn(t, pos)}): key ${JSON.stringify(key)} appears twice in one object` +
      (first === key ? '' : ` (as ${JSON.stringify(first)} and ${JSON.stringify(key)}; keys compare ignoring case)`),
    pos,
  );
}

/**
 * Scans the whole text; throws JsonBodyError naming the first problem and its position. With
 * `strict` false the contents of strings are not checked (JSON.parse checks them after).
 */
function validate(t: string, strict: boolean): void {
  const str = strict ? scanString : skipString;
  const n = t.length;
  const frames: Frame[] = [];
  let depth = 0;
  let i = skipWs(t, 0);
  if (i >= n) fail(t, i, 'the body is empty; a JSON value was expected');
  // true: a value is expected at i; false: a value just ended before i.
  let wantValue = true;
  for (;;) {
    if (wantValue) {
      const c = t.charCodeAt(i);
      if (c === C.LBrace || c === C.LBracket) {
        if (depth >= MAX_JSON_DEPTH) {
          throw new JsonBodyError(`Invalid JSON at position ${i} (${lineColumn(t, i)}): nested deeper than ${MAX_JSON_DEPTH} levels`, i);
        }
        const isObject = c === C.LBrace;
        let frame = frames[depth];
        if (frame === undefined) frames[depth] = frame = { isObject, keys: [], set: null };
        else {
          frame.isObject = isObject;
          frame.keys.length = 0;
          frame.set = null;
        }
        depth++;
        i = skipWs(t, i + 1);
        const close = t.charCodeAt(i);
        if (close === (isObject ? C.RBrace : C.RBracket)) {
          depth--;
          i++;
          wantValue = false;
        } else if (isObject) {
          if (close !== C.Quote) fail(t, i, "a key (a string in double quotes) or '}' expected");
          i = key(t, i, frame, str);
        }
        continue;
      }
      if (c === C.Quote) i = str(t, i);
      else if (c === C.Minus || (c >= C.Zero && c <= C.Nine)) i = scanNumber(t, i);
      else if (c === 116 /* t */ && t.startsWith('true', i)) i += 4;
      else if (c === 102 /* f */ && t.startsWith('false', i)) i += 5;
      else if (c === 110 /* n */ && t.startsWith('null', i)) i += 4;
      else fail(t, i, 'a value expected');
      wantValue = false;
      continue;
    }
    i = skipWs(t, i);
    if (depth === 0) {
      if (i < n) fail(t, i, 'the end of the body expected after the value');
      return;
    }
    const top = frames[depth - 1];
    const c = t.charCodeAt(i);
    if (c === C.Comma) {
      i = skipWs(t, i + 1);
      if (top.isObject) {
        if (t.charCodeAt(i) !== C.Quote) fail(t, i, 'a key (a string in double quotes) expected after a comma');
        i = key(t, i, top, str);
      }
      wantValue = true;
    } else if (c === (top.isObject ? C.RBrace : C.RBracket)) {
      depth--;
      i++;
    } else {
      fail(t, i, top.isObject ? "',' or '}' expected after a value in an object" : "',' or ']' expected after a value in an array");
    }
  }
}

/** Scans `"key" :` at i, records the key in the frame; returns the index of the value. */
function key(t: string, i: number, frame: Frame, str: (t: string, start: number) => number): number {
  const end = str(t, i);
  const raw = t.slice(i + 1, end - 1);
  let name = raw;
  if (raw.includes('\\')) {
    try {
      name = JSON.parse(t.slice(i, end)) as string;
    } catch {
      scanString(t, i); // throws with the position of the bad escape
    }
  }
  addKey(t, frame, name, i);
  const colon = skipWs(t, end);
  if (t.charCodeAt(colon) !== C.Colon) fail(t, colon, "':' expected after a key");
  return skipWs(t, colon + 1);
}

/**
 * Parses JSON text strictly: syntax errors, two keys in one object that are equal ignoring case
 * and nesting deeper than MAX_JSON_DEPTH throw JsonBodyError (code `invalid_body`). Numbers become
 * JS numbers; `__proto__`, `constructor` and `prototype` become ordinary own keys.
 */
export function parseJsonStrict(text: string): unknown {
  validate(text, false);
  try {
    return JSON.parse(text);
  } catch (e) {
    // The fast scan passed, so the fault is inside a string: the strict scan names its position.
    validate(text, true);
    throw new JsonBodyError(`Invalid JSON: ${(e as Error).message}`, 0);
  }
}
