/**
 * The outbox (docs/events.md): every change writes its events in the statement or transaction of
 * the change, so an event exists exactly when its change committed. Task changes write theirs as
 * one more derived write of the task funnel (src/tasks/funnel.ts): one multi-row INSERT from the
 * change relation, in the same statement as the task rows, whatever the batch size. Process and
 * run changes write theirs from triggers (migration 0002), so that no path that changes a process
 * or a run can forget its event.
 *
 * Rows carry the id of the transaction that wrote them (`xid`, a column default); readers order
 * and number them from it (store.ts), so nothing touches a row after it is written.
 */
import { sql, type RawBuilder } from 'kysely';

/**
 * One event per change in `source` (the funnel's change relation), typed `task.` + the history
 * action in lower case with spaces as underscores ('Lock expired' → task.lock_expired), and a `process.stopped_by_errors`
 * / `process.resumed_from_errors` event when the batch moves a process with Stop on Errors across
 * its error limit (the count before the statement is the statement's snapshot; docs/events.md says
 * why this event is best-effort under concurrent writers). The Failure clears of the same statement
 * write their events through the processes trigger.
 */
export function eventsFromChanges(source: string): RawBuilder<unknown> {
  const s = sql.raw(source);
  // the payload leaves out `type` and `at`: readers add them from the row's columns (store.ts),
  // which keeps the per-row work of this hot-path write to one jsonb_build_object
  return sql`INSERT INTO outbox_events (tenant_id, type, payload, created_at)
    SELECT c.tenant_id, 'task.' || replace(lower(c.action), ' ', '_'),
      jsonb_build_object('processId', c.process_id, 'taskId', c.task_id, 'action', c.action, 'queue', c.queue, 'error', c.error,
        'fromQueue', c.from_queue, 'fromError', c.from_error, 'reason', c.reason, 'retryCount', c.retry_count,
        'actor', jsonb_build_object('type', c.actor_type, 'id', c.actor_id, 'name', c.actor_name), 'requestId', c.request_id),
      c.at
    FROM ${s} c
    UNION ALL
    SELECT x.tenant_id, x.type, jsonb_build_object('processId', x.process_id, 'unresolvedErrors', x.after, 'errorLimit', x.error_limit), x.at
    FROM (
      SELECT d.tenant_id, d.process_id, d.at, p.error_limit, e.n + d.delta AS after,
        CASE WHEN e.n <= p.error_limit AND e.n + d.delta > p.error_limit THEN 'process.stopped_by_errors'
             WHEN e.n > p.error_limit AND e.n + d.delta <= p.error_limit THEN 'process.resumed_from_errors' END AS type
      FROM (SELECT tenant_id, process_id, max(at) AS at,
              sum((queue = 'Manual' AND error)::int - (from_queue IS NOT DISTINCT FROM 'Manual' AND from_error)::int) AS delta
            FROM ${s} GROUP BY tenant_id, process_id) d
      JOIN processes p ON p.tenant_id = d.tenant_id AND p.id = d.process_id AND p.stop_on_errors
      CROSS JOIN LATERAL (SELECT count(*)::int AS n FROM tasks t WHERE t.tenant_id = d.tenant_id AND t.process_id = d.process_id
        AND t.queue = 'Manual' AND t.error AND t.deleted_at IS NULL) e
      WHERE d.delta <> 0
    ) x WHERE x.type IS NOT NULL`;
}
