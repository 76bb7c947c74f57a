/**
 * Kysely table types for every table of the migrations. test/db-types.test.ts compares them with a
 * freshly migrated database, column by column: a migration that adds, drops or changes a column
 * needs the matching change here.
 *
 * Conventions: `Generated<>` for identity columns; `ColumnType<Select, Insert, Update>` with
 * `undefined` in Insert for columns with a default; `| null` for nullable columns; literal unions
 * for text columns with an IN (...) CHECK, and only for those; `number` for integer and bigint
 * (int8 is parsed to a number, see store.ts).
 */
import type { ColumnType, Generated } from 'kysely';
import type { ActorType } from '../lib/caller.js';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type DefaultTimestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type Json<T = unknown> = ColumnType<T, string | T, string | T>;

/** The queues of a task (tasks.queue). */
export type QueueName = 'Ready' | 'NeedsData' | 'NeedsApproval' | 'Manual' | 'Solved';
/** Who changed a task, wrote a comment or created a task (declared with the Caller). */
export type { ActorType };
/** Who did an admin action: an ActorType, or the command line. */
export type AuditActorType = ActorType | 'cli';
export type UserRole = 'admin' | 'developer' | 'agent' | 'viewer';
/** A web session, or a personal access token. */
export type UserTokenKind = 'session' | 'personal';
export type SigningAlg = 'EdDSA' | 'HS256';
/** Sign-in throttling counts failures per user name and per client address. */
export type SignInScope = 'user' | 'address';
/** Which new tasks wait in NeedsApproval. */
export type RequireApproval = 'none' | 'mateCreated' | 'all';
export type KpiEventOutcome = 'Solved' | 'Manual' | 'Error' | 'Retry' | 'Run';
export type NotificationKind = 'failure' | 'stoppedByErrors' | 'webhookDisabled' | 'info';
export type IdempotencyState = 'in_progress' | 'done';
export type WebhookDeliveryStatus = 'pending' | 'delivered' | 'failed';
export type BulkJobState = 'running' | 'done' | 'failed';

export interface TenantsTable {
  id: Generated<number>;
  client_id: string;
  name: string;
  time_zone: ColumnType<string, string | undefined, string>;
  secret_version: ColumnType<number, number | undefined, number>;
  secret_grace_seconds: ColumnType<number, number | undefined, number>;
  rate_limit_per_minute: number | null;
  created_at: DefaultTimestamp;
  updated_at: DefaultTimestamp;
  webhooks_allow_private: ColumnType<boolean, boolean | undefined, boolean>;
  /** how numbers in strings are read (src/lib/values.ts NumberFormat) */
  number_format: ColumnType<'point' | 'comma', 'point' | 'comma' | undefined, 'point' | 'comma'>;
}

export interface TenantApiSecretsTable {
  tenant_id: number;
  id: Generated<number>;
  version: number;
  secret_hash: string;
  created_at: DefaultTimestamp;
  expires_at: Timestamp | null;
}

export interface UsersTable {
  tenant_id: number;
  id: Generated<number>;
  username: string;
  display_name: ColumnType<string, string | undefined, string>;
  email: string | null;
  password_hash: string;
  role: UserRole;
  disabled: ColumnType<boolean, boolean | undefined, boolean>;
  credential_version: ColumnType<number, number | undefined, number>;
  last_sign_in_at: Timestamp | null;
  created_at: DefaultTimestamp;
  updated_at: DefaultTimestamp;
}

export interface UserTokensTable {
  tenant_id: number;
  id: Generated<number>;
  user_id: number;
  kind: UserTokenKind;
  name: ColumnType<string, string | undefined, string>;
  token_hash: string;
  created_at: DefaultTimestamp;
  last_used_at: Timestamp | null;
  expires_at: Timestamp | null;
  revoked_at: Timestamp | null;
  /** issued before tokens carried their tenant: found by hash alone (migration 0013) */
  legacy: ColumnType<boolean, boolean | undefined, boolean>;
}

export interface MatesTable {
  tenant_id: number;
  id: Generated<number>;
  username: string;
  display_name: ColumnType<string, string | undefined, string>;
  password_hash: string;
  disabled: ColumnType<boolean, boolean | undefined, boolean>;
  credential_version: ColumnType<number, number | undefined, number>;
  last_contact_at: Timestamp | null;
  created_at: DefaultTimestamp;
  updated_at: DefaultTimestamp;
}

