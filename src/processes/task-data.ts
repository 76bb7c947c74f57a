/**
 * Task data against a process's fields (docs/product.md §3, docs/mate-api.md §6.3): which keys are fields, which
 * are reserved, how each value converts, and how stored values are answered (§6.1). Pure: no
 * database, no HTTP.
 */
import type { FieldType } from '../db/types.js';
import type { FieldProblem } from '../lib/errors.js';
import { formatDateTime, parseDateOnlyInput, parseDateTimeInput } from '../lib/time.js';
import {
  TEXT_EXPECTED,
  decimalExpected,
  invalidField,
  isStorableText,
  showValue,
  toBoolean,
  toDecimal,
  toText,
  type NumberFormat,
} from '../lib/values.js';

/** A field as task data needs it (process_fields, in position order). */
export interface TaskField {
  name: string;
  /** what people read (process_fields.label); absent where only the name matters */
  label?: string;
  type: FieldType;
  required: boolean;
  isKey: boolean;
  isUnique: boolean;
  options: string[];
  defaultValue: unknown;
}

export type TaskDataMode = 'create' | 'update';

/** Reserved keys read from task data; a key is present only when it was sent (and is used). */
export interface ReservedValues {
  /** `comment`, else its alias `newNote` (docs/mate-api.md §3); `""` is none. */
  comment?: string | null;
  /** Create only. */
  activationDate?: Date | null;
  /** Create only. */
  deadline?: Date | null;
  /** Create only. */
  urgent?: boolean | null;
  /** Update only, as sent (the caller reads it and answers missing_field when absent). */
  taskId?: unknown;
}

export interface TaskDataInput {
  fields: readonly TaskField[];
  /** The task data object (the caller has checked that it is an object, not an array). */
  body: Record<string, unknown>;
  mode: TaskDataMode;
  /** The tenant time zone: dates without an offset are read in it (docs/product.md §4). */
  timeZone: string;
  /** The tenant's number format: how numbers in strings are read (default `point`). */
  numberFormat?: NumberFormat;
  /**
   * Update: the task's stored values, so that missingRequired and uniqueKey describe the task as
   * it will be after the update (absent: as if it had none).
   */
  current?: Record<string, unknown>;
}

export interface TaskData {
  /**
   * Converted values keyed by the field's defined name (date `YYYY-MM-DD`, datetime an ISO UTC
   * string). Create: the values sent plus defaults; absent fields have no key. Update: only the
   * fields to change, null for a field cleared with `""`. A process without fields: the free keys
   * as sent.
   */
  values: Record<string, unknown>;
  reserved: ReservedValues;
  /** Required fields (defined names, field order) missing or empty: after defaults on create, after merging `current` on update. */
  missingRequired: string[];
  /** uniqueKeyOf the values (after merging `current` on update): null when none or empty. */
  uniqueKey: string | null;
}

export type TaskDataResult = ({ ok: true } & TaskData) | { ok: false; problems: FieldProblem[] };

/** The most problems one answer lists (docs/mate-api.md §5). */
export const MAX_PROBLEMS = 100;

type Reserved = 'comment' | 'newNote' | 'activationDate' | 'deadline' | 'urgent' | 'taskId' | 'ignored';

/** docs/mate-api.md §6.3, by lower-cased key. */
const RESERVED = new Map<string, Reserved>([
  ['comment', 'comment'],
  ['newnote', 'newNote'],
  ['activationdate', 'activationDate'],
  ['deadline', 'deadline'],
  ['urgent', 'urgent'],
  ['taskid', 'taskId'],
  ['reason', 'ignored'],
  ['runid', 'ignored'],
  ['processkey', 'ignored'],
  ['queue', 'ignored'],
  ['error', 'ignored'],
  ['retrycount', 'ignored'],
]);

/** Fields by lower-cased name, built once per fields array (a batch of 10,000 items shares one). */
const lookups = new WeakMap<readonly TaskField[], Map<string, TaskField>>();

