/** Is a process open for Mates now? (docs/product.md §2 gate and calendar, docs/product.md §5.4 Stop on Errors) */
import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import type { ProcessDef } from '../processes/store.js';
import { localDate, localWeekday } from '../lib/time.js';
import { countUnresolvedErrors, hasTakeableTask } from './store.js';

export type DummyReason = 'tasks_disabled' | 'gate_closed' | 'blocked_date' | 'stopped_by_errors' | 'queue_empty';

export function isBlockedDay(proc: ProcessDef, now: Date, timeZone: string): boolean {
  const day = localDate(now, timeZone);
  return proc.calendar.blockedDates.includes(day) || proc.calendar.blockedWeekdays.includes(localWeekday(now, timeZone));
}

export async function isStoppedByErrors(db: Kysely<Database>, proc: ProcessDef): Promise<{ stopped: boolean; errors: number }> {
  if (!proc.stopOnErrors) return { stopped: false, errors: 0 };
  const errors = await countUnresolvedErrors(db, proc.tenantId, proc.id);
  return { stopped: errors > proc.errorLimit, errors };
}

/** The first reason, in the precedence of docs/mate-api.md §5, why Mates get nothing; null when open. */
export async function closedReason(
  db: Kysely<Database>,
  proc: ProcessDef,
  now: Date,
  timeZone: string,
): Promise<{ code: DummyReason; message: string } | null> {
  if (!proc.tasksEnabled) return { code: 'tasks_disabled', message: `Process ${proc.processKey} has no tasks` };
  if (!proc.gateOpen) return { code: 'gate_closed', message: `Process ${proc.processKey} is stopped` };
  if (isBlockedDay(proc, now, timeZone)) return { code: 'blocked_date', message: `Today is a blocked date for process ${proc.processKey}` };
  const { stopped, errors } = await isStoppedByErrors(db, proc);
  if (stopped)
    return {
      code: 'stopped_by_errors',
      message: `Process ${proc.processKey} is stopped by errors: ${errors} unresolved errors, limit ${proc.errorLimit}`,
    };
  return null;
}

export interface OkToRunAnswer {
  gateOpen: boolean;
  notBlockedDate: boolean;
  stoppedByErrors: boolean;
  tasksAvailable: boolean;
  okToRun: boolean;
}

export async function okToRun(db: Kysely<Database>, proc: ProcessDef, now: Date, timeZone: string): Promise<OkToRunAnswer> {
  const gateOpen = proc.gateOpen;
  const notBlockedDate = !isBlockedDay(proc, now, timeZone);
  const { stopped } = await isStoppedByErrors(db, proc);
  const tasksAvailable = proc.tasksEnabled && (await hasTakeableTask(db, proc.tenantId, proc.id, now));
  return {
    gateOpen,
    notBlockedDate,
    stoppedByErrors: stopped,
    tasksAvailable,
    okToRun: gateOpen && notBlockedDate && !stopped && (tasksAvailable || !proc.tasksEnabled),
  };
}
