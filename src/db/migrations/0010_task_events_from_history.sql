-- A task event no longer copies its change into a jsonb payload: the history row written in the
-- same statement already records it (docs/events.md §1). The event row keeps its tenant, type,
-- time and writing transaction, and points at that history row; readers build the payload from it
-- (src/events/store.ts). Rows written before this migration keep their stored payload.
--
-- history_id: the task_history row (same tenant) the payload is read from; null for every other
-- event. No foreign key: history rows outlive events (docs/events.md §8), and a key check per
-- event is the cost this removes.
ALTER TABLE outbox_events ADD COLUMN history_id bigint;
-- the one fact of a task event the history did not record: the Error flag before the change
-- (null on rows written before this migration)
ALTER TABLE task_history ADD COLUMN from_error boolean;

-- One btree entry per event instead of two: the readers' order (tenant_id, xid, id) becomes the
-- primary key (id alone is unique, so the key is too), and the separate (tenant_id, id) key goes.
-- A lookup by row id also names the xid, which a delivery's event id encodes (docs/events.md §3).
ALTER TABLE outbox_events DROP CONSTRAINT outbox_events_pkey;
ALTER TABLE outbox_events ADD PRIMARY KEY (tenant_id, xid, id);
DROP INDEX outbox_events_read_idx;