function fieldLookup(fields: readonly TaskField[]): Map<string, TaskField> {
  let m = lookups.get(fields);
  if (!m) {
    m = new Map(fields.map((f) => [f.name.toLowerCase(), f]));
    lookups.set(fields, m);
  }
  return m;
}

function hasOwn(obj: object, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(obj, key);
}

/** Sets an own data property, `__proto__` included, without touching any prototype. */
function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

/**
 * Why a free value (a process without fields) could not be stored exactly, or null: PostgreSQL's
 * jsonb cannot hold U+0000 or a lone UTF-16 surrogate in any string or key, and a JSON number
 * that is not finite (`1e309`) or a whole number beyond ±(2^53−1) (`9007199254740993`) would
 * come back changed (null, or another number).
 */
function unstorable(value: unknown): string | null {
  if (typeof value === 'string') return isStorableText(value) ? null : UNSTORABLE_TEXT;
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || (Number.isInteger(value) && !Number.isSafeInteger(value))) return INEXACT_NUMBER;
    return null;
  }
  if (Array.isArray(value)) {
    for (const v of value) {
      const r = unstorable(v);
      if (r) return r;
    }
    return null;
  }
  if (value !== null && typeof value === 'object') {
    for (const k of Object.keys(value)) {
      if (!isStorableText(k)) return UNSTORABLE_TEXT;
      const r = unstorable((value as Record<string, unknown>)[k]);
      if (r) return r;
    }
  }
  return null;
}

const UNSTORABLE_TEXT = 'storable (U+0000 and lone UTF-16 surrogates are not allowed, in keys or strings)';
const INEXACT_NUMBER = `storable exactly (numbers must be finite, and whole numbers within ±${Number.MAX_SAFE_INTEGER}; send others as strings)`;

const EMAIL = /^[^\s@]+@[^\s@]+$/;

export type Conversion = { ok: true; value: unknown } | { ok: false; expected: string };

const no = (expected: string): Conversion => ({ ok: false, expected });

/**
 * Converts one non-empty value (not null, not `""`) to the field's type (docs/product.md §3, docs/mate-api.md §6.3).
 * On failure, `expected` completes "… is not <expected>".
 */
export function convertFieldValue(field: TaskField, value: unknown, timeZone: string, numberFormat: NumberFormat = 'point'): Conversion {
  switch (field.type) {
    case 'text': {
      const s = toText(value);
      return s === undefined ? no(TEXT_EXPECTED) : { ok: true, value: s };
    }
    case 'number': {
      const n = toDecimal(value, numberFormat);
      return n === undefined ? no(decimalExpected(value, numberFormat)) : { ok: true, value: n };
    }
    case 'integer': {
      const n = toDecimal(value, numberFormat);
      if (n === undefined)
        return no(numberFormat === 'point' ? 'a whole number' : `a whole number: ${decimalExpected(value, numberFormat)}`);
      if (!Number.isInteger(n)) return no('a whole number');
      if (Math.abs(n) > Number.MAX_SAFE_INTEGER) return no(`a whole number from ${-Number.MAX_SAFE_INTEGER} to ${Number.MAX_SAFE_INTEGER}`);
      return { ok: true, value: n };
    }
    case 'boolean': {
      const b = toBoolean(value);
      return b === undefined ? no('a boolean (true, false, "true", "false", 1 or 0)') : { ok: true, value: b };
    }
    case 'date': {
      const d = typeof value === 'string' ? parseDateOnlyInput(value, timeZone) : null;
      return d === null ? no('a date (YYYY-MM-DD, or a date-time)') : { ok: true, value: d };
    }
    case 'datetime': {
      const d = typeof value === 'string' ? parseDateTimeInput(value, timeZone) : null;
      return d === null
        ? no('a date-time (YYYY-MM-DDTHH:MM[:SS[.fffffff]], optionally with Z or ±HH:MM)')
        : { ok: true, value: d.toISOString() };
    }
    case 'dropdown': {
      const s = toText(value);
      if (s !== undefined) {
        const lower = s.toLowerCase();
        const option = field.options.find((o) => o.toLowerCase() === lower);
        if (option !== undefined) return { ok: true, value: option };
      }
      return no(`one of the options ${showValue(field.options)}`);
    }
    case 'email': {
      if (typeof value === 'string' && EMAIL.test(value) && isStorableText(value)) return { ok: true, value };
      return no('an e-mail address (local@domain, no spaces)');
    }
  }
}

