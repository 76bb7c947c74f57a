-- Event ids without a sequencer (docs/events.md §3): readers read an event once its writing
-- transaction (`xid`) is below the oldest transaction of this database still running (the horizon), in
-- (xid, id) order, and its id is computed at read time from (xid, its rank within the xid). Nothing
-- numbers events after they are written, so the per-row `seq` update, its indexes and the counter
-- row go.

-- The horizon: readers read events of transactions below it. It is the snapshot's oldest
-- transaction still running, skipping the ones pg_stat_activity shows in another database of the
-- cluster (they write no events here; an xid it does not show is kept: it may be ours). Every
-- transaction below the horizon has ended for the caller's snapshot, or belongs to another
-- database; every transaction of this database still running, or starting later, is at or above it.
CREATE FUNCTION qm_events_horizon() RETURNS xid8 LANGUAGE sql STABLE AS $$
  SELECT LEAST(pg_snapshot_xmax(s.snap), (
    SELECT min(x) FROM pg_snapshot_xip(s.snap) AS x
    WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity a
      WHERE a.backend_xid = x::xid AND a.datid <> (SELECT oid FROM pg_database WHERE datname = current_database()))))
  FROM (SELECT pg_current_snapshot() AS snap) s
$$;

-- the readers' order: one tenant's events by (xid, id)
CREATE INDEX outbox_events_read_idx ON outbox_events (tenant_id, xid, id);
-- the retention purge's range: a block-range index (rows arrive in created_at order) costs almost
-- nothing to keep up on the hot path, unlike a btree entry per event
DROP INDEX outbox_events_created_idx;
CREATE INDEX outbox_events_created_brin ON outbox_events USING brin (created_at);

-- deliveries keep the event's row (their event_id is the id the receiver saw)
ALTER TABLE webhook_deliveries ADD COLUMN event_row_id bigint;
UPDATE webhook_deliveries d SET event_row_id = e.id FROM outbox_events e WHERE e.tenant_id = d.tenant_id AND e.seq = d.event_id;

-- endpoint cursors move to the new ids: the id of the last event at or before the old cursor
-- (none left: 0, every remaining event is after it)
UPDATE webhook_subscriptions s SET cursor_seq = COALESCE((
  SELECT (r.xid::text::bigint << 20) + r.rn FROM (
    SELECT e.seq, e.xid, row_number() OVER (PARTITION BY e.xid ORDER BY e.id) AS rn
    FROM outbox_events e WHERE e.tenant_id = s.tenant_id) r
  WHERE r.seq <= s.cursor_seq ORDER BY r.seq DESC LIMIT 1), 0);
UPDATE webhook_deliveries d SET event_id = (
  SELECT (r.xid::text::bigint << 20) + r.rn FROM (
    SELECT e.id, e.xid, row_number() OVER (PARTITION BY e.xid ORDER BY e.id) AS rn
    FROM outbox_events e WHERE e.tenant_id = d.tenant_id) r
  WHERE r.id = d.event_row_id)
WHERE d.event_row_id IS NOT NULL;

DROP INDEX outbox_events_unsequenced_idx;
DROP INDEX outbox_events_seq_key;
ALTER TABLE outbox_events DROP COLUMN seq;
DROP TABLE outbox_sequencer;
