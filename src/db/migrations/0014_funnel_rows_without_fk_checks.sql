-- The rows the task funnel appends in the statement of a change (src/tasks/funnel.ts) carry no
-- foreign keys: history rows and comments point at their task, KPI events at their process, and
-- each key check cost every take and hand-back a lookup of the row it names and a share lock on it
-- (one more WAL record; on the process row, shared by every concurrent hand-back of the process, a
-- multixact). The funnel is their only writer, it writes them in the same statement as the task
-- row it describes, and tasks and processes are never deleted (a task is soft-deleted, a process
-- archived), so the references hold by construction; test/fast-path.test.ts checks them after
-- concurrent work. queue_count_deltas and outbox_events never had one (migrations 0006, 0010).
--
-- What goes with the keys is their ON DELETE CASCADE, which only a hand-made DELETE of a task or
-- process row used: docs/operations.md says which rows such a delete must also remove.
ALTER TABLE task_history DROP CONSTRAINT task_history_tenant_id_task_id_fkey;
ALTER TABLE task_comments DROP CONSTRAINT task_comments_tenant_id_task_id_fkey;
ALTER TABLE kpi_events DROP CONSTRAINT kpi_events_tenant_id_process_id_fkey;
