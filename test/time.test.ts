import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  formatDate,
  formatDateTime,
  isValidTimeZone,
  localDate,
  localWeekday,
  parseDateOnlyInput,
  parseDateTimeInput,
  timeZoneOffsetMs,
} from '../src/lib/time.js';

const CPH = 'Europe/Copenhagen';
const NY = 'America/New_York';

function iso(value: string, tz: string): string | null {
  return parseDateTimeInput(value, tz)?.toISOString() ?? null;
}

test('date-only input is midnight in the time zone', () => {
  assert.equal(iso('2024-01-31', 'UTC'), '2024-01-31T00:00:00.000Z');
  assert.equal(iso('2024-01-31', CPH), '2024-01-30T23:00:00.000Z');
  assert.equal(iso('2024-07-31', CPH), '2024-07-30T22:00:00.000Z');
  assert.equal(iso('2024-01-31', NY), '2024-01-31T05:00:00.000Z');
});

test('date-time forms without an offset are read in the time zone (C17: 10:00 tenant time)', () => {
  assert.equal(iso('2030-01-31T10:00:00', CPH), '2030-01-31T09:00:00.000Z');
  assert.equal(iso('2030-01-31T10:00', CPH), '2030-01-31T09:00:00.000Z');
  assert.equal(iso('2030-01-31 10:00', CPH), '2030-01-31T09:00:00.000Z');
  assert.equal(iso('2030-07-31T10:00:00', CPH), '2030-07-31T08:00:00.000Z');
  assert.equal(iso('2030-01-31T10:00:00', 'Asia/Kolkata'), '2030-01-31T04:30:00.000Z');
  assert.equal(iso('2030-01-31T10:00:00', 'UTC'), '2030-01-31T10:00:00.000Z');
});

test('fractions up to 7 digits are kept to the ms, truncated', () => {
  assert.equal(iso('2024-01-31T10:00:00.1', 'UTC'), '2024-01-31T10:00:00.100Z');
  assert.equal(iso('2024-01-31T10:00:00.12', 'UTC'), '2024-01-31T10:00:00.120Z');
  assert.equal(iso('2024-01-31T10:00:00.123', 'UTC'), '2024-01-31T10:00:00.123Z');
  assert.equal(iso('2024-01-31T10:00:00.1239', 'UTC'), '2024-01-31T10:00:00.123Z');
  assert.equal(iso('2024-01-31T10:00:00.9999999', 'UTC'), '2024-01-31T10:00:00.999Z');
  assert.equal(iso('2024-01-31T10:00:00.12345678', 'UTC'), null, '8 digits');
  assert.equal(iso('2024-01-31T10:00:00.', 'UTC'), null);
  assert.equal(iso('2024-01-31T10:00.5', 'UTC'), null, 'a fraction needs seconds');
});

test('explicit offsets: Z, ±HH:MM, ±HHMM (.NET 7-digit fractions, C10)', () => {
  assert.equal(iso('2030-01-31T10:00:00.1234567+01:00', NY), '2030-01-31T09:00:00.123Z');
  assert.equal(iso('2030-01-31T10:00:00.1234567-05:00', CPH), '2030-01-31T15:00:00.123Z');
  assert.equal(iso('2030-01-31T10:00:00+0130', CPH), '2030-01-31T08:30:00.000Z');
  assert.equal(iso('2030-01-31T10:00:00-0000', CPH), '2030-01-31T10:00:00.000Z');
  assert.equal(iso('2030-01-31T10:00:00Z', CPH), '2030-01-31T10:00:00.000Z');
  assert.equal(iso('2030-01-31T10:00Z', CPH), '2030-01-31T10:00:00.000Z');
  assert.equal(iso('2030-01-31 10:00:00.5+02:00', 'UTC'), '2030-01-31T08:00:00.500Z');
  assert.equal(iso('2030-01-31Z', CPH), '2030-01-31T00:00:00.000Z', 'a date with Z is midnight UTC');
  assert.equal(iso('2030-01-31+02:00', 'UTC'), '2030-01-30T22:00:00.000Z');
  assert.equal(iso('2030-01-31T10:00:00+24:00', 'UTC'), null);
  assert.equal(iso('2030-01-31T10:00:00+01:60', 'UTC'), null);
  assert.equal(iso('2030-01-31T10:00:00+1', 'UTC'), null);
});

