import { describe, expect, it } from 'vitest';
import { formatDateTime, formatDate, formatRelative, formatWhen, formatDuration, zoneLabel } from './time';

describe('time formatting in the tenant time zone', () => {
  it('shows the wall-clock time of the zone, across daylight saving', () => {
    expect(formatDateTime('2026-11-25T13:03:00Z', 'Europe/Copenhagen')).toBe('25 Nov 2026, 14:03');
    expect(formatDateTime('2026-07-01T13:03:00Z', 'Europe/Copenhagen')).toBe('1 Jul 2026, 15:03');
    expect(formatDateTime('2026-11-25T13:03:00Z', 'America/New_York')).toBe('25 Nov 2026, 08:03');
    expect(formatDate('2026-11-25T23:30:00Z', 'Asia/Tokyo')).toBe('26 Nov 2026');
  });
  it('answers a dash for a missing or invalid date and falls back to UTC for an unknown zone', () => {
    expect(formatDateTime(null, 'UTC')).toBe('—');
    expect(formatDateTime('not a date', 'UTC')).toBe('—');
    expect(formatDateTime('2026-11-25T13:03:00Z', 'Mars/Olympus')).toBe('25 Nov 2026, 13:03 UTC');
  });
  it('relative times', () => {
    const now = new Date('2026-11-25T12:00:00Z');
    expect(formatRelative('2026-11-25T11:59:50Z', now)).toBe('just now');
    expect(formatRelative('2026-11-25T11:57:00Z', now)).toBe('3 minutes ago');
    expect(formatRelative('2026-11-25T14:00:00Z', now)).toBe('in 2 hours');
    expect(formatRelative(null, now)).toBe('never');
    expect(formatWhen('2026-11-25T11:00:00Z', 'UTC', now)).toBe('25 Nov 2026, 11:00 (an hour ago)');
  });
  it('durations and zone labels', () => {
    expect(formatDuration(12)).toBe('12 s');
    expect(formatDuration(250)).toBe('4 min 10 s');
    expect(formatDuration(3900)).toBe('1 h 05 min');
    expect(zoneLabel('Europe/Copenhagen', new Date('2026-01-10T00:00:00Z'))).toBe('Europe/Copenhagen (UTC+01:00)');
  });
});