export interface SigningKeysTable {
  kid: string;
  alg: SigningAlg;
  private_jwk: Json<Record<string, unknown>>;
  public_jwk: Json<Record<string, unknown>>;
  created_at: DefaultTimestamp;
  retired_at: Timestamp | null;
}

export interface SignInFailuresTable {
  scope: SignInScope;
  subject: string;
  window_start: Timestamp;
  failures: ColumnType<number, number | undefined, number>;
  blocked_until: Timestamp | null;
}

export interface Calendar {
  blockedDates: string[];
  blockedWeekdays: number[];
}

export interface KpiSettings {
  secondsSavedPerTask: number;
  entriesPerTask: number;
  secondsSavedPerEntry: number | null;
  secondsSavedManual: number;
  secondsSavedError: number;
  secondsSavedRetry: number;
}

export interface ProcessesTable {
  tenant_id: number;
  id: Generated<number>;
  process_key: string;
  name: string;
  description: ColumnType<string, string | undefined, string>;
  tasks_enabled: ColumnType<boolean, boolean | undefined, boolean>;
  gate_open: ColumnType<boolean, boolean | undefined, boolean>;
  calendar: ColumnType<Calendar, string | undefined, string>;
  deadlines_enabled: ColumnType<boolean, boolean | undefined, boolean>;
  default_deadline_seconds: number | null;
  default_activation_offset_seconds: ColumnType<number, number | undefined, number>;
  retry_allowed: ColumnType<boolean, boolean | undefined, boolean>;
  max_retries: ColumnType<number, number | undefined, number>;
  stop_on_errors: ColumnType<boolean, boolean | undefined, boolean>;
  error_limit: ColumnType<number, number | undefined, number>;
  lock_timeout_seconds: ColumnType<number, number | undefined, number>;
  require_approval: ColumnType<RequireApproval, RequireApproval | undefined, RequireApproval>;
  kpi: ColumnType<KpiSettings, string | undefined, string>;
  run_timeout_seconds: ColumnType<number, number | undefined, number>;
  failure_message: string | null;
  failure_at: Timestamp | null;
  created_at: DefaultTimestamp;
  updated_at: DefaultTimestamp;
  archived_at: Timestamp | null;
}

export type FieldType = 'text' | 'number' | 'integer' | 'boolean' | 'date' | 'datetime' | 'dropdown' | 'email';

export interface ProcessFieldsTable {
  tenant_id: number;
  process_id: number;
  id: Generated<number>;
  position: number;
  name: string;
  label: ColumnType<string, string | undefined, string>;
  type: FieldType;
  // a JS array parameter would be sent as a PostgreSQL array, not JSON: insert JSON text
  options: ColumnType<string[], string | undefined, string>;
  required: ColumnType<boolean, boolean | undefined, boolean>;
  is_key: ColumnType<boolean, boolean | undefined, boolean>;
  is_unique: ColumnType<boolean, boolean | undefined, boolean>;
  default_value: Json | null;
}

export type RuleType = 'text' | 'number' | 'boolean' | 'list' | 'table' | 'richText';

export interface ProcessRulesTable {
  tenant_id: number;
  process_id: number;
  id: Generated<number>;
  position: number;
  name: string;
  type: RuleType;
  value: Json | null;
  description: ColumnType<string, string | undefined, string>;
  updated_at: DefaultTimestamp;
}

export interface RunsTable {
  tenant_id: number;
  id: Generated<number>;
  process_id: number;
  started_at: Timestamp;
  finished_at: Timestamp | null;
  /** 'finished' (FinishRun), 'emptyQueue' (TakeNext found nothing) or 'timeout'; not checked by the schema. */
  finish_reason: string | null;
  last_activity_at: Timestamp;
  mate_ids: ColumnType<number[], number[] | undefined, number[]>;
}

/** A task's data: field name to value, as the Mate API sends and returns it. */
export type TaskData = Record<string, unknown>;

