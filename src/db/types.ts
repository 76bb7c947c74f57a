/** Kysely table types for the tables the code reads and writes through the query builder. */
import type { ColumnType, Generated } from 'kysely';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type DefaultTimestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type Json<T = unknown> = ColumnType<T, string | T, string | T>;

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
  role: 'admin' | 'developer' | 'agent' | 'viewer';
  disabled: ColumnType<boolean, boolean | undefined, boolean>;
  credential_version: ColumnType<number, number | undefined, number>;
  last_sign_in_at: Timestamp | null;
  created_at: DefaultTimestamp;
  updated_at: DefaultTimestamp;
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
  alg: 'EdDSA' | 'HS256';
  private_jwk: Json<Record<string, unknown>>;
  public_jwk: Json<Record<string, unknown>>;
  created_at: DefaultTimestamp;
  retired_at: Timestamp | null;
}

export interface SignInFailuresTable {
  scope: 'user' | 'address';
  subject: string;
  window_start: Timestamp;
  failures: number;
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
  require_approval: ColumnType<'none' | 'mateCreated' | 'all', 'none' | 'mateCreated' | 'all' | undefined, 'none' | 'mateCreated' | 'all'>;
  kpi: ColumnType<KpiSettings, string | undefined, string>;
  run_timeout_seconds: ColumnType<number, number | undefined, number>;
  failure_message: string | null;
  failure_at: Timestamp | null;
  created_at: DefaultTimestamp;
  updated_at: DefaultTimestamp;
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

export interface AuditLogTable {
  tenant_id: number;
  id: Generated<number>;
  at: Timestamp;
  actor_type: 'mate' | 'user' | 'system' | 'cli';
  actor_id: number | null;
  action: string;
  target_type: string;
  target_id: string | null;
  details: Json | null;
  request_id: string | null;
}

export interface Database {
  tenants: TenantsTable;
  tenant_api_secrets: TenantApiSecretsTable;
  users: UsersTable;
  mates: MatesTable;
  signing_keys: SigningKeysTable;
  sign_in_failures: SignInFailuresTable;
  processes: ProcessesTable;
  process_fields: ProcessFieldsTable;
  process_rules: ProcessRulesTable;
  audit_log: AuditLogTable;
}
