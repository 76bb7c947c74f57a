/** Reading processes with their fields and rules, scoped to one tenant. */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Calendar, Database, KpiSettings, RuleType } from '../db/types.js';
import type { TaskField } from './task-data.js';
import type { Tx } from '../db/tx.js';
import { PREPARED } from '../db/store.js';

/** A field of a process, in position order: the shape task data is validated against. */
export type ProcessField = TaskField;

export interface ProcessDef {
  tenantId: number;
  id: number;
  processKey: string;
  name: string;
  tasksEnabled: boolean;
  gateOpen: boolean;
  calendar: Calendar;
  deadlinesEnabled: boolean;
  defaultDeadlineSeconds: number | null;
  defaultActivationOffsetSeconds: number;
  retryAllowed: boolean;
  maxRetries: number;
  stopOnErrors: boolean;
  errorLimit: number;
  lockTimeoutSeconds: number;
  requireApproval: 'none' | 'mateCreated' | 'all';
  kpi: KpiSettings;
  runTimeoutSeconds: number;
  failureAt: Date | null;
  fields: ProcessField[];
}

/** The form of a ProcessKey (and the CHECK of processes.process_key). */
export const PROCESS_KEY = /^[A-Za-z0-9][A-Za-z0-9._~-]{0,99}$/;

/**
 * One query: the process (matched case-insensitively within the tenant) with its fields in order.
 * Another tenant's key is simply not found.
 */
export function loadProcessByKey(db: Kysely<Database>, tenantId: number, processKey: string): Promise<ProcessDef | null> {
  // a key no process can have (U+0000, too long, any other character) is not looked up
  if (!PROCESS_KEY.test(processKey)) return Promise.resolve(null);
  // an archived process is unknown to Mates (docs/people-api.md §4)
  return loadProcess(db, tenantId, sql`lower(p.process_key) = lower(${processKey}) AND p.archived_at IS NULL`);
}

export function loadProcessById(db: Kysely<Database>, tenantId: number, processId: number): Promise<ProcessDef | null> {
  return loadProcess(db, tenantId, sql`p.id = ${processId}`);
}

// columns named, not `p.*`: a prepared statement must keep its result type when a migration adds a column
async function loadProcess(db: Kysely<Database>, tenantId: number, match: RawBuilder<unknown>): Promise<ProcessDef | null> {
  const { rows } = await sql<Record<string, any>>`${sql.raw(PREPARED)}
    SELECT p.tenant_id, p.id, p.process_key, p.name, p.tasks_enabled, p.gate_open, p.calendar, p.deadlines_enabled,
      p.default_deadline_seconds, p.default_activation_offset_seconds, p.retry_allowed, p.max_retries, p.stop_on_errors,
      p.error_limit, p.lock_timeout_seconds, p.require_approval, p.kpi, p.run_timeout_seconds, p.failure_at,
      COALESCE((SELECT json_agg(json_build_object(
          'name', f.name, 'label', f.label, 'type', f.type, 'required', f.required, 'isKey', f.is_key,
          'isUnique', f.is_unique, 'options', f.options, 'defaultValue', f.default_value)
        ORDER BY f.position)
        FROM process_fields f WHERE f.tenant_id = p.tenant_id AND f.process_id = p.id), '[]'::json) AS fields
    FROM processes p
    WHERE p.tenant_id = ${tenantId} AND ${match}`.execute(db);
  const r = rows[0];
  if (!r) return null;
  return {
    tenantId: r.tenant_id,
    id: r.id,
    processKey: r.process_key,
    name: r.name,
    tasksEnabled: r.tasks_enabled,
    gateOpen: r.gate_open,
    calendar: { blockedDates: r.calendar?.blockedDates ?? [], blockedWeekdays: r.calendar?.blockedWeekdays ?? [] },
    deadlinesEnabled: r.deadlines_enabled,
    defaultDeadlineSeconds: r.default_deadline_seconds,
    defaultActivationOffsetSeconds: r.default_activation_offset_seconds,
    retryAllowed: r.retry_allowed,
    maxRetries: r.max_retries,
    stopOnErrors: r.stop_on_errors,
    errorLimit: r.error_limit,
    lockTimeoutSeconds: r.lock_timeout_seconds,
    requireApproval: r.require_approval,
    kpi: r.kpi,
    runTimeoutSeconds: r.run_timeout_seconds,
    failureAt: r.failure_at,
    fields: r.fields,
  };
}

export interface RuleRow {
  name: string;
  type: RuleType;
  value: unknown;
}

export async function loadRules(db: Kysely<Database>, tenantId: number, processId: number): Promise<RuleRow[]> {
  return db
    .selectFrom('process_rules')
    .select(['name', 'type', 'value'])
    .where('tenant_id', '=', tenantId)
    .where('process_id', '=', processId)
    .orderBy('position')
    .execute() as Promise<RuleRow[]>;
}

/**
 * Clears the Failure state (docs/product.md §7) of every process named by a change in `source`
 * (the task funnel's change relation) with `clears_failure`; returns the processes it cleared. A
 * process without a Failure state is not written (no row lock), so clearing costs a hand-back
 * one index probe.
 */
export function failureClearFromChanges(source: string): RawBuilder<unknown> {
  const s = sql.raw(source);
  return sql`UPDATE processes p SET failure_message = NULL, failure_at = NULL
    FROM (SELECT DISTINCT tenant_id, process_id FROM ${s} WHERE clears_failure) f
    WHERE p.tenant_id = f.tenant_id AND p.id = f.process_id AND p.failure_at IS NOT NULL
    RETURNING p.tenant_id, p.id AS process_id`;
}

/**
 * Clears the Failure state of one process outside a task change (a run started or finished,
 * docs/mate-api.md §7): the funnel's write for one process, named by its tenant and id.
 */
export async function clearFailure(tx: Tx, tenantId: number, processId: number): Promise<void> {
  const { rows } = await sql<{ tenant_id: number; process_id: number }>`${sql.raw(PREPARED)}
    UPDATE processes SET failure_message = NULL, failure_at = NULL
    WHERE tenant_id = ${tenantId} AND id = ${processId} AND failure_at IS NOT NULL
    RETURNING tenant_id, id AS process_id`.execute(tx.db);
  for (const r of rows) tx.publish({ kind: 'process', tenantId: r.tenant_id, processId: r.process_id });
}

/** Settings a test or the admin API may change (columns of `processes`). */
export type ProcessSettingsPatch = Partial<{
  description: string;
  gate_open: boolean;
  tasks_enabled: boolean;
  calendar: Calendar;
  deadlines_enabled: boolean;
  default_deadline_seconds: number | null;
  default_activation_offset_seconds: number;
  retry_allowed: boolean;
  max_retries: number;
  stop_on_errors: boolean;
  error_limit: number;
  lock_timeout_seconds: number;
  require_approval: 'none' | 'mateCreated' | 'all';
  kpi: KpiSettings;
  run_timeout_seconds: number;
}>;

export async function updateProcessSettings(tx: Tx, tenantId: number, processId: number, patch: ProcessSettingsPatch): Promise<void> {
  const values: Record<string, unknown> = { ...patch, updated_at: new Date() };
  if (patch.calendar) values.calendar = JSON.stringify(patch.calendar);
  if (patch.kpi) values.kpi = JSON.stringify(patch.kpi);
  await tx.db
    .updateTable('processes')
    .set(values as never)
    .where('tenant_id', '=', tenantId)
    .where('id', '=', processId)
    .execute();
  tx.publish({ kind: 'process', tenantId, processId });
}