test('a DST-gap local time moves forward by the gap', () => {
  // Copenhagen springs from 02:00 +01:00 to 03:00 +02:00 on 2024-03-31: 02:30 reads as 03:30 +02:00.
  assert.equal(iso('2024-03-31T02:30', CPH), '2024-03-31T01:30:00.000Z');
  assert.equal(formatDateTime(parseDateTimeInput('2024-03-31T02:30', CPH)!, CPH), '2024-03-31T03:30:00.000+02:00');
  assert.equal(iso('2024-03-31T02:00', CPH), '2024-03-31T01:00:00.000Z');
  assert.equal(iso('2024-03-31T01:59:59', CPH), '2024-03-31T00:59:59.000Z');
  assert.equal(iso('2024-03-31T03:00', CPH), '2024-03-31T01:00:00.000Z');
  assert.equal(iso('2024-03-10T02:30', NY), '2024-03-10T07:30:00.000Z');
});

test('an ambiguous local time takes the earlier offset', () => {
  // Copenhagen falls back from 03:00 +02:00 to 02:00 +01:00 on 2024-10-27: 02:30 happens twice.
  assert.equal(iso('2024-10-27T02:30', CPH), '2024-10-27T00:30:00.000Z');
  assert.equal(iso('2024-10-27T02:00', CPH), '2024-10-27T00:00:00.000Z');
  assert.equal(iso('2024-10-27T01:59', CPH), '2024-10-26T23:59:00.000Z');
  assert.equal(iso('2024-10-27T03:00', CPH), '2024-10-27T02:00:00.000Z');
  assert.equal(iso('2024-11-03T01:30', NY), '2024-11-03T05:30:00.000Z');
  // Lord Howe shifts by 30 minutes.
  assert.equal(iso('2024-04-07T01:45', 'Australia/Lord_Howe'), '2024-04-06T14:45:00.000Z');
});

test('invalid dates, times and garbage are null', () => {
  for (const v of [
    '2024-02-30',
    '2023-02-29',
    '2024-13-01',
    '2024-00-10',
    '2024-01-00',
    '2024-04-31',
    '0000-01-01',
    '2024-01-31T24:00',
    '2024-01-31T23:60',
    '2024-01-31T23:59:60',
    '2024-01-31T10',
    '2024-1-31',
    '24-01-31',
    '2024/01/31',
    '31-01-2024',
    '',
    ' 2024-01-31',
    '2024-01-31 ',
    '2024-01-31X10:00',
    'tomorrow',
    '2024-01-31T10:00:00+01:00Z',
    '2024-01-31T10:00:00 +01:00',
    '１２３４-01-01',
  ]) {
    assert.equal(parseDateTimeInput(v, CPH), null, v);
    assert.equal(parseDateOnlyInput(v, CPH), null, v);
  }
  assert.equal(iso('2024-02-29', 'UTC'), '2024-02-29T00:00:00.000Z', 'leap day');
  assert.equal(iso('2000-02-29', 'UTC'), '2000-02-29T00:00:00.000Z');
  assert.equal(iso('1900-02-29', 'UTC'), null);
  assert.equal(iso('2024-01-31t10:00z', 'UTC'), '2024-01-31T10:00:00.000Z', 'lower-case t and z are ISO 8601 too');
});

test('parseDateOnlyInput: a date as written, a date-time as its day in the zone', () => {
  assert.equal(parseDateOnlyInput('2024-01-31', CPH), '2024-01-31');
  assert.equal(parseDateOnlyInput('2024-01-31', 'Pacific/Kiritimati'), '2024-01-31');
  assert.equal(parseDateOnlyInput('2024-01-31T23:30:00Z', CPH), '2024-02-01');
  assert.equal(parseDateOnlyInput('2024-01-31T23:30:00Z', 'UTC'), '2024-01-31');
  assert.equal(parseDateOnlyInput('2024-01-31T00:30:00+01:00', NY), '2024-01-30');
  assert.equal(parseDateOnlyInput('2024-01-31T10:00:00', NY), '2024-01-31');
  assert.equal(parseDateOnlyInput('2024-01-31T10:00:00.1234567+01:00', CPH), '2024-01-31');
});