function isEmpty(value: unknown): boolean {
  return value === null || value === undefined || (typeof value === 'string' && value.trim() === '');
}

/** Getting a stored value by the field's name, falling back to a key equal ignoring case. */
function storedValue(stored: Record<string, unknown>, name: string): unknown {
  if (hasOwn(stored, name)) return stored[name];
  const lower = name.toLowerCase();
  for (const k of Object.keys(stored)) if (k.toLowerCase() === lower) return stored[k];
  return undefined;
}

/** Required fields (defined names, field order) whose value is missing, null or blank. */
export function findMissingRequired(fields: readonly TaskField[], values: Record<string, unknown>): string[] {
  const missing: string[] = [];
  for (const f of fields) if (f.required && isEmpty(storedValue(values, f.name))) missing.push(f.name);
  return missing;
}

function normalizeKeyPart(field: TaskField, value: unknown): string | null {
  if (isEmpty(value)) return null;
  if (typeof value === 'string') {
    // Text-like keys compare trimmed and ignoring case ("INV-1 " and "inv-1" are one invoice).
    return field.type === 'date' || field.type === 'datetime' ? value : value.trim().toLowerCase();
  }
  return String(value);
}

/**
 * The normalized value of the unique key fields (isKey and isUnique) for the uniqueness rule of
 * docs/product.md §3: one field gives its normalized text, several a JSON array of them in field order.
 * Null when the process has no unique key field or every one is empty.
 */
export function uniqueKeyOf(fields: readonly TaskField[], values: Record<string, unknown>): string | null {
  const parts: (string | null)[] = [];
  for (const f of fields) if (f.isKey && f.isUnique) parts.push(normalizeKeyPart(f, storedValue(values, f.name)));
  if (parts.length === 0 || parts.every((p) => p === null)) return null;
  return parts.length === 1 ? parts[0] : JSON.stringify(parts);
}

/**
 * Validates and converts task data (the body of CreateTask, CreateAndTakeTask, UpdateTask, or one
 * CreateTasks item; the caller has checked it is an object). Collects every problem, up to
 * MAX_PROBLEMS, in key order: `invalid_field` for a value that does not convert, `unknown_field`
 * for a non-null key that is neither a field nor reserved when the process has fields.
 *
 * Semantics (docs/mate-api.md §3, docs/mate-api.md §6.3): keys match ignoring case; null is absent; on create `""` is absent
 * too (the default applies); on update null leaves a field alone and `""` clears it.
 */
