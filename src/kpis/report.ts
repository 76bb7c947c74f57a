/**
 * KPI reports for people (docs/product.md §6): time saved and tasks by outcome, per process or for
 * the tenant, by day, week (starting Monday) or month, over a date range, in the tenant's time zone.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import { Refusal } from '../lib/errors.js';
import { parseDateTimeInput } from '../lib/time.js';

export type KpiPeriod = 'day' | 'week' | 'month';
/** The longest range one report covers: ten years of days is 3,650 rows per process and outcome at most. */
const MAX_RANGE_DAYS = 3660;

export interface KpiRow {
  /** the first day of the period, YYYY-MM-DD in the tenant's time zone */
  period: string;
  /** null in a tenant-wide report */
  processId: number | null;
  outcome: string;
  events: number;
  entries: number;
  secondsSaved: number;
}

export async function kpiReport(
  db: Kysely<Database>,
  tenantId: number,
  timeZone: string,
  q: { from: string; to: string; by: KpiPeriod; processId?: number; perProcess: boolean },
): Promise<KpiRow[]> {
  const { from, end } = kpiRange(q.from, q.to, timeZone);
  const proc = q.perProcess ? sql`k.process_id` : sql`NULL::bigint`;
  const { rows } = await sql<{
    period: string;
    process_id: number | null;
    outcome: string;
    events: number;
    entries: number;
    seconds_saved: number;
  }>`
    SELECT to_char(date_trunc(${q.by}, k.at AT TIME ZONE ${timeZone}), 'YYYY-MM-DD') AS period, ${proc} AS process_id, k.outcome,
      count(*) AS events, sum(k.entries) AS entries, sum(k.seconds_saved) AS seconds_saved
    FROM kpi_events k
    WHERE k.tenant_id = ${tenantId} AND k.at >= ${from} AND k.at < ${end}
      ${q.processId !== undefined ? sql`AND k.process_id = ${q.processId}` : sql``}
    GROUP BY 1, 2, 3
    ORDER BY 1, 2, 3`.execute(db);
  return rows.map((r) => ({
    period: r.period,
    processId: r.process_id === null ? null : Number(r.process_id),
    outcome: r.outcome,
    events: Number(r.events),
    entries: Number(r.entries),
    secondsSaved: Number(r.seconds_saved),
  }));
}

/** The instants of a range of local dates, `to` included (it ends at the next local midnight). */
export function kpiRange(fromDate: string, toDate: string, timeZone: string): { from: Date; end: Date } {
  const q = { from: fromDate, to: toDate };
  const parsedFrom = parseDateTimeInput(q.from, timeZone);
  const toStart = parseDateTimeInput(q.to, timeZone);
  const problems = [];
  if (!parsedFrom || !/^\d{4}-\d{2}-\d{2}$/.test(q.from))
    problems.push({ field: 'from', code: 'invalid_field' as const, message: 'from must be a date YYYY-MM-DD' });
  if (!toStart || !/^\d{4}-\d{2}-\d{2}$/.test(q.to))
    problems.push({ field: 'to', code: 'invalid_field' as const, message: 'to must be a date YYYY-MM-DD' });
  if (problems.length) throw new Refusal('invalid_field', problems[0].message, problems);
  const from = parsedFrom!;
  // `to` is included: the range ends at the next local midnight
  const end = parseDateTimeInput(new Date(Date.parse(`${q.to}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10), timeZone)!;
  if (end.getTime() <= from.getTime())
    throw new Refusal('invalid_field', 'to must not be before from', [
      { field: 'to', code: 'invalid_field', message: 'to must not be before from' },
    ]);
  if (end.getTime() - from.getTime() > MAX_RANGE_DAYS * 86_400_000) {
    throw new Refusal('invalid_field', `The range may span at most ${MAX_RANGE_DAYS} days`, [
      { field: 'to', code: 'invalid_field', message: `The range may span at most ${MAX_RANGE_DAYS} days` },
    ]);
  }
  return { from, end };
}
