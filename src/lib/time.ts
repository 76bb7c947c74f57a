/**
 * Dates and date-times in the tenant time zone (docs/product.md §4, docs/mate-api.md §3 "dates" and docs/mate-api.md §4 "values").
 *
 * Only Intl is used (no time-zone package). Intl.DateTimeFormat#formatToParts costs ~4 µs here, and
 * a CreateTasks batch of 10,000 items with two dates each would spend ~0.3 s on it, so the UTC offset
 * of a zone is cached per UTC day: a day whose start and end have the same offset holds no
 * transition (no zone changes its offset twice within a day), so one look-up serves the whole day.
 */

const MS_MINUTE = 60_000;
const MS_DAY = 86_400_000;
/** Cached days per zone before the cache is dropped: 4,096 days is ~11 years of distinct dates. */
const MAX_CACHED_DAYS = 4096;
/** Marks a UTC day that holds an offset transition: its offsets are computed on every call. */
const TRANSITION = Number.NaN;

interface Zone {
  utc: boolean;
  format: Intl.DateTimeFormat | null;
  /** UTC day number → offset in ms (or TRANSITION). */
  days: Map<number, number>;
}

const zones = new Map<string, Zone>();

function zone(timeZone: string): Zone {
  let z = zones.get(timeZone);
  if (z) return z;
  // Throws RangeError for a name Intl does not know: a configuration fault, not a request fault.
  const format = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    era: 'short',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  });
  const resolved = format.resolvedOptions().timeZone;
  const utc = resolved === 'UTC' || resolved === 'Etc/UTC' || resolved === 'Etc/GMT';
  z = { utc, format: utc ? null : format, days: new Map() };
  zones.set(timeZone, z);
  return z;
}

/** True when Intl knows the IANA time-zone name. */
export function isValidTimeZone(timeZone: string): boolean {
  try {
    zone(timeZone);
    return true;
  } catch {
    return false;
  }
}

/** Offset (local − UTC, ms) at an instant, straight from Intl. */
function computeOffset(format: Intl.DateTimeFormat, utcMs: number): number {
  let year = 0,
    month = 0,
    day = 0,
    hour = 0,
    minute = 0,
    second = 0,
    bc = false;
  for (const p of format.formatToParts(utcMs)) {
    switch (p.type) {
      case 'year':
        year = +p.value;
        break;
      case 'month':
        month = +p.value;
        break;
      case 'day':
        day = +p.value;
        break;
      case 'hour':
        hour = +p.value;
        break;
      case 'minute':
        minute = +p.value;
        break;
      case 'second':
        second = +p.value;
        break;
      case 'era':
        bc = p.value.startsWith('B');
        break;
    }
  }
  if (bc) year = 1 - year;
  const wall = wallMs(year, month, day, hour, minute, second, 0);
  const whole = utcMs - mod(utcMs, 1000);
  return wall - whole;
}

function offsetAt(z: Zone, utcMs: number): number {
  if (z.utc) return 0;
  const format = z.format!;
  const dayNo = Math.floor(utcMs / MS_DAY);
  let off = z.days.get(dayNo);
  if (off === undefined) {
    const start = computeOffset(format, dayNo * MS_DAY);
    const end = computeOffset(format, dayNo * MS_DAY + MS_DAY - 1000);
    off = start === end ? start : TRANSITION;
    if (z.days.size >= MAX_CACHED_DAYS) z.days.clear();
    z.days.set(dayNo, off);
  }
  return Number.isNaN(off) ? computeOffset(format, utcMs) : off;
}

/** The UTC offset (ms) of a time zone at an instant. */
export function timeZoneOffsetMs(d: Date, timeZone: string): number {
  return offsetAt(zone(timeZone), d.getTime());
}

function mod(a: number, b: number): number {
  const r = a % b;
  return r < 0 ? r + b : r;
}

/** Milliseconds of a wall-clock reading as if it were UTC; years 0-99 are not shifted to 19xx. */
function wallMs(year: number, month: number, day: number, hour: number, minute: number, second: number, ms: number): number {
  if (year >= 100) return Date.UTC(year, month - 1, day, hour, minute, second, ms);
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(hour, minute, second, ms);
  return d.getTime();
}

/**
 * The instant of a wall-clock reading in a zone. A reading in a DST gap moves forward by the gap
 * (02:30 on a spring-forward night reads as 03:30); an ambiguous one takes the earlier offset, i.e.
 * the earlier instant (docs/mate-api.md §3).
 */
function localToUtc(z: Zone, wall: number): number {
  if (z.utc) return wall;
  const before = offsetAt(z, wall - MS_DAY);
  const after = offsetAt(z, wall + MS_DAY);
  if (before === after) {
    const t = wall - before;
    if (offsetAt(z, t) === before) return t;
  }
  const tBefore = wall - before;
  const tAfter = wall - after;
  const okBefore = offsetAt(z, tBefore) === before;
  const okAfter = offsetAt(z, tAfter) === after;
  if (okBefore && okAfter) return Math.min(tBefore, tAfter);
  if (okBefore) return tBefore;
  if (okAfter) return tAfter;
  // In a gap: read with the offset in force before it, which lands after the gap.
  return tBefore;
}

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,7}))?)?)?(?:(Z)|([+-])(\d{2}):?(\d{2}))?$/i;

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

interface Reading {
  wall: number;
  /** Offset in ms when the input carried one. */
  offset: number | null;
  /** True for `YYYY-MM-DD` alone (no time, no offset). */
  dateOnly: boolean;
  date: string;
}