export interface TasksTable {
  tenant_id: number;
  id: Generated<number>;
  process_id: number;
  queue: QueueName;
  error: ColumnType<boolean, boolean | undefined, boolean>;
  reason: string | null;
  data: ColumnType<TaskData, string | TaskData | undefined, string | TaskData>;
  unique_key: string | null;
  activation_date: Timestamp;
  deadline: Timestamp | null;
  urgent: ColumnType<boolean, boolean | undefined, boolean>;
  queue_position: Timestamp;
  retry_count: ColumnType<number, number | undefined, number>;
  locked_by_mate_id: number | null;
  locked_by_user_id: number | null;
  locked_until: Timestamp | null;
  expired_lock_mate_id: number | null;
  run_id: number | null;
  created_at: Timestamp;
  created_by_type: ActorType;
  created_by_id: number | null;
  updated_at: Timestamp;
  deleted_at: Timestamp | null;
  /** creation order, the take order's last tie-break (never answered: ids reveal no order) */
  seq: Generated<number>;
}

export interface TaskCommentsTable {
  tenant_id: number;
  id: Generated<number>;
  task_id: number;
  author_type: ActorType;
  author_id: number | null;
  author_name: string;
  body: string;
  created_at: Timestamp;
}

export interface TaskHistoryTable {
  tenant_id: number;
  id: Generated<number>;
  task_id: number;
  process_id: number;
  at: Timestamp;
  actor_type: ActorType;
  actor_id: number | null;
  actor_name: string;
  action: string;
  // queue names, but the schema does not check them
  from_queue: string | null;
  to_queue: string | null;
  error: ColumnType<boolean, boolean | undefined, boolean>;
  reason: string | null;
  comment: string | null;
  retry_count: ColumnType<number, number | undefined, number>;
  request_id: string | null;
  details: Json<Record<string, unknown>> | null;
  /** the Error flag before the change (null on rows older than migration 0010) */
  from_error: boolean | null;
}

export interface KpiEventsTable {
  tenant_id: number;
  id: Generated<number>;
  process_id: number;
  task_id: number | null;
  run_id: number | null;
  mate_id: number | null;
  at: Timestamp;
  outcome: KpiEventOutcome;
  entries: number;
  seconds_saved: number;
}

export interface NotificationsTable {
  tenant_id: number;
  id: Generated<number>;
  process_id: number | null;
  kind: NotificationKind;
  message: string;
  mate_id: number | null;
  created_at: Timestamp;
  read_at: Timestamp | null;
}

export interface IdempotencyKeysTable {
  tenant_id: number;
  mate_id: number;
  key: string;
  request_hash: string;
  state: IdempotencyState;
  status_code: number | null;
  /** The answer's JSON text as sent (text, not jsonb, so that a replay is byte-identical). */
  response: string | null;
  created_at: Timestamp;
  expires_at: Timestamp;
}

export interface WebhookSubscriptionsTable {
  tenant_id: number;
  id: Generated<number>;
  url: string;
  secret: string;
  event_types: ColumnType<string[], string[] | undefined, string[]>;
  enabled: ColumnType<boolean, boolean | undefined, boolean>;
  created_at: DefaultTimestamp;
  description: ColumnType<string, string | undefined, string>;
  /** the last event id (outbox seq) made a delivery */
  cursor_seq: ColumnType<number, number | undefined, number>;
  claimed_until: Timestamp | null;
  failed_in_a_row: ColumnType<number, number | undefined, number>;
  disabled_reason: string | null;
  updated_at: DefaultTimestamp;
}

export interface OutboxEventsTable {
  tenant_id: number;
  id: Generated<number>;
  type: string;
  payload: Json<Record<string, unknown>>;
  created_at: Timestamp;
  /** the writing transaction (xid8, read as text); readers order and number events by it (src/events/store.ts) */
  xid: ColumnType<string, string | undefined, string>;
  /**
   * a row of task events (type 'task'): the history rows of one statement's task events of the
   * tenant, ascending, one event each (src/events/store.ts expands them); null for other events
   */
  history_ids: number[] | null;
}

