/** Task history and comments: append-only rows written in the transaction of the change. */
import { insertRowsWrite, type Column, type Write } from '../db/bulk.js';

export interface Actor {
  type: 'mate' | 'user' | 'system';
  id: number | null;
  name: string;
}

export const SYSTEM_ACTOR: Actor = { type: 'system', id: null, name: 'system' };

export interface HistoryRow {
  tenantId: number;
  taskId: number;
  processId: number;
  at: Date;
  actor: Actor;
  action: string;
  fromQueue: string | null;
  toQueue: string | null;
  error: boolean;
  reason: string | null;
  comment: string | null;
  retryCount: number;
  requestId: string | null;
  details?: Record<string, unknown> | null;
}

const HISTORY_COLUMNS: Column[] = [
  ['tenant_id', 'bigint'], ['task_id', 'bigint'], ['process_id', 'bigint'], ['at', 'timestamptz'],
  ['actor_type', 'text'], ['actor_id', 'bigint'], ['actor_name', 'text'], ['action', 'text'],
  ['from_queue', 'text'], ['to_queue', 'text'], ['error', 'boolean'], ['reason', 'text'],
  ['comment', 'text'], ['retry_count', 'integer'], ['request_id', 'text'], ['details', 'jsonb'],
];

export function historyWrite(rows: HistoryRow[]): Write | null {
  return insertRowsWrite(
    'task_history',
    HISTORY_COLUMNS,
    rows.map((r) => [r.tenantId, r.taskId, r.processId, r.at, r.actor.type, r.actor.id, r.actor.name, r.action, r.fromQueue, r.toQueue, r.error, r.reason, r.comment, r.retryCount, r.requestId, r.details ?? null]),
  );
}

export interface CommentRow {
  tenantId: number;
  taskId: number;
  actor: Actor;
  body: string;
  at: Date;
}

const COMMENT_COLUMNS: Column[] = [
  ['tenant_id', 'bigint'], ['task_id', 'bigint'], ['author_type', 'text'], ['author_id', 'bigint'],
  ['author_name', 'text'], ['body', 'text'], ['created_at', 'timestamptz'],
];

export function commentsWrite(rows: CommentRow[]): Write | null {
  return insertRowsWrite('task_comments', COMMENT_COLUMNS, rows.map((r) => [r.tenantId, r.taskId, r.actor.type, r.actor.id, r.actor.name, r.body, r.at]));
}
