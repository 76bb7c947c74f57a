/** The four KPI rules of product §6: entries and seconds saved logged for a hand-back or a run. */
import type { KpiSettings } from '../db/types.js';
import { insertRowsWrite, type Column, type Write } from '../db/bulk.js';

export type KpiOutcomeName = 'Solved' | 'Manual' | 'Error' | 'Retry' | 'Run';

export interface KpiOverrides {
  overwriteEntries: number | null;
  overwriteSecondsSaved: number | null;
}

/** Seconds of one task for the outcome when nothing is overridden. */
function perTaskSeconds(kpi: KpiSettings, outcome: KpiOutcomeName): number {
  switch (outcome) {
    case 'Manual': return kpi.secondsSavedManual ?? 0;
    case 'Error': return kpi.secondsSavedError ?? 0;
    case 'Retry': return kpi.secondsSavedRetry ?? 0;
    default: return kpi.secondsSavedPerTask ?? 0;
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

export interface KpiEventRow {
  tenantId: number;
  processId: number;
  taskId: number | null;
  runId: number | null;
  mateId: number | null;
  at: Date;
  outcome: KpiOutcomeName;
  entries: number;
  secondsSaved: number;
}

const COLUMNS: Column[] = [
  ['tenant_id', 'bigint'], ['process_id', 'bigint'], ['task_id', 'bigint'], ['run_id', 'bigint'], ['mate_id', 'bigint'],
  ['at', 'timestamptz'], ['outcome', 'text'], ['entries', 'integer'], ['seconds_saved', 'bigint'],
];

export function kpiEventsWrite(rows: KpiEventRow[]): Write | null {
  return insertRowsWrite('kpi_events', COLUMNS, rows.map((r) => [r.tenantId, r.processId, r.taskId, r.runId, r.mateId, r.at, r.outcome, r.entries, r.secondsSaved]));
}
