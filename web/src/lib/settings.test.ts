import { describe, expect, it } from 'vitest';
import { changedKeys, normaliseDates, parseSettingsSearch } from './settings';

describe('changedKeys()', () => {
  it('only the keys whose values differ, nested objects compared by value', () => {
    const before = { a: 1, b: 'x', cal: { blockedDates: ['2026-12-24'], blockedWeekdays: [0] }, n: null as number | null };
    const after = { a: 1, b: 'y', cal: { blockedDates: ['2026-12-24'], blockedWeekdays: [0] }, n: 5 };
    expect(changedKeys(before, after)).toEqual({ b: 'y', n: 5 });
    expect(changedKeys(before, { ...before, cal: { blockedDates: [], blockedWeekdays: [0] } })).toEqual({
      cal: { blockedDates: [], blockedWeekdays: [0] },
    });
  });
});

describe('normaliseDates()', () => {
  it('sorted, once each, dates only', () => {
    expect(normaliseDates(['2026-12-31', '2026-12-24', '2026-12-24', '2027-01-01 00:00:00'])).toEqual([
      '2026-12-24',
      '2026-12-31',
      '2027-01-01',
    ]);
  });
});

describe('parseSettingsSearch()', () => {
  it('keeps a known tab other than the first', () => {
    expect(parseSettingsSearch({ tab: 'rules' })).toEqual({ tab: 'rules' });
    expect(parseSettingsSearch({ tab: 'settings' })).toEqual({});
    expect(parseSettingsSearch({ tab: 'secrets' })).toEqual({});
  });
});