export interface WebhookDeliveriesTable {
  tenant_id: number;
  id: Generated<number>;
  subscription_id: number;
  /** the event id the receiver saw (docs/events.md §3) */
  event_id: number;
  /** the event's row (outbox_events.id) */
  event_row_id: number | null;
  /** which event of a row of task events (its history row); null for other events */
  event_history_id: number | null;
  status: WebhookDeliveryStatus;
  attempts: ColumnType<number, number | undefined, number>;
  next_attempt_at: Timestamp | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: Timestamp;
  delivered_at: Timestamp | null;
  last_attempt_at: Timestamp | null;
  duration_ms: number | null;
  response_excerpt: string | null;
}

/**
 * A task a bulk job could not change, and why; for an import job, a row of the file it could not
 * create (`row`: the row number in the file, the header being row 1; no task id).
 */
export interface BulkJobError {
  taskId?: number;
  row?: number;
  code: string;
  message: string;
}

/** People's bulk jobs, their progress and lease (src/bulk/jobs.ts). */
export interface BulkJobsTable {
  tenant_id: number;
  id: string;
  process_id: number;
  action: string;
  request: Json<Record<string, unknown>>;
  time_zone: string;
  actor_type: ActorType;
  actor_id: number | null;
  actor_name: string;
  created_at: Timestamp;
  state: BulkJobState;
  max_id: ColumnType<number, number | undefined, number>;
  cursor: ColumnType<number, number | undefined, number>;
  total: number;
  done: ColumnType<number, number | undefined, number>;
  failed: ColumnType<number, number | undefined, number>;
  skipped: ColumnType<number, number | undefined, number>;
  errors: ColumnType<BulkJobError[], string | undefined, string>;
  message: string | null;
  finished_at: Timestamp | null;
  lease_owner: string | null;
  lease_until: Timestamp | null;
}

/** The staged rows of an import job, one row per chunk (migration 0016, src/bulk/jobs.ts). */
export interface BulkJobRowsTable {
  tenant_id: number;
  job_id: string;
  seq: number;
  /** JSON text: the chunk's rows (src/bulk/store.ts) */
  items: string;
}

/** One attempt of a webhook delivery (src/events/webhook-dispatcher.ts). */
export interface WebhookAttemptsTable {
  tenant_id: number;
  delivery_id: number;
  id: Generated<number>;
  at: Timestamp;
  status_code: number | null;
  duration_ms: number;
  response_excerpt: string | null;
  error: string | null;
}

export interface AuditLogTable {
  tenant_id: number;
  id: Generated<number>;
  at: Timestamp;
  actor_type: AuditActorType;
  actor_id: number | null;
  action: string;
  target_type: string;
  target_id: string | null;
  details: Json<Record<string, unknown>> | null;
  request_id: string | null;
}

/** A key of the queue counters (migration 0006, qm_count_keys). */
export type QueueCountKind =
  'Ready' | 'NeedsData' | 'NeedsApproval' | 'Manual' | 'ManualError' | 'Solved' | 'urgent' | 'locked' | 'deadline';

export interface QueueCountsTable {
  tenant_id: number;
  process_id: number;
  kind: QueueCountKind;
  bucket: Timestamp;
  n: number;
}

export interface QueueCountDeltasTable {
  tenant_id: number;
  id: Generated<number>;
  process_id: number;
  kind: QueueCountKind;
  bucket: Timestamp;
  n: number;
}

export interface Database {
  tenants: TenantsTable;
  tenant_api_secrets: TenantApiSecretsTable;
  users: UsersTable;
  user_tokens: UserTokensTable;
  mates: MatesTable;
  signing_keys: SigningKeysTable;
  sign_in_failures: SignInFailuresTable;
  processes: ProcessesTable;
  process_fields: ProcessFieldsTable;
  process_rules: ProcessRulesTable;
  runs: RunsTable;
  tasks: TasksTable;
  task_comments: TaskCommentsTable;
  task_history: TaskHistoryTable;
  kpi_events: KpiEventsTable;
  notifications: NotificationsTable;
  idempotency_keys: IdempotencyKeysTable;
  webhook_subscriptions: WebhookSubscriptionsTable;
  outbox_events: OutboxEventsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  audit_log: AuditLogTable;
  bulk_jobs: BulkJobsTable;
  bulk_job_rows: BulkJobRowsTable;
  webhook_attempts: WebhookAttemptsTable;
  queue_counts: QueueCountsTable;
  queue_count_deltas: QueueCountDeltasTable;
}
