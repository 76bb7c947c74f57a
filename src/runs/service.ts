/** Runs, Failure reports and rules as Mates see them (product §7). */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import type { ProcessDef } from '../processes/store.js';
import { loadRules, clearFailuresWrite } from '../processes/store.js';
import { forgetProcesses } from '../processes/cache.js';
import type { ErrorCode } from '../lib/errors.js';
import { computeKpi, kpiEventsWrite, type KpiOverrides } from '../kpis/rules.js';
import { executeWrites } from '../db/bulk.js';
import { openOrResumeRun, lockRun, finishRun as closeRun } from './store.js';
import { clearFailureIn, type MateCall } from '../tasks/service.js';

/** StartRun / StartOrGetRun: opens or resumes the single open run, whatever the gate. */
export async function startOrGetRun(db: Kysely<Database>, call: MateCall, proc: ProcessDef): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const runId = await openOrResumeRun(trx, call.tenantId, proc.id, [call.mateId], call.now, proc.runTimeoutSeconds);
    await clearFailureIn(trx, proc);
    return runId;
  });
}

export type FinishRunResult = { ok: true; message: string } | { ok: false; code: ErrorCode; message: string };

/**
 * FinishRun: closes the run; locks are untouched. A process without tasks logs the run's KPI
 * event (product §6); with tasks the overrides are ignored.
 */
export async function finishRun(db: Kysely<Database>, call: MateCall, runId: number, overrides: KpiOverrides): Promise<FinishRunResult> {
  if (runId <= 0 || !Number.isSafeInteger(runId)) return { ok: false, code: 'run_not_found', message: `Run ${runId} was not found` };
  return db.transaction().execute(async (trx) => {
    const run = await lockRun(trx, call.tenantId, runId);
    if (!run) return { ok: false, code: 'run_not_found', message: `Run ${runId} was not found` };
    if (run.finished_at) return { ok: false, code: 'run_finished', message: `Run ${runId} is already finished` };
    const { rows } = await sql<{ tasks_enabled: boolean; kpi: any; failure_at: Date | null }>`SELECT tasks_enabled, kpi, failure_at FROM processes
      WHERE tenant_id = ${call.tenantId} AND id = ${run.process_id}`.execute(trx);
    const p = rows[0];
    await closeRun(trx, call.tenantId, runId, call.now);
    let message = `Run ${runId} finished`;
    if (!p.tasks_enabled) {
      const { entries, secondsSaved } = computeKpi(p.kpi, 'Run', overrides);
      await executeWrites(trx, [kpiEventsWrite([{ tenantId: call.tenantId, processId: run.process_id, taskId: null, runId, mateId: call.mateId, at: call.now, outcome: 'Run', entries, secondsSaved }])]);
      message += `; ${entries} entries and ${secondsSaved} seconds saved logged`;
    } else if (overrides.overwriteEntries !== null || overrides.overwriteSecondsSaved !== null) {
      message += '; the KPI overrides were ignored because the process has tasks (their KPIs are logged per task)';
    }
    if (p.failure_at) await executeWrites(trx, [clearFailuresWrite(call.tenantId, [run.process_id])]);
    return { ok: true, message };
  });
}

/** Failure: sets the process's Failure state and keeps a notification; the run stays open. */
export async function reportFailure(db: Kysely<Database>, call: MateCall, proc: ProcessDef, message: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await sql`UPDATE processes SET failure_message = ${message}, failure_at = ${call.now} WHERE tenant_id = ${call.tenantId} AND id = ${proc.id}`.execute(trx);
    await sql`INSERT INTO notifications (tenant_id, process_id, kind, message, mate_id, created_at)
      VALUES (${call.tenantId}, ${proc.id}, 'failure', ${message}, ${call.mateId}, ${call.now})`.execute(trx);
  });
  forgetProcesses(db, call.tenantId);
}

/** GetRules: `{processKey, <name>: <typed value>, …}`; unset values are null. */
export async function getRules(db: Kysely<Database>, proc: ProcessDef): Promise<Record<string, unknown>> {
  const rules = await loadRules(db, proc.tenantId, proc.id);
  const out: Record<string, unknown> = { processKey: proc.processKey };
  for (const r of rules) {
    let v = r.value ?? null;
    if (v !== null) {
      if (r.type === 'number') v = typeof v === 'number' ? v : Number(v);
      else if (r.type === 'boolean') v = v === true || v === 'true';
      else if (r.type === 'list') v = Array.isArray(v) ? v.map((x) => String(x)) : [];
      else if (r.type === 'table') v = Array.isArray(v) ? v.filter((x) => typeof x === 'object' && x !== null) : [];
      else v = String(v);
    }
    Object.defineProperty(out, r.name, { value: v, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

const lastContactWritten = new Map<number, number>();
// A Mate's last contact is written at most every 10 s: Mates call many times a second, and the
// time is shown to people at that resolution.
const CONTACT_WRITE_INTERVAL_MS = 10_000;

export async function touchMate(db: Kysely<Database>, call: MateCall): Promise<void> {
  const last = lastContactWritten.get(call.mateId);
  const t = call.now.getTime();
  if (last !== undefined && t - last < CONTACT_WRITE_INTERVAL_MS && t >= last) return;
  lastContactWritten.set(call.mateId, t);
  await db.updateTable('mates').set({ last_contact_at: call.now }).where('tenant_id', '=', call.tenantId).where('id', '=', call.mateId).execute();
}
