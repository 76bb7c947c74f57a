-- Task events: one outbox row per statement and tenant instead of one per event (docs/events.md
-- §1). The take and hand-back statements are batched, one statement serving many tasks; a row per
-- event (heap tuple, primary-key entry, identity value, block-range entry) was most of what events
-- cost them. The row now lists the history rows of all its task events, and readers expand it into
-- one event per history row, in that order, typed from the history row's action
-- (src/events/store.ts). The visible ids and their order do not change (docs/events.md §3).
--
-- history_ids: the task_history rows (same tenant) of the row's task events, ascending; null for
-- every other event (one event per row, with its stored type and payload). Such a row's type is
-- the marker 'task'.
ALTER TABLE outbox_events ADD COLUMN history_ids bigint[];

-- a delivery of a task event names which event of its row it is (null: the row's only event)
ALTER TABLE webhook_deliveries ADD COLUMN event_history_id bigint;
UPDATE webhook_deliveries d SET event_history_id = e.history_id
  FROM outbox_events e
  WHERE e.tenant_id = d.tenant_id AND e.xid = ((d.event_id >> 20)::text::xid8) AND e.id = d.event_row_id AND e.history_id IS NOT NULL;

-- the task events written one row each (migration 0010): a row of one event
UPDATE outbox_events SET history_ids = ARRAY[history_id], type = 'task' WHERE history_id IS NOT NULL;
ALTER TABLE outbox_events DROP COLUMN history_id;
