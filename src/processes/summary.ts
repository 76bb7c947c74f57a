/**
 * What people see of processes (docs/people-api.md §4): the overview summary of every process of
 * a tenant — state, queue counts, open run, last Mate contact — and the full detail of one.
 * Counts for all processes come from the queue counters (counters.ts) in ONE statement, never one
 * per process and never a COUNT(*) over the tenant's tasks.
 */
import { sql, type Kysely } from 'kysely';
import type { Calendar, Database, FieldType, RuleType } from '../db/types.js';
import type { ProcessDef } from './store.js';
import { Refusal } from '../lib/errors.js';
import { localDate, localWeekday, parseDateTimeInput } from '../lib/time.js';
import { readQueueCounters, type CounterValues } from './counters.js';

export interface QueueCounts {
  ready: number;
  needsData: number;
  needsApproval: number;
  manual: number;
  error: number;
  solved: number;
  locked: number;
  urgent: number;
  overdue: number;
  notActiveYet: number;
}

export interface ProcessSummary {
  id: number;
  key: string;
  name: string;
  archived: boolean;
  description: string;
  tasksEnabled: boolean;
  state: {
    gateOpen: boolean;
    blockedToday: boolean;
    stoppedByErrors: boolean;
    okToRun: boolean;
    failure: null | { message: string; at: Date };
  };
  counts: QueueCounts;
  openRun: null | { id: number; startedAt: Date; lastActivityAt: Date };
  lastMateContactAt: Date | null;
}

const ZERO: QueueCounts = {
  ready: 0,
  needsData: 0,
  needsApproval: 0,
  manual: 0,
  error: 0,
  solved: 0,
  locked: 0,
  urgent: 0,
  overdue: 0,
  notActiveYet: 0,
};

interface ProcessRow {
  id: number;
  process_key: string;
  name: string;
  archived_at: Date | null;
  description: string;
  tasks_enabled: boolean;
  gate_open: boolean;
  calendar: Calendar;
  stop_on_errors: boolean;
  error_limit: number;
  failure_message: string | null;
  failure_at: Date | null;
  run_id: number | null;
  run_started_at: Date | null;
  run_last_activity_at: Date | null;
  last_contact_at: Date | null;
}

/**
 * The processes with their open run and last Mate contact (the latest run's last activity: Mates
 * work a process through runs), in one statement.
 */
async function loadProcessRows(db: Kysely<Database>, tenantId: number, processId?: number, includeArchived = true): Promise<ProcessRow[]> {
  const { rows } = await sql<ProcessRow>`
    SELECT p.id, p.process_key, p.name, p.archived_at, p.description, p.tasks_enabled, p.gate_open, p.calendar,
      p.stop_on_errors, p.error_limit, p.failure_message, p.failure_at,
      o.id AS run_id, o.started_at AS run_started_at, o.last_activity_at AS run_last_activity_at,
      l.last_activity_at AS last_contact_at
    FROM processes p
    LEFT JOIN runs o ON o.tenant_id = p.tenant_id AND o.process_id = p.id AND o.finished_at IS NULL
    LEFT JOIN LATERAL (
      SELECT r.last_activity_at FROM runs r WHERE r.tenant_id = p.tenant_id AND r.process_id = p.id
      ORDER BY r.started_at DESC LIMIT 1) l ON true
    WHERE p.tenant_id = ${tenantId}
      ${processId === undefined ? sql`` : sql`AND p.id = ${processId}`}
      ${includeArchived ? sql`` : sql`AND p.archived_at IS NULL`}
    ORDER BY lower(p.name), p.id`.execute(db);
  return rows;
}

export function startOfDay(now: Date, timeZone: string): Date {
  return parseDateTimeInput(localDate(now, timeZone), timeZone) ?? now;
}

function blockedOn(calendar: Calendar, now: Date, timeZone: string): boolean {
  return (
    (calendar.blockedDates ?? []).includes(localDate(now, timeZone)) ||
    (calendar.blockedWeekdays ?? []).includes(localWeekday(now, timeZone))
  );
}

function toSummary(p: ProcessRow, c: CounterValues | undefined, now: Date, timeZone: string): ProcessSummary {
  const { takeable, ...counts } = c ?? { ...ZERO, takeable: false };
  const blockedToday = blockedOn(p.calendar, now, timeZone);
  const stoppedByErrors = p.stop_on_errors && counts.error > p.error_limit;
  return {
    id: p.id,
    key: p.process_key,
    name: p.name,
    archived: p.archived_at !== null,
    description: p.description,
    tasksEnabled: p.tasks_enabled,
    state: {
      gateOpen: p.gate_open,
      blockedToday,
      stoppedByErrors,
      // as OkToRun answers it (src/tasks/gate.ts)
      okToRun: p.gate_open && !blockedToday && !stoppedByErrors && (!p.tasks_enabled || takeable),
      failure: p.failure_at ? { message: p.failure_message ?? '', at: p.failure_at } : null,
    },
    counts,
    openRun: p.run_id !== null ? { id: p.run_id, startedAt: p.run_started_at!, lastActivityAt: p.run_last_activity_at! } : null,
    lastMateContactAt: p.last_contact_at,
  };
}