function read(value: string): Reading | null {
  if (typeof value !== 'string' || value.length > 40) return null;
  const m = DATE_TIME.exec(value);
  if (!m) return null;
  const year = +m[1],
    month = +m[2],
    day = +m[3];
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  const hour = m[4] === undefined ? 0 : +m[4];
  const minute = m[5] === undefined ? 0 : +m[5];
  const second = m[6] === undefined ? 0 : +m[6];
  if (hour > 23 || minute > 59 || second > 59) return null;
  // .NET sends 7 fraction digits; keep the ms and drop the rest (truncate, never round up).
  const ms = m[7] === undefined ? 0 : +(m[7] + '00').slice(0, 3);
  let offset: number | null = null;
  if (m[8] !== undefined) offset = 0;
  else if (m[9] !== undefined) {
    const oh = +m[10],
      om = +m[11];
    if (oh > 23 || om > 59) return null;
    offset = (m[9] === '-' ? -1 : 1) * (oh * 60 + om) * MS_MINUTE;
  }
  return {
    wall: wallMs(year, month, day, hour, minute, second, ms),
    offset,
    dateOnly: m[4] === undefined && offset === null,
    date: `${m[1]}-${m[2]}-${m[3]}`,
  };
}

/**
 * Reads a date or date-time as docs/mate-api.md §3 allows: `2024-01-31` (midnight), `2024-01-31T10:00`,
 * `…T10:00:00`, `…T10:00:00.1234567` (`T` or a space; the fraction kept to the ms), each optionally
 * with `Z`, `±HH:MM` or `±HHMM`. Without an offset it is read in `timeZone`. Null when unreadable.
 */
export function parseDateTimeInput(value: string, timeZone: string): Date | null {
  const r = read(value);
  if (!r) return null;
  const t = r.offset === null ? localToUtc(zone(timeZone), r.wall) : r.wall - r.offset;
  const d = new Date(t);
  return inYearRange(d) ? d : null;
}

/**
 * Years 1–9999 in UTC: a date valid as written can leave them once converted
 * (`0001-01-01T00:00+14:00` is in year 0), and PostgreSQL reads no year 0 in ISO text.
 */
function inYearRange(d: Date): boolean {
  const y = d.getUTCFullYear();
  return !Number.isNaN(y) && y >= 1 && y <= 9999;
}

/**
 * Reads a date for a date field: `YYYY-MM-DD` as written; a date-time (or a date with an offset) is
 * taken as its day in `timeZone`. Null when unreadable.
 */
export function parseDateOnlyInput(value: string, timeZone: string): string | null {
  const r = read(value);
  if (!r) return null;
  if (r.dateOnly) return r.date;
  const d = parseDateTimeInput(value, timeZone);
  if (!d) return null;
  // the day in the time zone must be a date of years 1–9999 too (year 0 prints as 0000, a negative
  // year with a sign, and 10000 as 0000 too)
  const day = localDate(d, timeZone);
  return /^(?!0000)\d{4}-\d\d-\d\d$/.test(day) ? day : null;
}

function pad2(n: number): string {
  return n < 10 ? '0' + n : '' + n;
}

function pad3(n: number): string {
  return n < 10 ? '00' + n : n < 100 ? '0' + n : '' + n;
}

function yearText(y: number): string {
  if (y >= 1000 && y <= 9999) return '' + y;
  if (y >= 0) return ('000' + y).slice(-4);
  return '-' + ('00000' + -y).slice(-6);
}

/** The wall clock in the zone, as a Date whose UTC fields are the local ones, and its offset. */
function shifted(d: Date, timeZone: string): { local: Date; offsetMinutes: number } {
  const t = d.getTime();
  // Offsets with seconds (local mean time before ~1900) are cut to whole minutes, so that the
  // printed wall clock and offset always add up to the instant's minute.
  const offsetMinutes = Math.trunc(offsetAt(zone(timeZone), t) / MS_MINUTE);
  return { local: new Date(t + offsetMinutes * MS_MINUTE), offsetMinutes };
}

/** `2024-05-02T09:30:00.000+02:00`: the zone's wall clock with ms and a numeric offset, never `Z`. */
export function formatDateTime(d: Date, timeZone: string): string {
  const { local, offsetMinutes } = shifted(d, timeZone);
  const abs = Math.abs(offsetMinutes);
  return (
    `${yearText(local.getUTCFullYear())}-${pad2(local.getUTCMonth() + 1)}-${pad2(local.getUTCDate())}` +
    `T${pad2(local.getUTCHours())}:${pad2(local.getUTCMinutes())}:${pad2(local.getUTCSeconds())}.${pad3(local.getUTCMilliseconds())}` +
    `${offsetMinutes < 0 ? '-' : '+'}${pad2(Math.floor(abs / 60))}:${pad2(abs % 60)}`
  );
}

/** The day of an instant in the zone, `YYYY-MM-DD`. */
export function localDate(d: Date, timeZone: string): string {
  const { local } = shifted(d, timeZone);
  return `${yearText(local.getUTCFullYear())}-${pad2(local.getUTCMonth() + 1)}-${pad2(local.getUTCDate())}`;
}

/** Same as localDate: the day of an instant in the zone, `YYYY-MM-DD`. */
export const formatDate = localDate;

/** The weekday of an instant in the zone: 0 = Sunday … 6 = Saturday. */
export function localWeekday(d: Date, timeZone: string): number {
  return shifted(d, timeZone).local.getUTCDay();
}
