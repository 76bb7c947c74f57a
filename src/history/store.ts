/**
 * Task history and comments: append-only rows written in the statement of the change they
 * describe (docs/product.md §8). Both are derived from the change relation of the task funnel
 * (src/tasks/funnel.ts), whoever made the change.
 */
import { sql, type RawBuilder } from 'kysely';

export type { Actor } from '../lib/caller.js';
export { SYSTEM_ACTOR } from '../lib/caller.js';

/**
 * One history row per change in `source` (a relation with the funnel's change columns). Returns
 * each row's tenant_id, id, action and at: the task events of the statement point at their history
 * row (src/events/outbox.ts), whose columns are the event's payload.
 */
export function historyFromChanges(source: string): RawBuilder<unknown> {
  const s = sql.raw(source);
  return sql`INSERT INTO task_history (tenant_id, task_id, process_id, at, actor_type, actor_id, actor_name, action, from_queue, to_queue,
      error, from_error, reason, comment, retry_count, request_id, details)
    SELECT tenant_id, task_id, process_id, at, actor_type, actor_id, actor_name, action, from_queue, queue,
      error, from_error, reason, comment, retry_count, request_id, details
    FROM ${s}
    RETURNING tenant_id, id, action, at`;
}

/** A comment row for each change in `source` that carries a comment. */
export function commentsFromChanges(source: string): RawBuilder<unknown> {
  const s = sql.raw(source);
  return sql`INSERT INTO task_comments (tenant_id, task_id, author_type, author_id, author_name, body, created_at)
    SELECT tenant_id, task_id, actor_type, actor_id, actor_name, comment, at FROM ${s} WHERE comment IS NOT NULL`;
}