/** Every process of the tenant (archived ones only when asked), with counts from one read of the counters. */
export async function listProcessSummaries(
  db: Kysely<Database>,
  tenantId: number,
  timeZone: string,
  now: Date,
  opts: { includeArchived?: boolean } = {},
): Promise<ProcessSummary[]> {
  const [rows, counts] = await Promise.all([
    loadProcessRows(db, tenantId, undefined, opts.includeArchived ?? false),
    readQueueCounters(db, tenantId, now, startOfDay(now, timeZone)),
  ]);
  return rows.map((p) => toSummary(p, counts.get(p.id), now, timeZone));
}

export async function getProcessSummary(
  db: Kysely<Database>,
  tenantId: number,
  processId: number,
  timeZone: string,
  now: Date,
): Promise<ProcessSummary> {
  const [rows, counts] = await Promise.all([
    loadProcessRows(db, tenantId, processId),
    readQueueCounters(db, tenantId, now, startOfDay(now, timeZone), processId),
  ]);
  if (!rows[0]) throw new Refusal('process_not_found', `No process ${processId}`);
  return toSummary(rows[0], counts.get(processId), now, timeZone);
}

export interface FieldView {
  name: string;
  label: string;
  type: FieldType;
  required: boolean;
  isKey: boolean;
  unique: boolean;
  options: string[];
  default: unknown;
}

/** Every setting of docs/product.md §2 under its product name (fields and rules have routes of their own). */
export type ProcessSettings = { description: string } & Pick<
  ProcessDef,
  | 'tasksEnabled'
  | 'gateOpen'
  | 'calendar'
  | 'deadlinesEnabled'
  | 'defaultDeadlineSeconds'
  | 'defaultActivationOffsetSeconds'
  | 'retryAllowed'
  | 'maxRetries'
  | 'stopOnErrors'
  | 'errorLimit'
  | 'lockTimeoutSeconds'
  | 'requireApproval'
  | 'kpi'
  | 'runTimeoutSeconds'
>;

export async function loadFields(db: Kysely<Database>, tenantId: number, processId: number): Promise<FieldView[]> {
  const rows = await db
    .selectFrom('process_fields')
    .select(['name', 'label', 'type', 'required', 'is_key', 'is_unique', 'options', 'default_value'])
    .where('tenant_id', '=', tenantId)
    .where('process_id', '=', processId)
    .orderBy('position')
    .execute();
  return rows.map((f) => ({
    name: f.name,
    label: f.label || f.name,
    type: f.type,
    required: f.required,
    isKey: f.is_key,
    unique: f.is_unique,
    options: f.options ?? [],
    default: f.default_value ?? null,
  }));
}

export async function loadSettings(db: Kysely<Database>, tenantId: number, processId: number): Promise<ProcessSettings> {
  const p = await db.selectFrom('processes').selectAll().where('tenant_id', '=', tenantId).where('id', '=', processId).executeTakeFirst();
  if (!p) throw new Refusal('process_not_found', `No process ${processId}`);
  return {
    description: p.description,
    tasksEnabled: p.tasks_enabled,
    gateOpen: p.gate_open,
    calendar: { blockedDates: p.calendar?.blockedDates ?? [], blockedWeekdays: p.calendar?.blockedWeekdays ?? [] },
    deadlinesEnabled: p.deadlines_enabled,
    defaultDeadlineSeconds: p.default_deadline_seconds,
    defaultActivationOffsetSeconds: p.default_activation_offset_seconds,
    retryAllowed: p.retry_allowed,
    maxRetries: p.max_retries,
    stopOnErrors: p.stop_on_errors,
    errorLimit: p.error_limit,
    lockTimeoutSeconds: p.lock_timeout_seconds,
    requireApproval: p.require_approval,
    kpi: p.kpi,
    runTimeoutSeconds: p.run_timeout_seconds,
  };
}

export interface RuleView {
  id: number;
  name: string;
  type: RuleType;
  value: unknown;
  description: string;
  updatedAt: Date;
}

export async function listRules(db: Kysely<Database>, tenantId: number, processId: number): Promise<RuleView[]> {
  const rows = await db
    .selectFrom('process_rules')
    .select(['id', 'name', 'type', 'value', 'description', 'updated_at'])
    .where('tenant_id', '=', tenantId)
    .where('process_id', '=', processId)
    .orderBy('position')
    .orderBy('id')
    .execute();
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    type: r.type,
    value: r.value ?? null,
    description: r.description,
    updatedAt: r.updated_at,
  }));
}
