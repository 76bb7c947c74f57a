-- A run's counts by outcome (docs/product.md §6) are read from its KPI events instead of being
-- kept on the run row. Every hand-back wrote the open run's row to add to its counts, which locked
-- that row until the hand-back committed: every take and hand-back of a process, in every server
-- process, queued behind one row (docs/operations.md, "Runs and several server processes"). The funnel writes one KPI event
-- per hand-back, with its run, in the same statement as the change, so the view below counts
-- exactly what the columns counted, hand-backs after the run closed included.
ALTER TABLE runs DROP COLUMN solved_count, DROP COLUMN manual_count, DROP COLUMN error_count, DROP COLUMN retry_count;

CREATE VIEW run_outcomes AS
  SELECT tenant_id, run_id,
    count(*) FILTER (WHERE outcome = 'Solved')::integer AS solved_count,
    count(*) FILTER (WHERE outcome = 'Manual')::integer AS manual_count,
    count(*) FILTER (WHERE outcome = 'Error')::integer AS error_count,
    count(*) FILTER (WHERE outcome = 'Retry')::integer AS retry_count
  FROM kpi_events
  WHERE run_id IS NOT NULL AND outcome <> 'Run'
  GROUP BY tenant_id, run_id;

-- run.finished still carries the run's counts at the moment it closed, now read from its KPI
-- events (kpi_events_process_at_idx: the process's events since the run started)
CREATE OR REPLACE FUNCTION qm_run_events() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  c record;
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO outbox_events (tenant_id, type, payload, created_at) VALUES (NEW.tenant_id, 'run.started',
      jsonb_build_object('type', 'run.started', 'at', qm_utc(NEW.started_at), 'processId', NEW.process_id, 'runId', NEW.id), NEW.started_at);
  ELSIF OLD.finished_at IS NULL AND NEW.finished_at IS NOT NULL THEN
    SELECT count(*) FILTER (WHERE outcome = 'Solved') AS solved, count(*) FILTER (WHERE outcome = 'Manual') AS manual,
        count(*) FILTER (WHERE outcome = 'Error') AS error, count(*) FILTER (WHERE outcome = 'Retry') AS retry
      INTO c FROM kpi_events
      WHERE tenant_id = NEW.tenant_id AND process_id = NEW.process_id AND at >= NEW.started_at AND run_id = NEW.id;
    INSERT INTO outbox_events (tenant_id, type, payload, created_at) VALUES (NEW.tenant_id, 'run.finished',
      jsonb_build_object('type', 'run.finished', 'at', qm_utc(NEW.finished_at), 'processId', NEW.process_id, 'runId', NEW.id,
        'reason', NEW.finish_reason, 'solved', c.solved, 'manual', c.manual, 'error', c.error, 'retry', c.retry),
      NEW.finished_at);
  END IF;
  RETURN NULL;
END $$;
