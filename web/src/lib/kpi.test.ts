import { describe, expect, it } from 'vitest';
import { exportHref, isDate, lastDays, parseKpiSearch, periodLabel, periods, periodStart, pivot, today, totals } from './kpi';

describe('dates in the tenant zone', () => {
  it("today is the zone's date, not the machine's", () => {
    const late = new Date('2026-11-25T23:30:00Z');
    expect(today('Europe/Copenhagen', late)).toBe('2026-11-26');
    expect(today('America/New_York', late)).toBe('2026-11-25');
    expect(today('Not/AZone', late)).toBe('2026-11-25');
  });
  it('the last 30 days include today', () => {
    expect(lastDays(30, 'UTC', new Date('2026-03-10T12:00:00Z'))).toEqual({ from: '2026-02-09', to: '2026-03-10' });
  });
  it('isDate accepts real dates only', () => {
    expect(isDate('2026-02-28')).toBe(true);
    expect(isDate('2026-02-30')).toBe(false);
    expect(isDate('26-2-1')).toBe(false);
    expect(isDate(undefined)).toBe(false);
  });
});

describe('periods', () => {
  it('weeks start on Monday, months on the 1st', () => {
    expect(periodStart('2026-11-29', 'week')).toBe('2026-11-23'); // a Sunday
    expect(periodStart('2026-11-23', 'week')).toBe('2026-11-23'); // a Monday
    expect(periodStart('2026-11-25', 'month')).toBe('2026-11-01');
    expect(periodStart('2026-11-25', 'day')).toBe('2026-11-25');
  });
  it('every period of a range, ends included', () => {
    expect(periods('2026-01-30', '2026-02-02', 'day')).toEqual(['2026-01-30', '2026-01-31', '2026-02-01', '2026-02-02']);
    expect(periods('2026-11-01', '2026-11-17', 'week')).toEqual(['2026-10-26', '2026-11-02', '2026-11-09', '2026-11-16']);
    expect(periods('2025-12-15', '2026-02-01', 'month')).toEqual(['2025-12-01', '2026-01-01', '2026-02-01']);
    expect(periods('2026-01-01', '2026-12-31', 'day', 10)).toHaveLength(10);
  });
  it('labels', () => {
    expect(periodLabel('2026-11-23', 'week')).toBe('Week of 23 Nov 2026');
    expect(periodLabel('2026-11-01', 'month')).toBe('Nov 2026');
    expect(periodLabel('2026-11-05', 'day')).toBe('5 Nov 2026');
  });
});

describe('pivot()', () => {
  it('one point per period with zeros, outcomes summed, runs not counted as tasks', () => {
    const points = pivot(
      [
        { period: '2026-11-02', processId: 1, outcome: 'Solved', events: 3, entries: 3, secondsSaved: 3600 },
        { period: '2026-11-02', processId: 2, outcome: 'Solved', events: 1, entries: 1, secondsSaved: 1800 },
        { period: '2026-11-02', processId: 1, outcome: 'Error', events: 2, entries: 2, secondsSaved: 0 },
        { period: '2026-11-04', processId: 1, outcome: 'Run', events: 1, entries: 1, secondsSaved: 60 },
      ],
      '2026-11-02',
      '2026-11-04',
      'day',
    );
    expect(points.map((p) => p.period)).toEqual(['2026-11-02', '2026-11-03', '2026-11-04']);
    expect(points[0]).toMatchObject({ Solved: 4, Error: 2, tasks: 6, secondsSaved: 5400, hoursSaved: 1.5 });
    expect(points[1]).toMatchObject({ Solved: 0, tasks: 0, secondsSaved: 0 });
    expect(points[2]).toMatchObject({ Run: 1, tasks: 0, secondsSaved: 60 });
    expect(totals(points)).toMatchObject({ tasks: 6, Solved: 4, Error: 2, Run: 1, secondsSaved: 5460 });
  });
});

describe('exportHref()', () => {
  it('the range and the process', () => {
    expect(exportHref('2026-01-01', '2026-01-31', 3)).toBe('/v1/kpis/export?from=2026-01-01&to=2026-01-31&processId=3');
    expect(exportHref('2026-01-01', '2026-01-31')).toBe('/v1/kpis/export?from=2026-01-01&to=2026-01-31');
  });
});

describe('parseKpiSearch()', () => {
  it('keeps valid keys, swaps a reversed range, drops the rest', () => {
    expect(parseKpiSearch({ from: '2026-11-30', to: '2026-11-01', by: 'week', process: '3' })).toEqual({
      from: '2026-11-01',
      to: '2026-11-30',
      by: 'week',
      process: 3,
    });
    expect(parseKpiSearch({ from: 'yesterday', by: 'year', process: '-1' })).toEqual({});
  });
});
