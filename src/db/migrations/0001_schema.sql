-- Queuemate schema, version 1: the whole domain (product.md).
-- Every tenant-owned table carries tenant_id, and tenant_id leads its primary key and indexes,
-- so that every query is scoped to one tenant and no index scan crosses tenants.
-- Ids come from one sequence per table and stay below 2^53 (they are JSON numbers on the wire).

CREATE TABLE tenants (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  client_id       text NOT NULL CHECK (client_id ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
  name            text NOT NULL,
  time_zone       text NOT NULL DEFAULT 'UTC',
  -- raised when the API secret is rotated; tokens carry it as `sv`
  secret_version  integer NOT NULL DEFAULT 1,
  -- seconds an old API secret (and old-sv tokens) keep working after a rotation
  secret_grace_seconds integer NOT NULL DEFAULT 0,
  rate_limit_per_minute integer,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX tenants_client_id_key ON tenants (client_id);

-- API secrets are random (>= 256 bits), so a SHA-256 digest is a safe hash; only the digest is kept.
CREATE TABLE tenant_api_secrets (
  tenant_id     bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  id            bigint GENERATED ALWAYS AS IDENTITY,
  version       integer NOT NULL,
  secret_hash   text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz,
  PRIMARY KEY (tenant_id, id)
);
CREATE UNIQUE INDEX tenant_api_secrets_version_key ON tenant_api_secrets (tenant_id, version);

CREATE TABLE users (
  tenant_id           bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  id                  bigint GENERATED ALWAYS AS IDENTITY,
  username            text NOT NULL,
  display_name        text NOT NULL DEFAULT '',
  email               text,
  password_hash       text NOT NULL,
  role                text NOT NULL CHECK (role IN ('admin', 'developer', 'agent', 'viewer')),
  disabled            boolean NOT NULL DEFAULT false,
  credential_version  integer NOT NULL DEFAULT 1,
  last_sign_in_at     timestamptz,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);
CREATE UNIQUE INDEX users_username_key ON users (tenant_id, lower(username));

-- Web sessions and personal access tokens: only a SHA-256 of the random token is stored.
CREATE TABLE user_tokens (
  tenant_id     bigint NOT NULL,
  id            bigint GENERATED ALWAYS AS IDENTITY,
  user_id       bigint NOT NULL,
  kind          text NOT NULL CHECK (kind IN ('session', 'personal')),
  name          text NOT NULL DEFAULT '',
  token_hash    text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_used_at  timestamptz,
  expires_at    timestamptz,
  revoked_at    timestamptz,
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX user_tokens_hash_key ON user_tokens (token_hash);
CREATE INDEX user_tokens_user_idx ON user_tokens (tenant_id, user_id);

CREATE TABLE mates (
  tenant_id           bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  id                  bigint GENERATED ALWAYS AS IDENTITY,
  username            text NOT NULL,
  display_name        text NOT NULL DEFAULT '',
  password_hash       text NOT NULL,
  disabled            boolean NOT NULL DEFAULT false,
  -- raised by a password change or disabling; tokens carry it as `cv`
  credential_version  integer NOT NULL DEFAULT 1,
  last_contact_at     timestamptz,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);
CREATE UNIQUE INDEX mates_username_key ON mates (tenant_id, lower(username));

-- Token signing keys (not tenant-owned). Retired keys keep verifying for one token lifetime.
CREATE TABLE signing_keys (
  kid           text PRIMARY KEY,
  alg           text NOT NULL CHECK (alg IN ('EdDSA', 'HS256')),
  private_jwk   jsonb NOT NULL,
  public_jwk    jsonb NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  retired_at    timestamptz
);

-- Sign-in throttling, shared by every server process.
CREATE TABLE sign_in_failures (
  scope         text NOT NULL CHECK (scope IN ('user', 'address')),
  subject       text NOT NULL,
  window_start  timestamptz NOT NULL,
  failures      integer NOT NULL DEFAULT 0,
  blocked_until timestamptz,
  PRIMARY KEY (scope, subject)
);

CREATE TABLE processes (
  tenant_id                 bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  id                        bigint GENERATED ALWAYS AS IDENTITY,
  process_key               text NOT NULL CHECK (process_key ~ '^[A-Za-z0-9][A-Za-z0-9._~-]{0,99}$'),
  name                      text NOT NULL,
  description               text NOT NULL DEFAULT '',
  tasks_enabled             boolean NOT NULL DEFAULT true,
  gate_open                 boolean NOT NULL DEFAULT true,
  -- {"blockedDates": ["2024-12-24"], "blockedWeekdays": [0, 6]} (0 = Sunday), tenant time zone
  calendar                  jsonb NOT NULL DEFAULT '{"blockedDates": [], "blockedWeekdays": []}',
  deadlines_enabled         boolean NOT NULL DEFAULT false,
  default_deadline_seconds  integer CHECK (default_deadline_seconds > 0),
  default_activation_offset_seconds integer NOT NULL DEFAULT 0 CHECK (default_activation_offset_seconds >= 0),
  retry_allowed             boolean NOT NULL DEFAULT true,
  max_retries               integer NOT NULL DEFAULT 3 CHECK (max_retries >= 0),
  stop_on_errors            boolean NOT NULL DEFAULT false,
  error_limit               integer NOT NULL DEFAULT 10 CHECK (error_limit >= 0),
  lock_timeout_seconds      integer NOT NULL DEFAULT 3600 CHECK (lock_timeout_seconds BETWEEN 1 AND 604800),
  require_approval          text NOT NULL DEFAULT 'none' CHECK (require_approval IN ('none', 'mateCreated', 'all')),
  -- {"secondsSavedPerTask": 0, "entriesPerTask": 1, "secondsSavedPerEntry": null,
  --  "secondsSavedManual": 0, "secondsSavedError": 0, "secondsSavedRetry": 0}
  kpi                       jsonb NOT NULL DEFAULT '{"secondsSavedPerTask": 0, "entriesPerTask": 1, "secondsSavedPerEntry": null, "secondsSavedManual": 0, "secondsSavedError": 0, "secondsSavedRetry": 0}',
  run_timeout_seconds       integer NOT NULL DEFAULT 86400 CHECK (run_timeout_seconds > 0),
  -- Failure state (product §7): set by a Mate's Failure call, cleared by its next action
  failure_message           text,
  failure_at                timestamptz,
  created_at                timestamptz NOT NULL DEFAULT now(),
  updated_at                timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);
CREATE UNIQUE INDEX processes_key_key ON processes (tenant_id, lower(process_key));

CREATE TABLE process_fields (
  tenant_id     bigint NOT NULL,
  process_id    bigint NOT NULL,
  id            bigint GENERATED ALWAYS AS IDENTITY,
  position      integer NOT NULL,
  name          text NOT NULL CHECK (name ~ '^[A-Za-z][A-Za-z0-9_]{0,63}$'),
  label         text NOT NULL DEFAULT '',
  type          text NOT NULL CHECK (type IN ('text', 'number', 'integer', 'boolean', 'date', 'datetime', 'dropdown', 'email')),
  options       jsonb NOT NULL DEFAULT '[]',
  required      boolean NOT NULL DEFAULT false,
  is_key        boolean NOT NULL DEFAULT false,
  is_unique     boolean NOT NULL DEFAULT false,
  default_value jsonb,
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, process_id) REFERENCES processes (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX process_fields_name_key ON process_fields (tenant_id, process_id, lower(name));
CREATE INDEX process_fields_order_idx ON process_fields (tenant_id, process_id, position);

CREATE TABLE process_rules (
  tenant_id     bigint NOT NULL,
  process_id    bigint NOT NULL,
  id            bigint GENERATED ALWAYS AS IDENTITY,
  position      integer NOT NULL,
  name          text NOT NULL CHECK (name ~ '^[A-Za-z][A-Za-z0-9_]{0,63}$' AND lower(name) <> 'processkey'),
  type          text NOT NULL CHECK (type IN ('text', 'number', 'boolean', 'list', 'table', 'richText')),
  value         jsonb,
  description   text NOT NULL DEFAULT '',
  updated_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, process_id) REFERENCES processes (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX process_rules_name_key ON process_rules (tenant_id, process_id, lower(name));

CREATE TABLE runs (
  tenant_id         bigint NOT NULL,
  id                bigint GENERATED ALWAYS AS IDENTITY,
  process_id        bigint NOT NULL,
  started_at        timestamptz NOT NULL,
  finished_at       timestamptz,
  -- why it closed: 'finished' (FinishRun), 'emptyQueue' (TakeNext found nothing), 'timeout'
  finish_reason     text,
  last_activity_at  timestamptz NOT NULL,
  mate_ids          bigint[] NOT NULL DEFAULT '{}',
  solved_count      integer NOT NULL DEFAULT 0,
  manual_count      integer NOT NULL DEFAULT 0,
  error_count       integer NOT NULL DEFAULT 0,
  retry_count       integer NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, process_id) REFERENCES processes (tenant_id, id) ON DELETE CASCADE
);
-- at most one open run per process
CREATE UNIQUE INDEX runs_one_open_key ON runs (tenant_id, process_id) WHERE finished_at IS NULL;
CREATE INDEX runs_process_idx ON runs (tenant_id, process_id, started_at DESC);
CREATE INDEX runs_open_activity_idx ON runs (last_activity_at) WHERE finished_at IS NULL;

CREATE TABLE tasks (
  tenant_id         bigint NOT NULL,
  id                bigint GENERATED ALWAYS AS IDENTITY,
  process_id        bigint NOT NULL,
  queue             text NOT NULL CHECK (queue IN ('Ready', 'NeedsData', 'NeedsApproval', 'Manual', 'Solved')),
  error             boolean NOT NULL DEFAULT false,
  reason            text,
  data              jsonb NOT NULL DEFAULT '{}',
  -- normalized value of the process's unique key field(s), for the uniqueness rule of product §3
  unique_key        text,
  activation_date   timestamptz NOT NULL,
  deadline          timestamptz,
  urgent            boolean NOT NULL DEFAULT false,
  -- place in the queue: activation date of a new task, time of the Retry for a retried one
  queue_position    timestamptz NOT NULL,
  retry_count       integer NOT NULL DEFAULT 0,
  locked_by_mate_id bigint,
  locked_by_user_id bigint,
  locked_until      timestamptz,
  -- the Mate whose lease expired (recovered by the sweeper, or due): its late hand-back is
  -- refused with lock_expired until it takes the task again
  expired_lock_mate_id bigint,
  run_id            bigint,
  created_at        timestamptz NOT NULL,
  created_by_type   text NOT NULL CHECK (created_by_type IN ('mate', 'user', 'system')),
  created_by_id     bigint,
  updated_at        timestamptz NOT NULL,
  deleted_at        timestamptz,
  CHECK (error = false OR queue = 'Manual'),
  CHECK ((locked_until IS NULL) = (locked_by_mate_id IS NULL AND locked_by_user_id IS NULL)),
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, process_id) REFERENCES processes (tenant_id, id) ON DELETE CASCADE
);
-- Take-next, in the exact ORDER BY of the take query (urgent, deadline, queue position, id),
-- over free Ready tasks only. One index for processes with deadlines, one without.
CREATE INDEX tasks_take_deadline_idx ON tasks (tenant_id, process_id, urgent DESC, deadline ASC NULLS LAST, queue_position, id)
  WHERE queue = 'Ready' AND locked_until IS NULL AND deleted_at IS NULL;
CREATE INDEX tasks_take_idx ON tasks (tenant_id, process_id, urgent DESC, queue_position, id)
  WHERE queue = 'Ready' AND locked_until IS NULL AND deleted_at IS NULL;
-- queue counts and lists per process
CREATE INDEX tasks_queue_idx ON tasks (tenant_id, process_id, queue, error) WHERE deleted_at IS NULL;
-- the lock sweeper: expired leases across all tenants
CREATE INDEX tasks_locked_until_idx ON tasks (locked_until) WHERE locked_until IS NOT NULL;
-- unique key fields among tasks not Solved
CREATE UNIQUE INDEX tasks_unique_key ON tasks (tenant_id, process_id, unique_key)
  WHERE unique_key IS NOT NULL AND queue <> 'Solved' AND deleted_at IS NULL;

CREATE TABLE task_comments (
  tenant_id     bigint NOT NULL,
  id            bigint GENERATED ALWAYS AS IDENTITY,
  task_id       bigint NOT NULL,
  author_type   text NOT NULL CHECK (author_type IN ('mate', 'user', 'system')),
  author_id     bigint,
  author_name   text NOT NULL,
  body          text NOT NULL,
  created_at    timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, task_id) REFERENCES tasks (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX task_comments_task_idx ON task_comments (tenant_id, task_id, id);

-- Append-only: one row per change of a task, written in the change's transaction.
CREATE TABLE task_history (
  tenant_id     bigint NOT NULL,
  id            bigint GENERATED ALWAYS AS IDENTITY,
  task_id       bigint NOT NULL,
  process_id    bigint NOT NULL,
  at            timestamptz NOT NULL,
  actor_type    text NOT NULL CHECK (actor_type IN ('mate', 'user', 'system')),
  actor_id      bigint,
  actor_name    text NOT NULL,
  action        text NOT NULL,
  from_queue    text,
  to_queue      text,
  error         boolean NOT NULL DEFAULT false,
  reason        text,
  comment       text,
  retry_count   integer NOT NULL DEFAULT 0,
  request_id    text,
  details       jsonb,
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, task_id) REFERENCES tasks (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX task_history_task_idx ON task_history (tenant_id, task_id, id);

CREATE TABLE kpi_events (
  tenant_id     bigint NOT NULL,
  id            bigint GENERATED ALWAYS AS IDENTITY,
  process_id    bigint NOT NULL,
  task_id       bigint,
  run_id        bigint,
  mate_id       bigint,
  at            timestamptz NOT NULL,
  outcome       text NOT NULL CHECK (outcome IN ('Solved', 'Manual', 'Error', 'Retry', 'Run')),
  entries       integer NOT NULL CHECK (entries >= 0),
  seconds_saved bigint NOT NULL CHECK (seconds_saved >= 0),
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, process_id) REFERENCES processes (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX kpi_events_process_at_idx ON kpi_events (tenant_id, process_id, at);

-- Failures reported by Mates and other notifications shown to people.
CREATE TABLE notifications (
  tenant_id     bigint NOT NULL,
  id            bigint GENERATED ALWAYS AS IDENTITY,
  process_id    bigint,
  kind          text NOT NULL CHECK (kind IN ('failure', 'stoppedByErrors', 'info')),
  message       text NOT NULL,
  mate_id       bigint,
  created_at    timestamptz NOT NULL,
  read_at       timestamptz,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX notifications_recent_idx ON notifications (tenant_id, created_at DESC);

-- Idempotency-Key records for create calls (mate-api §8), kept 24 h.
CREATE TABLE idempotency_keys (
  tenant_id     bigint NOT NULL,
  mate_id       bigint NOT NULL,
  key           text NOT NULL,
  request_hash  text NOT NULL,
  state         text NOT NULL CHECK (state IN ('in_progress', 'done')),
  status_code   integer,
  -- the answer's JSON text as sent, so a replay is byte-identical (jsonb would reorder keys)
  response      text,
  created_at    timestamptz NOT NULL,
  expires_at    timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, mate_id, key)
);
CREATE INDEX idempotency_keys_expiry_idx ON idempotency_keys (expires_at);

CREATE TABLE webhook_subscriptions (
  tenant_id     bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  id            bigint GENERATED ALWAYS AS IDENTITY,
  url           text NOT NULL,
  -- HMAC-SHA256 signing secret; needed in clear to sign, shown once on creation
  secret        text NOT NULL,
  event_types   text[] NOT NULL DEFAULT '{}',
  enabled       boolean NOT NULL DEFAULT true,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);

-- Outbox: events written in the transaction of the change they describe.
CREATE TABLE outbox_events (
  tenant_id     bigint NOT NULL,
  id            bigint GENERATED ALWAYS AS IDENTITY,
  type          text NOT NULL,
  payload       jsonb NOT NULL,
  created_at    timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX outbox_events_created_idx ON outbox_events (created_at);

CREATE TABLE webhook_deliveries (
  tenant_id        bigint NOT NULL,
  id               bigint GENERATED ALWAYS AS IDENTITY,
  subscription_id  bigint NOT NULL,
  event_id         bigint NOT NULL,
  status           text NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts         integer NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz,
  last_status_code integer,
  last_error       text,
  created_at       timestamptz NOT NULL,
  delivered_at     timestamptz,
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, subscription_id) REFERENCES webhook_subscriptions (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';

-- Admin actions (ASVS 16.2): who did what to which object, with the request id.
CREATE TABLE audit_log (
  tenant_id     bigint NOT NULL,
  id            bigint GENERATED ALWAYS AS IDENTITY,
  at            timestamptz NOT NULL,
  actor_type    text NOT NULL CHECK (actor_type IN ('mate', 'user', 'system', 'cli')),
  actor_id      bigint,
  action        text NOT NULL,
  target_type   text NOT NULL,
  target_id     text,
  details       jsonb,
  request_id    text,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX audit_log_at_idx ON audit_log (tenant_id, at DESC);