export function validateTaskData(input: TaskDataInput): TaskDataResult {
  const { fields, body, mode, timeZone } = input;
  const byName = fieldLookup(fields);
  const free = fields.length === 0;
  const values: Record<string, unknown> = {};
  const reserved: ReservedValues = {};
  const problems: FieldProblem[] = [];
  let comment: string | null | undefined;
  let newNote: string | null | undefined;
  const add = (p: FieldProblem) => {
    if (problems.length < MAX_PROBLEMS) problems.push(p);
  };
  const text = (key: string, value: unknown): string | null | undefined => {
    if (value === '') return null;
    const s = toText(value);
    if (s === undefined) add(invalidField(key, value, TEXT_EXPECTED));
    return s;
  };
  const date = (key: string, value: unknown): Date | undefined => {
    if (value === '') return undefined;
    const d = typeof value === 'string' ? parseDateTimeInput(value, timeZone) : null;
    if (d === null) add(invalidField(key, value, 'a date or date-time (YYYY-MM-DD[THH:MM[:SS[.fffffff]]], optionally with Z or ±HH:MM)'));
    return d ?? undefined;
  };

  for (const key of Object.keys(body)) {
    const value = body[key];
    if (value === null || value === undefined) continue;
    const lower = key.toLowerCase();
    const field = free ? undefined : byName.get(lower);
    if (field !== undefined) {
      if (value === '') {
        if (mode === 'update') values[field.name] = null;
        continue;
      }
      const c = convertFieldValue(field, value, timeZone, input.numberFormat);
      if (c.ok) values[field.name] = c.value;
      else add(invalidField(key, value, c.expected));
      continue;
    }
    const r = RESERVED.get(lower);
    if (r !== undefined) {
      switch (r) {
        case 'comment':
          comment = text(key, value);
          break;
        case 'newNote':
          newNote = text(key, value);
          break;
        case 'activationDate':
          if (mode === 'create') {
            const d = date(key, value);
            if (d) reserved.activationDate = d;
          }
          break;
        case 'deadline':
          if (mode === 'create') {
            const d = date(key, value);
            if (d) reserved.deadline = d;
          }
          break;
        case 'urgent':
          if (mode === 'create' && value !== '') {
            const b = toBoolean(value);
            if (b === undefined) add(invalidField(key, value, 'a boolean (true, false, "true", "false", 1 or 0)'));
            else reserved.urgent = b;
          }
          break;
        case 'taskId':
          if (mode === 'update') reserved.taskId = value;
          break;
        case 'ignored':
          break;
      }
      continue;
    }
    if (free) {
      const why = isStorableText(key) ? unstorable(value) : UNSTORABLE_TEXT;
      if (why) add(invalidField(key, value, why));
      else setOwn(values, key, mode === 'update' && value === '' ? null : value);
      continue;
    }
    const names = fields.map((f) => f.name).join(', ');
    add({
      field: key,
      value,
      code: 'unknown_field',
      message: `"${key}" is neither a field of the process (${names.length > 200 ? names.slice(0, 197) + '...' : names}) nor a reserved key`,
    });
  }

  if (problems.length > 0) return { ok: false, problems };

  // A non-empty comment wins over newNote (docs/mate-api.md §3).
  const note = comment ?? newNote;
  if (note !== null && note !== undefined) reserved.comment = note;

  if (mode === 'create') {
    for (const f of fields) {
      if (hasOwn(values, f.name) || isEmpty(f.defaultValue)) continue;
      // Defaults are stored as JSON with the field; one that does not convert (the field's type
      // changed since) is skipped rather than blamed on the caller.
      const c = convertFieldValue(f, f.defaultValue, timeZone);
      if (c.ok) values[f.name] = c.value;
    }
    return { ok: true, values, reserved, missingRequired: findMissingRequired(fields, values), uniqueKey: uniqueKeyOf(fields, values) };
  }
  // Spread copies with CreateDataProperty, so a stored "__proto__" key stays an ordinary key.
  const merged: Record<string, unknown> = { ...input.current, ...values };
  return { ok: true, values, reserved, missingRequired: findMissingRequired(fields, merged), uniqueKey: uniqueKeyOf(fields, merged) };
}

/**
 * Stored values as the task object answers them (docs/mate-api.md §6.1): one key per field in field order,
 * named as defined, null when empty; date `YYYY-MM-DD`, datetime in the tenant time zone with its
 * offset. A process without fields answers its free keys as stored.
 */
export function formatTaskValues(fields: readonly TaskField[], stored: Record<string, unknown>, timeZone: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (fields.length === 0) {
    for (const k of Object.keys(stored)) setOwn(out, k, stored[k]);
    return out;
  }
  for (const f of fields) {
    const v = storedValue(stored, f.name);
    if (v === null || v === undefined || v === '') {
      out[f.name] = null;
    } else if (f.type === 'datetime' && typeof v === 'string') {
      const d = new Date(v);
      out[f.name] = Number.isNaN(d.getTime()) ? v : formatDateTime(d, timeZone);
    } else {
      out[f.name] = v;
    }
  }
  return out;
}
