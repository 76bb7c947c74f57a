/** Runs as Mates see them (docs/product.md §7, docs/mate-api.md §7.2–7.3). */
import { sql } from 'kysely';
import type { Tx } from '../db/tx.js';
import type { KpiSettings } from '../db/types.js';
import { Refusal } from '../lib/errors.js';
import { callerMateId, type Caller } from '../lib/caller.js';
import { computeKpi, insertRunKpiEvent, type KpiOverrides } from '../kpis/rules.js';
import { clearFailure, type ProcessDef } from '../processes/store.js';
import { openOrResumeRun, lockRun, finishRun as closeRun } from './store.js';

/** StartRun / StartOrGetRun: opens or resumes the single open run, whatever the gate. */
export async function startOrGetRun(tx: Tx, caller: Caller, proc: ProcessDef): Promise<number> {
  const runId = await openOrResumeRun(tx.db, caller.tenantId, proc.id, [callerMateId(caller)!], caller.now, proc.runTimeoutSeconds);
  await clearFailure(tx, caller.tenantId, proc.id);
  return runId;
}

/**
 * FinishRun: closes the run; locks are untouched. A process without tasks logs the run's KPI
 * event (docs/product.md §6); with tasks the overrides are ignored. Returns the answer's message.
 */
export async function finishRun(tx: Tx, caller: Caller, runId: number, overrides: KpiOverrides): Promise<string> {
  const notFound = () => new Refusal('run_not_found', `Run ${runId} was not found`);
  if (runId <= 0 || !Number.isSafeInteger(runId)) throw notFound();
  const run = await lockRun(tx.db, caller.tenantId, runId);
  if (!run) throw notFound();
  if (run.finished_at) throw new Refusal('run_finished', `Run ${runId} is already finished`);
  const { rows } = await sql<{ tasks_enabled: boolean; kpi: KpiSettings }>`SELECT tasks_enabled, kpi FROM processes
      WHERE tenant_id = ${caller.tenantId} AND id = ${run.process_id}`.execute(tx.db);
  const p = rows[0];
  await closeRun(tx.db, caller.tenantId, runId, caller.now);
  let message = `Run ${runId} finished`;
  if (!p.tasks_enabled) {
    const { entries, secondsSaved } = computeKpi(p.kpi, 'Run', overrides);
    await insertRunKpiEvent(tx.db, {
      tenantId: caller.tenantId,
      processId: run.process_id,
      runId,
      mateId: callerMateId(caller),
      at: caller.now,
      entries,
      secondsSaved,
    });
    message += `; ${entries} entries and ${secondsSaved} seconds saved logged`;
  } else if (overrides.overwriteEntries !== null || overrides.overwriteSecondsSaved !== null) {
    message += '; the KPI overrides were ignored because the process has tasks (their KPIs are logged per task)';
  }
  await clearFailure(tx, caller.tenantId, run.process_id);
  return message;
}
