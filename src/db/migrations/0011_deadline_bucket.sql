-- A task is overdue once its deadline has passed (deadline < now). A task written exactly at its
-- deadline (a change at the very moment the default deadline comes due) was counted as written
-- past it, hence overdue at once, while it is overdue only from the next instant on: the counters
-- disagreed with COUNT(*) by one such task each. Tasks written at or before their deadline now go
-- to the deadline's bin; only those written after it count as overdue from the start.
CREATE OR REPLACE FUNCTION qm_count_keys(queue text, error boolean, deleted boolean, urgent boolean, locked boolean,
  activation_date timestamptz, deadline timestamptz, updated_at timestamptz)
  RETURNS TABLE (kind text, bucket timestamptz)
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  SELECT k.kind, k.bucket FROM (VALUES
    (CASE WHEN error THEN 'ManualError' ELSE queue END,
     CASE WHEN queue = 'Ready' AND activation_date > updated_at THEN qm_count_bucket(activation_date)
          WHEN queue = 'Solved' THEN qm_count_bucket(updated_at)
          ELSE timestamptz '-infinity' END),
    (CASE WHEN urgent AND queue <> 'Solved' THEN 'urgent' END, timestamptz '-infinity'),
    (CASE WHEN locked AND queue <> 'Solved' THEN 'locked' END, timestamptz '-infinity'),
    (CASE WHEN deadline IS NOT NULL AND queue <> 'Solved' THEN 'deadline' END,
     CASE WHEN deadline >= updated_at THEN qm_count_bucket(deadline) ELSE timestamptz '-infinity' END)
  ) AS k(kind, bucket)
  WHERE queue IS NOT NULL AND deleted IS FALSE AND k.kind IS NOT NULL
$$;

DROP INDEX tasks_deadline_idx;
CREATE INDEX tasks_deadline_idx ON tasks (tenant_id, deadline, process_id)
  WHERE queue <> 'Solved' AND deleted_at IS NULL AND deadline >= updated_at;

-- the counts again from the tasks, under the new rule (deltas committed after this snapshot stay:
-- their task changes are not in it)
DELETE FROM queue_count_deltas;
DELETE FROM queue_counts;
INSERT INTO queue_counts (tenant_id, process_id, kind, bucket, n)
SELECT t.tenant_id, t.process_id, k.kind, k.bucket, count(*)
FROM tasks t
CROSS JOIN LATERAL qm_count_keys(t.queue, t.error, t.deleted_at IS NOT NULL, t.urgent, t.locked_until IS NOT NULL,
  t.activation_date, t.deadline, t.updated_at) k
GROUP BY 1, 2, 3, 4;
