/**
 * The outbox (docs/events.md): every change writes its events in the statement or transaction of
 * the change, so an event exists exactly when its change committed. Task changes write theirs as
 * one more derived write of the task funnel (src/tasks/funnel.ts): one multi-row INSERT from the
 * change relation, in the same statement as the task rows, whatever the batch size. Process and
 * run changes write theirs from triggers (migration 0003), so that no path that changes a process
 * or a run can forget its event.
 *
 * Rows carry the id of the transaction that wrote them (`xid`, a column default); readers order
 * and number them from it (store.ts), so nothing touches a row after it is written.
 */
import { sql, type RawBuilder } from 'kysely';

/**
 * The task events of the history rows in `history` (the funnel's history write,
 * src/history/store.ts, which returns tenant_id, id, action, at for each change of `source`): ONE
 * outbox row per tenant for all of them, typed 'task', listing the history rows in ascending order
 * (history_ids), its time the latest change's. Readers expand it into one event per history row,
 * typed `task.` + the history action in lower case with spaces as underscores ('Lock expired' →
 * task.lock_expired), with that row's time (store.ts). Also a `process.stopped_by_errors` /
 * `process.resumed_from_errors` event, a row of its own, when the batch moves a process with Stop
 * on Errors across its error limit (the count before the statement is the statement's snapshot;
 * docs/events.md says why this event is best-effort under concurrent writers). The Failure clears
 * of the same statement write their events through the processes trigger.
 */
export function eventsFromChanges(source: string, history: string): RawBuilder<unknown> {
  const s = sql.raw(source);
  // a task event stores no payload of its own ('{}', a constant): it is the history row of its
  // change, which records every fact of the payload, and readers build the payload from that row
  // (store.ts). Building and storing a 12-key jsonb per event was about half of the event write's
  // cost: for 64 hand-backs it added 33 % to the funnel statement, without it 18 % (PostgreSQL,
  // bench/events-cost.ts; bench/README.md). The take and hand-back statements are batched (one
  // statement serves many tasks), so one row for all of a statement's task events also saves, per
  // event, the rest of a row (heap tuple, primary-key entry, identity value, block-range entry):
  // with a row per event the write added 12–14 % to that statement, with one row 6–7 %.
  return sql`INSERT INTO outbox_events (tenant_id, type, payload, created_at, history_ids)
    SELECT h.tenant_id, 'task', '{}'::jsonb, max(h.at), array_agg(h.id ORDER BY h.id)
    FROM ${sql.raw(history)} h
    GROUP BY h.tenant_id
    UNION ALL
    SELECT x.tenant_id, x.type, jsonb_build_object('processId', x.process_id, 'unresolvedErrors', x.after, 'errorLimit', x.error_limit), x.at, NULL
    FROM (
      SELECT d.tenant_id, d.process_id, d.at, p.error_limit, e.n + d.delta AS after,
        CASE WHEN e.n <= p.error_limit AND e.n + d.delta > p.error_limit THEN 'process.stopped_by_errors'
             WHEN e.n > p.error_limit AND e.n + d.delta <= p.error_limit THEN 'process.resumed_from_errors' END AS type
      FROM (SELECT tenant_id, process_id, max(at) AS at,
              sum((queue = 'Manual' AND error)::int - (from_queue IS NOT DISTINCT FROM 'Manual' AND from_error)::int) AS delta
            -- only the changes that enter or leave Manual with the Error flag can move the count: a
            -- batch of Solved hand-backs groups nothing and reads no process
            FROM ${s} WHERE (queue = 'Manual' AND error) OR (from_queue = 'Manual' AND from_error)
            GROUP BY tenant_id, process_id) d
      JOIN processes p ON p.tenant_id = d.tenant_id AND p.id = d.process_id AND p.stop_on_errors
      CROSS JOIN LATERAL (SELECT count(*)::int AS n FROM tasks t WHERE t.tenant_id = d.tenant_id AND t.process_id = d.process_id
        AND t.queue = 'Manual' AND t.error AND t.deleted_at IS NULL) e
      WHERE d.delta <> 0
    ) x WHERE x.type IS NOT NULL`;
}
