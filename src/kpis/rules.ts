/** The four KPI rules of docs/product.md §6: entries and seconds saved logged for a hand-back or a run. */
import type { KpiSettings } from '../db/types.js';
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../db/types.js';

export type KpiOutcomeName = 'Solved' | 'Manual' | 'Error' | 'Retry' | 'Run';

export interface KpiOverrides {
  overwriteEntries: number | null;
  overwriteSecondsSaved: number | null;
}

/** Seconds of one task for the outcome when nothing is overridden. */
function perTaskSeconds(kpi: KpiSettings, outcome: KpiOutcomeName): number {
  switch (outcome) {
    case 'Manual':
      return kpi.secondsSavedManual ?? 0;
    case 'Error':
      return kpi.secondsSavedError ?? 0;
    case 'Retry':
      return kpi.secondsSavedRetry ?? 0;
    default:
      return kpi.secondsSavedPerTask ?? 0;
  }
}

export function computeKpi(kpi: KpiSettings, outcome: KpiOutcomeName, o: KpiOverrides): { entries: number; secondsSaved: number } {
  // rule 4: the number of entries is always logged, given or the default
  const entries = o.overwriteEntries ?? kpi.entriesPerTask ?? 1;
  // rule 3: an explicit seconds value wins
  if (o.overwriteSecondsSaved !== null) return { entries, secondsSaved: o.overwriteSecondsSaved };
  const perEntry = kpi.secondsSavedPerEntry;
  // rule 2: entries given, seconds not: entries × seconds per entry, else the outcome's per-task seconds
  if (o.overwriteEntries !== null) {
    return { entries, secondsSaved: perEntry !== null && perEntry !== undefined ? entries * perEntry : perTaskSeconds(kpi, outcome) };
  }
  // rule 1: defaults. Solved (and a run) use per-entry seconds when set; the other outcomes their own setting.
  if ((outcome === 'Solved' || outcome === 'Run') && perEntry !== null && perEntry !== undefined) {
    return { entries, secondsSaved: entries * perEntry };
  }
  return { entries, secondsSaved: perTaskSeconds(kpi, outcome) };
}

/** A KPI event row for each change in `source` (the task funnel's change relation) that logs one. */
export function kpiEventsFromChanges(source: string): RawBuilder<unknown> {
  const s = sql.raw(source);
  return sql`INSERT INTO kpi_events (tenant_id, process_id, task_id, run_id, mate_id, at, outcome, entries, seconds_saved)
    SELECT tenant_id, process_id, task_id, run_id, mate_id, at, kpi_outcome, kpi_entries, kpi_seconds FROM ${s} WHERE kpi_outcome IS NOT NULL`;
}

/** The KPI event of a run of a process without tasks (FinishRun, docs/product.md §6). */
export async function insertRunKpiEvent(
  db: Kysely<Database>,
  e: { tenantId: number; processId: number; runId: number; mateId: number | null; at: Date; entries: number; secondsSaved: number },
): Promise<void> {
  await db
    .insertInto('kpi_events')
    .values({
      tenant_id: e.tenantId,
      process_id: e.processId,
      task_id: null,
      run_id: e.runId,
      mate_id: e.mateId,
      at: e.at,
      outcome: 'Run',
      entries: e.entries,
      seconds_saved: e.secondsSaved,
    })
    .execute();
}
