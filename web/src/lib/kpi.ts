/**
 * The KPI dashboard's numbers (GET /v1/kpis, docs/product.md §6): date ranges in the tenant's time
 * zone, the periods of a range (weeks start on Monday, as the server's date_trunc does), and the
 * server's rows pivoted into one row per period for the charts and the table.
 */
import dayjs from 'dayjs';
import utc from 'dayjs/plugin/utc';
import timezone from 'dayjs/plugin/timezone';
import type { KpiItem, KpiPeriod } from './api-types';

dayjs.extend(utc);
dayjs.extend(timezone);

/** day, week or month: the API's `by` */
export type Period = KpiPeriod;
/** The outcomes a KPI event has, in the order of the charts and the table (the API types the outcome as a string). */
export const OUTCOMES = ['Solved', 'Manual', 'Error', 'Retry', 'Run'] as const;
export type Outcome = (typeof OUTCOMES)[number];

export type KpiPoint = { period: string; hoursSaved: number; secondsSaved: number; tasks: number } & Record<Outcome, number>;

/** Today's date (YYYY-MM-DD) in the zone; UTC when the zone is unknown. */
export function today(timeZone: string, now: Date = new Date()): string {
  try {
    return dayjs(now).tz(timeZone).format('YYYY-MM-DD');
  } catch {
    return dayjs(now).utc().format('YYYY-MM-DD');
  }
}

/** The last `days` days up to and including today. */
export function lastDays(days: number, timeZone: string, now: Date = new Date()): { from: string; to: string } {
  const to = today(timeZone, now);
  return {
    from: dayjs(to)
      .subtract(days - 1, 'day')
      .format('YYYY-MM-DD'),
    to,
  };
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;
export function isDate(s: unknown): s is string {
  return typeof s === 'string' && DATE.test(s) && dayjs(s).isValid() && dayjs(s).format('YYYY-MM-DD') === s;
}

/** The first day of the period holding `date` (a Monday for weeks). */
export function periodStart(date: string, by: Period): string {
  const d = dayjs(date);
  if (by === 'day') return d.format('YYYY-MM-DD');
  if (by === 'month') return d.startOf('month').format('YYYY-MM-DD');
  const back = (d.day() + 6) % 7; // days since Monday
  return d.subtract(back, 'day').format('YYYY-MM-DD');
}

/** Every period from the one holding `from` to the one holding `to` (at most `max`, the latest kept). */
export function periods(from: string, to: string, by: Period, max = 4000): string[] {
  const out: string[] = [];
  let p = dayjs(periodStart(from, by));
  const end = dayjs(periodStart(to, by));
  while (!p.isAfter(end)) {
    out.push(p.format('YYYY-MM-DD'));
    p = p.add(1, by);
  }
  return out.length > max ? out.slice(out.length - max) : out;
}

/** One point per period (zeros where nothing happened): tasks by outcome, tasks in all, time saved. */
export function pivot(items: KpiItem[], from: string, to: string, by: Period): KpiPoint[] {
  const zero = (period: string): KpiPoint => ({
    period,
    hoursSaved: 0,
    secondsSaved: 0,
    tasks: 0,
    Solved: 0,
    Manual: 0,
    Error: 0,
    Retry: 0,
    Run: 0,
  });
  const map = new Map(periods(from, to, by).map((p) => [p, zero(p)]));
  for (const it of items) {
    const point = map.get(it.period) ?? map.set(it.period, zero(it.period)).get(it.period)!;
    if ((OUTCOMES as readonly string[]).includes(it.outcome)) point[it.outcome as Outcome] += it.events;
    if (it.outcome !== 'Run') point.tasks += it.events;
    point.secondsSaved += it.secondsSaved;
  }
  const out = [...map.values()].sort((a, b) => a.period.localeCompare(b.period));
  for (const p of out) p.hoursSaved = Math.round((p.secondsSaved / 3600) * 100) / 100;
  return out;
}

/** Totals of the points. */
export function totals(points: KpiPoint[]): { tasks: number; secondsSaved: number } & Record<Outcome, number> {
  const t = { tasks: 0, secondsSaved: 0, Solved: 0, Manual: 0, Error: 0, Retry: 0, Run: 0 };
  for (const p of points) {
    t.tasks += p.tasks;
    t.secondsSaved += p.secondsSaved;
    for (const o of OUTCOMES) t[o] += p[o];
  }
  return t;
}

/** A period as a label: "25 Nov 2026", "Week of 23 Nov 2026", "Nov 2026". */
export function periodLabel(period: string, by: Period): string {
  const d = dayjs(period);
  if (by === 'month') return d.format('MMM YYYY');
  if (by === 'week') return `Week of ${d.format('D MMM YYYY')}`;
  return d.format('D MMM YYYY');
}

/** The address of the KPI events CSV for the range (and process). */
export function exportHref(from: string, to: string, processId?: number): string {
  const q = new URLSearchParams({ from, to });
  if (processId !== undefined) q.set('processId', String(processId));
  return `/v1/kpis/export?${q.toString()}`;
}

export interface KpiSearch {
  from?: string;
  to?: string;
  by?: Period;
  process?: number;
}

/** The dashboard's URL (`?from=2026-11-01&to=2026-11-30&by=week&process=3`); bad values are dropped. */
export function parseKpiSearch(raw: Record<string, unknown>): KpiSearch {
  const out: KpiSearch = {};
  if (isDate(raw.from)) out.from = raw.from;
  if (isDate(raw.to)) out.to = raw.to;
  if (out.from && out.to && out.from > out.to) [out.from, out.to] = [out.to, out.from];
  if (raw.by === 'day' || raw.by === 'week' || raw.by === 'month') out.by = raw.by;
  const p = Number(raw.process);
  if (typeof raw.process !== 'undefined' && Number.isInteger(p) && p > 0) out.process = p;
  return out;
}
