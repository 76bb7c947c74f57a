/** Field values shown as text in the tenant's time zone, and read back from inputs by field type. */
import dayjs from 'dayjs';
import type { FieldType, FieldValue } from './api-types';

/** what these helpers need of a field (the API's Field, or a partial one in tests) */
export interface FieldLike {
  name: string;
  label?: string | null;
  type: FieldType;
  required?: boolean;
  options?: string[] | null;
}
import { formatDate, formatDateTime } from './time'; // also extends dayjs with utc/timezone

export function formatValue(value: unknown, field: Pick<FieldLike, 'type'> | undefined, timeZone: string): string {
  if (value === null || value === undefined || value === '') return '';
  switch (field?.type) {
    case 'boolean':
      return value === true || value === 'true' ? 'Yes' : value === false || value === 'false' ? 'No' : String(value);
    case 'date':
      return typeof value === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(value) ? formatDate(`${value}T12:00:00Z`, 'UTC') : String(value);
    case 'datetime':
      return typeof value === 'string' ? formatDateTime(value, timeZone) : String(value);
    case 'number':
    case 'integer':
      return typeof value === 'number' ? value.toLocaleString('en-GB', { maximumFractionDigits: 10 }) : String(value);
    default:
      return String(value);
  }
}

export function fieldLabel(field: Pick<FieldLike, 'name' | 'label'>): string {
  return field.label?.trim() || field.name;
}

/** The value to send for what an input holds: empty → null; numbers as numbers. */
export function inputToValue(raw: unknown, field: Pick<FieldLike, 'type'>): FieldValue {
  if (raw === undefined || raw === null || raw === '') return null;
  switch (field.type) {
    case 'number':
    case 'integer': {
      const n = typeof raw === 'number' ? raw : Number(String(raw).replace(',', '.'));
      return Number.isFinite(n) ? n : String(raw);
    }
    case 'boolean':
      return raw === true || raw === 'true';
    default:
      return String(raw);
  }
}

/** A message for a value the field will refuse, or null; the server checks again. */
export function validateValue(raw: unknown, field: FieldLike): string | null {
  const label = fieldLabel(field);
  const empty = raw === undefined || raw === null || raw === '';
  if (empty) return null; // a missing required value sends the task to Needs data, which is allowed
  const s = String(raw);
  switch (field.type) {
    case 'integer':
      return /^-?\d+$/.test(s) ? null : `${label} must be a whole number`;
    case 'number':
      return Number.isFinite(Number(s.replace(',', '.'))) ? null : `${label} must be a number`;
    case 'email':
      return /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(s) ? null : `${label} must be an email address`;
    case 'date':
      return /^\d{4}-\d{2}-\d{2}$/.test(s) ? null : `${label} must be a date (YYYY-MM-DD)`;
    case 'dropdown':
      return !field.options || field.options.includes(s) ? null : `${label} must be one of ${field.options.join(', ')}`;
    default:
      return null;
  }
}

/** What a form input holds for a stored value: datetimes as wall-clock text in the time zone. */
export function valueToInput(value: unknown, field: Pick<FieldLike, 'type'>, timeZone: string): string | boolean {
  if (value === null || value === undefined) return field.type === 'boolean' ? false : '';
  if (field.type === 'boolean') return value === true || value === 'true';
  if (field.type === 'datetime' && typeof value === 'string') {
    const d = dayjs(value);
    if (!d.isValid()) return value;
    try {
      return d.tz(timeZone).format('YYYY-MM-DD HH:mm:ss');
    } catch {
      return d.utc().format('YYYY-MM-DD HH:mm:ss');
    }
  }
  return String(value);
}

/** The value to send for a form input: datetimes read as wall-clock time in the time zone. */
export function inputToStored(raw: unknown, field: Pick<FieldLike, 'type'>, timeZone: string): FieldValue {
  if (field.type === 'datetime' && typeof raw === 'string' && raw) {
    try {
      return dayjs.tz(raw, 'YYYY-MM-DD HH:mm:ss', timeZone).toISOString();
    } catch {
      return raw;
    }
  }
  return inputToValue(raw, field);
}
