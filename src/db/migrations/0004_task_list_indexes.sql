-- People's task lists (src/tasks/search.ts): keyset pages over (sort key, id) of one process's
-- tasks. The default sort (newest first) and the id order (bulk jobs by filter) each have an index
-- in exactly their ORDER BY, so a page reads only its rows, however many tasks the process has.
CREATE INDEX tasks_list_created_idx ON tasks (tenant_id, process_id, created_at, id) WHERE deleted_at IS NULL;
CREATE INDEX tasks_list_id_idx ON tasks (tenant_id, process_id, id) WHERE deleted_at IS NULL;
