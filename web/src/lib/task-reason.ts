/**
 * The reason of a task as a person reads it. The task keeps the latest reason given (a Mate's
 * hand-back, the sweeper's "Lock expired"), also after a person moved it on, and a Mate taking it
 * again is told it; so the page tells a reason that still describes the task from one given before
 * the task was moved on, and the history shows a reason on the row that gave it.
 */
import type { HistoryRow, TaskDetail } from './api-types';

/** The history actions of a hand-back (a Mate's, or the sweeper's for an expired lock): each gives its reason. */
const HAND_BACKS = new Set(['Solved', 'Manual', 'Error', 'Retry', 'Lock expired']);

/**
 * Per history row (oldest first): does this row give its reason? Every row carries the task's
 * reason as it was after the change; a row gives it when it is a hand-back or the reason changed.
 */
export function givesReason(rows: readonly Pick<HistoryRow, 'reason' | 'action'>[]): boolean[] {
  return rows.map((h, i) => h.reason !== null && (HAND_BACKS.has(h.action) || h.reason !== (rows[i - 1]?.reason ?? null)));
}

export interface ReasonState {
  text: string;
  /** the task is still where the row that gave the reason put it */
  current: boolean;
  /** the row that gave it, when the history has it */
  given?: Pick<HistoryRow, 'at' | 'actor'>;
}

/** The task's reason and whether it still describes the task; null without a reason. */
export function reasonState(task: Pick<TaskDetail, 'reason' | 'queue' | 'error' | 'history'>): ReasonState | null {
  if (!task.reason) return null;
  const gives = givesReason(task.history);
  let origin: HistoryRow | undefined;
  task.history.forEach((h, i) => {
    if (gives[i] && h.reason === task.reason) origin = h;
  });
  if (!origin) return { text: task.reason, current: true };
  const current = origin.toQueue === task.queue && origin.error === task.error;
  return { text: task.reason, current, given: { at: origin.at, actor: origin.actor } };
}