test('formatDateTime: wall clock with ms and a numeric offset, never Z', () => {
  const d = new Date('2024-05-02T07:30:00.000Z');
  assert.equal(formatDateTime(d, CPH), '2024-05-02T09:30:00.000+02:00');
  assert.equal(formatDateTime(d, 'UTC'), '2024-05-02T07:30:00.000+00:00');
  assert.equal(formatDateTime(d, 'Etc/UTC'), '2024-05-02T07:30:00.000+00:00');
  assert.equal(formatDateTime(d, NY), '2024-05-02T03:30:00.000-04:00');
  assert.equal(formatDateTime(d, 'America/St_Johns'), '2024-05-02T05:00:00.000-02:30');
  assert.equal(formatDateTime(d, 'Asia/Kathmandu'), '2024-05-02T13:15:00.000+05:45');
  assert.equal(formatDateTime(new Date('2024-01-15T12:00:00.007Z'), CPH), '2024-01-15T13:00:00.007+01:00');
  assert.equal(formatDateTime(new Date('2023-12-31T23:59:59.999Z'), CPH), '2024-01-01T00:59:59.999+01:00');
  // Both sides of the fall-back hour.
  assert.equal(formatDateTime(new Date('2024-10-27T00:30:00Z'), CPH), '2024-10-27T02:30:00.000+02:00');
  assert.equal(formatDateTime(new Date('2024-10-27T01:30:00Z'), CPH), '2024-10-27T02:30:00.000+01:00');
});

test('round trip: parse(format(d)) is d, around transitions too', () => {
  for (const tz of [CPH, NY, 'UTC', 'Australia/Lord_Howe', 'Asia/Kathmandu', 'Pacific/Apia']) {
    for (let t = Date.parse('2024-03-01T00:00:00Z'); t < Date.parse('2024-12-01T00:00:00Z'); t += 3 * 3600_000 + 17 * 60_000 + 123) {
      const d = new Date(t);
      const s = formatDateTime(d, tz);
      assert.equal(parseDateTimeInput(s, tz)?.getTime(), t, `${tz} ${s}`);
    }
  }
});

test('localDate, formatDate and localWeekday follow the zone', () => {
  const d = new Date('2024-01-31T23:30:00Z'); // Wednesday in UTC, Thursday 1 Feb in Copenhagen
  assert.equal(localDate(d, 'UTC'), '2024-01-31');
  assert.equal(localDate(d, CPH), '2024-02-01');
  assert.equal(formatDate(d, CPH), '2024-02-01');
  assert.equal(localWeekday(d, 'UTC'), 3);
  assert.equal(localWeekday(d, CPH), 4);
  assert.equal(localWeekday(new Date('2024-02-04T12:00:00Z'), CPH), 0, 'Sunday');
  assert.equal(localWeekday(new Date('2024-02-03T12:00:00Z'), CPH), 6, 'Saturday');
  assert.equal(localDate(new Date('2024-01-31T03:00:00Z'), NY), '2024-01-30');
});

test('time zone names: valid ones accepted, unknown ones refused', () => {
  assert.equal(isValidTimeZone('Europe/Copenhagen'), true);
  assert.equal(isValidTimeZone('UTC'), true);
  assert.equal(isValidTimeZone('Mars/Olympus'), false);
  assert.throws(() => parseDateTimeInput('2024-01-31', 'Mars/Olympus'), RangeError);
  assert.equal(timeZoneOffsetMs(new Date('2024-07-01T00:00:00Z'), CPH), 2 * 3600_000);
  assert.equal(timeZoneOffsetMs(new Date('2024-01-01T00:00:00Z'), CPH), 3600_000);
});

test('the offset flips exactly at the transition instant, inside a cached transition day', () => {
  // Hours of 2024-03-31 in Copenhagen, the transition at 01:00Z; the day is marked and computed exactly.
  const expected = ['+01:00', '+02:00', '+02:00'];
  ['2024-03-31T00:59:59Z', '2024-03-31T01:00:00Z', '2024-03-31T23:00:00Z'].forEach((s, i) => {
    assert.ok(formatDateTime(new Date(s), CPH).endsWith(expected[i]), s);
  });
});
