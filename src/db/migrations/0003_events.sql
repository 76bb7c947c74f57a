-- Events out (docs/events.md): the outbox's visible order, webhook delivery state, triggers that
-- write the events of process and run changes in the transaction of the change.

-- Each event row is written with the id of the transaction that wrote it (xid) and no `seq`. The
-- sequencer (src/events/sequencer.ts) numbers committed events, one run at a time, so `seq` is the
-- order readers see: a reader resuming after seq N never misses an event that commits later.
ALTER TABLE outbox_events ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id();
ALTER TABLE outbox_events ADD COLUMN seq bigint;
CREATE INDEX outbox_events_unsequenced_idx ON outbox_events (xid, id) WHERE seq IS NULL;
-- the retention purge's index, also written by the sequencer rather than by the change
DROP INDEX outbox_events_created_idx;
CREATE INDEX outbox_events_created_idx ON outbox_events (created_at) WHERE seq IS NOT NULL;
-- partial: a row is indexed when it is numbered (by the sequencer, off the request path), not when written
CREATE UNIQUE INDEX outbox_events_seq_key ON outbox_events (tenant_id, seq) WHERE seq IS NOT NULL;

-- One row: the last seq given out. Its row lock makes sequencer runs one at a time, across server
-- processes, so that they commit their numbers in order.
CREATE TABLE outbox_sequencer (
  singleton     boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  last_seq      bigint NOT NULL DEFAULT 0,
  ran_at        timestamptz
);
INSERT INTO outbox_sequencer (singleton, last_seq) VALUES (true, 0);

ALTER TABLE webhook_subscriptions
  ADD COLUMN description text NOT NULL DEFAULT '',
  -- the last event seq turned into a delivery: deliveries are made in seq order (per-endpoint order)
  ADD COLUMN cursor_seq bigint NOT NULL DEFAULT 0,
  -- a dispatcher's lease on the endpoint; the claim itself uses FOR UPDATE SKIP LOCKED
  ADD COLUMN claimed_until timestamptz,
  -- deliveries in a row that failed for good; reaching the limit disables the endpoint
  ADD COLUMN failed_in_a_row integer NOT NULL DEFAULT 0,
  ADD COLUMN disabled_reason text,
  ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now();

ALTER TABLE webhook_deliveries
  ADD COLUMN last_attempt_at timestamptz,
  ADD COLUMN duration_ms integer,
  ADD COLUMN response_excerpt text;
CREATE INDEX webhook_deliveries_subscription_idx ON webhook_deliveries (tenant_id, subscription_id, id);
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (tenant_id, event_id);

-- An admin may let webhooks reach loopback, link-local and private addresses (off: SSRF guard).
ALTER TABLE tenants ADD COLUMN webhooks_allow_private boolean NOT NULL DEFAULT false;

ALTER TABLE notifications DROP CONSTRAINT notifications_kind_check;
ALTER TABLE notifications ADD CONSTRAINT notifications_kind_check CHECK (kind IN ('failure', 'stoppedByErrors', 'webhookDisabled', 'info'));

CREATE FUNCTION qm_utc(t timestamptz) RETURNS text LANGUAGE sql IMMUTABLE AS
  $$ SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$;

-- Process events: whatever path changes a process (gate, settings, Failure state), its event is
-- written in the same transaction.
CREATE FUNCTION qm_process_events() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  at timestamptz := now();
  changed text[];
BEGIN
  IF NEW.gate_open IS DISTINCT FROM OLD.gate_open THEN
    INSERT INTO outbox_events (tenant_id, type, payload, created_at) VALUES (NEW.tenant_id, 'process.gate',
      jsonb_build_object('type', 'process.gate', 'at', qm_utc(at), 'processId', NEW.id, 'processKey', NEW.process_key, 'open', NEW.gate_open), at);
  END IF;
  IF NEW.failure_at IS NOT NULL AND NEW.failure_at IS DISTINCT FROM OLD.failure_at THEN
    INSERT INTO outbox_events (tenant_id, type, payload, created_at) VALUES (NEW.tenant_id, 'process.failure_reported',
      jsonb_build_object('type', 'process.failure_reported', 'at', qm_utc(NEW.failure_at), 'processId', NEW.id, 'processKey', NEW.process_key,
        'message', NEW.failure_message), at);
  ELSIF NEW.failure_at IS NULL AND OLD.failure_at IS NOT NULL THEN
    INSERT INTO outbox_events (tenant_id, type, payload, created_at) VALUES (NEW.tenant_id, 'process.failure_cleared',
      jsonb_build_object('type', 'process.failure_cleared', 'at', qm_utc(at), 'processId', NEW.id, 'processKey', NEW.process_key), at);
  END IF;
  SELECT array_agg(k ORDER BY k) INTO changed FROM jsonb_each(to_jsonb(NEW)) n(k, v)
    WHERE k NOT IN ('gate_open', 'failure_at', 'failure_message', 'updated_at', 'created_at') AND v IS DISTINCT FROM to_jsonb(OLD) -> k;
  IF changed IS NOT NULL THEN
    INSERT INTO outbox_events (tenant_id, type, payload, created_at) VALUES (NEW.tenant_id, 'process.settings',
      jsonb_build_object('type', 'process.settings', 'at', qm_utc(at), 'processId', NEW.id, 'processKey', NEW.process_key, 'changed', to_jsonb(changed)), at);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER processes_events AFTER UPDATE ON processes FOR EACH ROW EXECUTE FUNCTION qm_process_events();

-- Run events: opened (by any take, create-and-take or StartRun) and finished (FinishRun, an empty
-- take, the idle timeout).
CREATE FUNCTION qm_run_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO outbox_events (tenant_id, type, payload, created_at) VALUES (NEW.tenant_id, 'run.started',
      jsonb_build_object('type', 'run.started', 'at', qm_utc(NEW.started_at), 'processId', NEW.process_id, 'runId', NEW.id), NEW.started_at);
  ELSIF OLD.finished_at IS NULL AND NEW.finished_at IS NOT NULL THEN
    INSERT INTO outbox_events (tenant_id, type, payload, created_at) VALUES (NEW.tenant_id, 'run.finished',
      jsonb_build_object('type', 'run.finished', 'at', qm_utc(NEW.finished_at), 'processId', NEW.process_id, 'runId', NEW.id,
        'reason', NEW.finish_reason, 'solved', NEW.solved_count, 'manual', NEW.manual_count, 'error', NEW.error_count, 'retry', NEW.retry_count),
      NEW.finished_at);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER runs_events AFTER INSERT OR UPDATE OF finished_at ON runs FOR EACH ROW EXECUTE FUNCTION qm_run_events();
