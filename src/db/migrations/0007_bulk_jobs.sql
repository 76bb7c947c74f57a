-- Bulk jobs survive a restart (docs/people-api.md §5, src/tasks/bulk.ts): the job, what it was
-- asked, how far it got and what it counted live here. `cursor` is the last task id done (a job by
-- filter visits tasks in id order) or the number of listed ids done (a job by ids); each chunk's
-- task changes and the cursor's move commit in one transaction, so a resumed job starts exactly
-- after the last committed chunk. A running job is held by one server process through a lease
-- (lease_owner, lease_until); another process claims it (FOR UPDATE SKIP LOCKED) once the lease
-- has run out or was let go at shutdown.
CREATE TABLE bulk_jobs (
  tenant_id    bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  id           text NOT NULL,
  process_id   bigint NOT NULL,
  action       text NOT NULL,
  -- the bulk body as given (action, its parameters, ids or filter), read again on resume
  request      jsonb NOT NULL,
  time_zone    text NOT NULL,
  actor_type   text NOT NULL CHECK (actor_type IN ('mate', 'user', 'system')),
  actor_id     bigint,
  actor_name   text NOT NULL,
  created_at   timestamptz NOT NULL,
  state        text NOT NULL CHECK (state IN ('running', 'done', 'failed')),
  -- by filter: tasks created after the start (id above max_id) are left alone
  max_id       bigint NOT NULL DEFAULT 0,
  cursor       bigint NOT NULL DEFAULT 0,
  total        integer NOT NULL,
  done         integer NOT NULL DEFAULT 0,
  failed       integer NOT NULL DEFAULT 0,
  skipped      integer NOT NULL DEFAULT 0,
  errors       jsonb NOT NULL DEFAULT '[]',
  message      text,
  finished_at  timestamptz,
  lease_owner  text,
  lease_until  timestamptz,
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, process_id) REFERENCES processes (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX bulk_jobs_running_idx ON bulk_jobs (lease_until) WHERE state = 'running';
CREATE INDEX bulk_jobs_finished_idx ON bulk_jobs (finished_at) WHERE state <> 'running';

-- Every delivery attempt of a webhook (docs/events.md, "Delivery log"), not only the last one.
-- Purged with its delivery (ON DELETE CASCADE) and by age by the retention job.
CREATE TABLE webhook_attempts (
  tenant_id        bigint NOT NULL,
  delivery_id      bigint NOT NULL,
  id               bigint GENERATED ALWAYS AS IDENTITY,
  at               timestamptz NOT NULL,
  status_code      integer,
  duration_ms      integer NOT NULL,
  -- at most 1 KB of the receiver's answer
  response_excerpt text,
  error            text,
  PRIMARY KEY (tenant_id, delivery_id, id),
  FOREIGN KEY (tenant_id, delivery_id) REFERENCES webhook_deliveries (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX webhook_attempts_at_idx ON webhook_attempts (at);
