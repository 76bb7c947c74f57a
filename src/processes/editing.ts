/**
 * Changing processes (docs/people-api.md §4): rename, archive, settings, gate, the fields editor
 * and rules. Every write publishes a `process` change, which drops the cached definitions
 * (src/processes/cache.ts) so Mates see it at once on this server process.
 *
 * The fields editor refuses a change that tasks not yet Solved would violate, naming the field,
 * the reason and the number of tasks; Solved tasks are read-only and keep the values they had.
 */
import { sql, type Kysely } from 'kysely';
import type { Calendar, Database, KpiSettings, RequireApproval, RuleType } from '../db/types.js';
import type { Tx } from '../db/tx.js';
import { Refusal, problemsRefusal, type FieldProblem } from '../lib/errors.js';
import { RULE_TYPES, validateFields, type FieldInput } from './service.js';
import { updateProcessSettings, type ProcessSettingsPatch } from './store.js';
import { convertFieldValue } from './task-data.js';
import { loadFields, type FieldView } from './summary.js';

export async function requireProcess(
  db: Kysely<Database>,
  tenantId: number,
  processId: number,
): Promise<{ id: number; processKey: string; name: string }> {
  const p = await db
    .selectFrom('processes')
    .select(['id', 'process_key', 'name'])
    .where('tenant_id', '=', tenantId)
    .where('id', '=', processId)
    .executeTakeFirst();
  if (!p) throw new Refusal('process_not_found', `No process ${processId}`);
  return { id: p.id, processKey: p.process_key, name: p.name };
}

/** Renames or archives (unarchives) a process. */
export async function updateProcess(
  tx: Tx,
  tenantId: number,
  processId: number,
  patch: { name?: string; archived?: boolean },
  now: Date,
): Promise<void> {
  if (patch.name !== undefined && (patch.name.trim() === '' || patch.name.length > 200)) {
    throw new Refusal('invalid_field', 'name must be 1-200 characters', [
      { field: 'name', code: 'invalid_field', message: 'name must be 1-200 characters' },
    ]);
  }
  const r = await tx.db
    .updateTable('processes')
    .set({
      ...(patch.name !== undefined ? { name: patch.name.trim() } : {}),
      ...(patch.archived !== undefined ? { archived_at: patch.archived ? now : null } : {}),
      updated_at: now,
    })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', processId)
    .executeTakeFirst();
  if (Number(r.numUpdatedRows) === 0) throw new Refusal('process_not_found', `No process ${processId}`);
  tx.publish({ kind: 'process', tenantId, processId });
}

export interface SettingsInput {
  description?: string;
  tasksEnabled?: boolean;
  calendar?: Calendar;
  deadlinesEnabled?: boolean;
  defaultDeadlineSeconds?: number | null;
  defaultActivationOffsetSeconds?: number;
  retryAllowed?: boolean;
  maxRetries?: number;
  stopOnErrors?: boolean;
  errorLimit?: number;
  lockTimeoutSeconds?: number;
  requireApproval?: RequireApproval;
  kpi?: Partial<KpiSettings>;
  runTimeoutSeconds?: number;
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

function realDate(s: string): boolean {
  const m = DATE.exec(s);
  if (!m) return false;
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return d.getUTCFullYear() === Number(m[1]) && d.getUTCMonth() === Number(m[2]) - 1 && d.getUTCDate() === Number(m[3]);
}

/** Changes settings of docs/product.md §2 (the gate has its own operation); ranges are checked by the caller's schema. */
export async function updateSettings(tx: Tx, tenantId: number, processId: number, input: SettingsInput): Promise<void> {
  const problems: FieldProblem[] = [];
  if (input.calendar) {
    input.calendar.blockedDates.forEach((d, index) => {
      if (!realDate(d))
        problems.push({
          field: 'calendar.blockedDates',
          index,
          code: 'invalid_field',
          message: `calendar.blockedDates: "${d}" is not a date YYYY-MM-DD`,
        });
    });
    if (new Set(input.calendar.blockedWeekdays).size !== input.calendar.blockedWeekdays.length) {
      problems.push({ field: 'calendar.blockedWeekdays', code: 'invalid_field', message: 'calendar.blockedWeekdays lists a day twice' });
    }
  }
  if (problems.length) throw problemsRefusal(problems);
  const current = await tx.db
    .selectFrom('processes')
    .select(['kpi'])
    .where('tenant_id', '=', tenantId)
    .where('id', '=', processId)
    .forUpdate()
    .executeTakeFirst();
  if (!current) throw new Refusal('process_not_found', `No process ${processId}`);
  const patch: ProcessSettingsPatch = {};
  if (input.description !== undefined) patch.description = input.description;
  if (input.tasksEnabled !== undefined) patch.tasks_enabled = input.tasksEnabled;
  if (input.calendar !== undefined)
    patch.calendar = {
      blockedDates: [...new Set(input.calendar.blockedDates)].sort(),
      blockedWeekdays: [...input.calendar.blockedWeekdays].sort(),
    };
  if (input.deadlinesEnabled !== undefined) patch.deadlines_enabled = input.deadlinesEnabled;
  if (input.defaultDeadlineSeconds !== undefined) patch.default_deadline_seconds = input.defaultDeadlineSeconds;
  if (input.defaultActivationOffsetSeconds !== undefined) patch.default_activation_offset_seconds = input.defaultActivationOffsetSeconds;
  if (input.retryAllowed !== undefined) patch.retry_allowed = input.retryAllowed;
  if (input.maxRetries !== undefined) patch.max_retries = input.maxRetries;
  if (input.stopOnErrors !== undefined) patch.stop_on_errors = input.stopOnErrors;
  if (input.errorLimit !== undefined) patch.error_limit = input.errorLimit;
  if (input.lockTimeoutSeconds !== undefined) patch.lock_timeout_seconds = input.lockTimeoutSeconds;
  if (input.requireApproval !== undefined) patch.require_approval = input.requireApproval;
  if (input.kpi !== undefined) patch.kpi = { ...current.kpi, ...input.kpi };
  if (input.runTimeoutSeconds !== undefined) patch.run_timeout_seconds = input.runTimeoutSeconds;
  await updateProcessSettings(tx, tenantId, processId, patch);
}

/** Stop (closed) or Start (open) a process for Mates. */
export async function setGate(tx: Tx, tenantId: number, processId: number, open: boolean): Promise<void> {
  await requireProcess(tx.db, tenantId, processId);
  await updateProcessSettings(tx, tenantId, processId, { gate_open: open });
}

/** Tasks not Solved (nor deleted) of the process matching `where` (SQL over the task `t`). */
async function countOpenTasks(db: Kysely<Database>, tenantId: number, processId: number, where = sql`true`): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*) AS n FROM tasks t
    WHERE t.tenant_id = ${tenantId} AND t.process_id = ${processId} AND t.deleted_at IS NULL AND t.queue <> 'Solved' AND ${where}`.execute(
    db,
  );
  return Number(rows[0].n);
}

/** The task (alias t) holds a value for the field: present, not null, not empty text. */
export const hasValue = (name: string) =>
  sql`(t.data -> ${name}) IS NOT NULL AND jsonb_typeof(t.data -> ${name}) <> 'null' AND (t.data -> ${name}) <> '""'::jsonb`;

/** A field of the fields editor: `renamedFrom` names the existing field it renames (its values follow). */
export type FieldEdit = FieldInput & { renamedFrom?: string };

/**
 * Replaces the process's fields by `fields`, in their order (docs/product.md §3). A field is identified by
 * its name (ignoring case), or by `renamedFrom` when it renames an existing field: the new name may
 * not be another existing field's (409 conflict). Refused, naming each field and the number of
 * tasks, when tasks not yet Solved would violate the new definition: a type change over existing
 * values, removed dropdown options in use, a new required field they lack, a removed field that
 * holds values, or a change of the unique key fields while any such task exists. The task data of
 * a renamed field follows in src/tasks/fields.ts, which calls this.
 */
export async function replaceFields(
  tx: Tx,
  tenantId: number,
  processId: number,
  fields: FieldEdit[],
  timeZone: string,
): Promise<FieldView[]> {
  const invalid = validateFields(fields);
  const renamedFrom = new Set<string>();
  fields.forEach((f, index) => {
    if (f.renamedFrom === undefined) return;
    const from = f.renamedFrom.toLowerCase();
    if (renamedFrom.has(from))
      invalid.push({ index, field: f.name, code: 'invalid_field', message: `Field "${f.renamedFrom}" is renamed twice` });
    renamedFrom.add(from);
  });
  fields.forEach((f, index) => {
    if (f.default === undefined || f.default === null) return;
    const c = convertFieldValue(
      { name: f.name, type: f.type, required: false, isKey: false, isUnique: false, options: f.options ?? [], defaultValue: null },
      f.default,
      timeZone,
    );
    if (!c.ok)
      invalid.push({ index, field: f.name, code: 'invalid_field', message: `The default of field "${f.name}" is not ${c.expected}` });
    else f.default = c.value;
  });
  if (invalid.length) throw problemsRefusal(invalid);
  // one editor at a time per process: the process row is the lock
  await tx.db
    .selectFrom('processes')
    .select('id')
    .where('tenant_id', '=', tenantId)
    .where('id', '=', processId)
    .forUpdate()
    .executeTakeFirst();
  await requireProcess(tx.db, tenantId, processId);
  const old = await loadFields(tx.db, tenantId, processId);
  const oldByName = new Map(old.map((f) => [f.name.toLowerCase(), f]));
  // each new field's existing field: the one it renames, else the one of its name
  const origin = (f: FieldEdit) => oldByName.get((f.renamedFrom ?? f.name).toLowerCase());
  for (const [index, f] of fields.entries()) {
    if (f.renamedFrom === undefined) continue;
    const from = oldByName.get(f.renamedFrom.toLowerCase());
    if (!from) {
      const message = `Field "${f.renamedFrom}" to rename is not a field of this process`;
      throw new Refusal('invalid_field', message, [{ index, field: `fields[${index}].renamedFrom`, code: 'invalid_field', message }]);
    }
    const taken = oldByName.get(f.name.toLowerCase());
    if (taken && taken !== from) {
      const message = `Field "${from.name}" cannot be renamed to "${f.name}": a field of that name exists`;
      throw new Refusal('conflict', message, [{ index, field: f.name, code: 'conflict', message }]);
    }
  }
  const newNames = new Set(fields.map((f) => (origin(f)?.name ?? f.name).toLowerCase()));
  const conflicts: { field: string; index?: number; reason: string; affectedTasks: number }[] = [];
  const check = async (field: string, index: number | undefined, reason: string, where: ReturnType<typeof sql>) => {
    const n = await countOpenTasks(tx.db, tenantId, processId, where);
    if (n > 0) conflicts.push({ field, index, reason, affectedTasks: n });
  };
  for (const [index, f] of fields.entries()) {
    const o = origin(f);
    if (!o) {
      if (f.required && !(f.default !== undefined && f.default !== null))
        await check(f.name, index, 'is a new required field without a default', sql`true`);
      continue;
    }
    if (o.type !== f.type) await check(f.name, index, `changes type from ${o.type} to ${f.type} over existing values`, hasValue(o.name));
    if (o.type === 'dropdown' && f.type === 'dropdown') {
      const removed = o.options.filter((x) => !(f.options ?? []).includes(x));
      if (removed.length)
        await check(f.name, index, `removes options in use (${removed.join(', ')})`, sql`(t.data ->> ${o.name}) IN (${sql.join(removed)})`);
    }
    if (f.required && !o.required) await check(f.name, index, 'becomes required but tasks lack a value', sql`NOT (${hasValue(o.name)})`);
  }
  for (const o of old) {
    if (!newNames.has(o.name.toLowerCase())) await check(o.name, undefined, 'is removed but tasks hold values for it', hasValue(o.name));
  }
  const keyOf = (list: { name: string; isKey?: boolean; unique?: boolean }[]) =>
    list
      .filter((f) => f.isKey && f.unique)
      .map((f) => f.name.toLowerCase())
      .join(',');
  if (keyOf(old) !== keyOf(fields.map((f) => ({ ...f, name: origin(f)?.name ?? f.name }))))
    await check('(unique key)', undefined, 'changes the unique key fields', sql`true`);
  if (conflicts.length) {
    const problems: FieldProblem[] = conflicts.map((c) => ({
      field: c.field,
      ...(c.index !== undefined ? { index: c.index } : {}),
      code: 'conflict',
      message: `Field "${c.field}" ${c.reason}: ${c.affectedTasks} task${c.affectedTasks === 1 ? '' : 's'} not Solved would violate it`,
    }));
    throw new Refusal('conflict', problems[0].message, problems, { affectedTasks: Math.max(...conflicts.map((c) => c.affectedTasks)) });
  }
  await tx.db.deleteFrom('process_fields').where('tenant_id', '=', tenantId).where('process_id', '=', processId).execute();
  if (fields.length) {
    await tx.db
      .insertInto('process_fields')
      .values(
        fields.map((f, i) => ({
          tenant_id: tenantId,
          process_id: processId,
          position: i,
          name: f.name,
          label: f.label ?? f.name,
          type: f.type,
          options: JSON.stringify(f.type === 'dropdown' ? (f.options ?? []) : []),
          required: f.required ?? false,
          is_key: f.isKey ?? false,
          is_unique: f.unique ?? false,
          default_value: f.default === undefined || f.default === null ? null : JSON.stringify(f.default),
        })),
      )
      .execute();
  }
  await tx.db
    .updateTable('processes')
    .set({ updated_at: new Date() })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', processId)
    .execute();
  tx.publish({ kind: 'process', tenantId, processId });
  return loadFields(tx.db, tenantId, processId);
}

/** Checks a rule value against its type (docs/product.md §7); null = unset. Returns the problem or null. */
export function ruleValueProblem(type: RuleType, value: unknown): string | null {
  if (value === null || value === undefined) return null;
  switch (type) {
    case 'text':
    case 'richText':
      return typeof value === 'string' ? null : 'must be a string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? null : 'must be a number';
    case 'boolean':
      return typeof value === 'boolean' ? null : 'must be true or false';
    case 'list':
      return Array.isArray(value) && value.every((x) => typeof x === 'string') ? null : 'must be a list of strings';
    case 'table':
      return Array.isArray(value) &&
        value.every(
          (row) =>
            typeof row === 'object' &&
            row !== null &&
            !Array.isArray(row) &&
            Object.values(row).every((c) => c === null || ['string', 'number', 'boolean'].includes(typeof c)),
        )
        ? null
        : 'must be a list of row objects whose cells are strings, numbers, booleans or null';
  }
}

const RULE_NAME = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;

function checkRule(input: { name?: string; type?: RuleType; value?: unknown }, type: RuleType): void {
  if (input.name !== undefined && (!RULE_NAME.test(input.name) || input.name.toLowerCase() === 'processkey')) {
    const message = `Rule name "${input.name}" must start with a letter, hold only letters, digits and _ (at most 64), and not be processKey`;
    throw new Refusal('invalid_field', message, [{ field: 'name', code: 'invalid_field', message }]);
  }
  if (!RULE_TYPES.includes(type)) throw new Refusal('invalid_field', `Rule type "${type}" is not one of ${RULE_TYPES.join(', ')}`);
  const problem = ruleValueProblem(type, input.value);
  if (problem)
    throw new Refusal('invalid_field', `A ${type} rule's value ${problem}`, [
      { field: 'value', code: 'invalid_field', message: `value ${problem}` },
    ]);
}

async function ruleNameTaken(db: Kysely<Database>, tenantId: number, processId: number, name: string, exceptId?: number): Promise<void> {
  let q = db
    .selectFrom('process_rules')
    .select('id')
    .where('tenant_id', '=', tenantId)
    .where('process_id', '=', processId)
    .where((eb) => eb(eb.fn('lower', ['name']), '=', name.toLowerCase()));
  if (exceptId !== undefined) q = q.where('id', '<>', exceptId);
  if (await q.executeTakeFirst()) throw new Refusal('conflict', `A rule named "${name}" already exists in this process`);
}

export async function createRule(
  tx: Tx,
  tenantId: number,
  processId: number,
  input: { name: string; type: RuleType; value?: unknown; description?: string },
  now: Date,
): Promise<number> {
  checkRule(input, input.type);
  await requireProcess(tx.db, tenantId, processId);
  await ruleNameTaken(tx.db, tenantId, processId, input.name);
  const { rows } = await sql<{
    p: number;
  }>`SELECT coalesce(max(position) + 1, 0) AS p FROM process_rules WHERE tenant_id = ${tenantId} AND process_id = ${processId}`.execute(
    tx.db,
  );
  const row = await tx.db
    .insertInto('process_rules')
    .values({
      tenant_id: tenantId,
      process_id: processId,
      position: Number(rows[0].p),
      name: input.name,
      type: input.type,
      value: input.value === undefined || input.value === null ? null : JSON.stringify(input.value),
      description: input.description ?? '',
      updated_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  tx.publish({ kind: 'process', tenantId, processId });
  return row.id;
}

async function lockRule(tx: Tx, tenantId: number, processId: number, ruleId: number) {
  const r = await tx.db
    .selectFrom('process_rules')
    .select(['id', 'name', 'type', 'value', 'description'])
    .where('tenant_id', '=', tenantId)
    .where('process_id', '=', processId)
    .where('id', '=', ruleId)
    .forUpdate()
    .executeTakeFirst();
  if (!r) throw new Refusal('not_found', `No rule ${ruleId} in process ${processId}`);
  return r;
}

/**
 * Changes a rule's definition (name, type, description) and optionally its value. A type change
 * must come with a value of the new type unless the current value already fits it.
 */
export async function updateRule(
  tx: Tx,
  tenantId: number,
  processId: number,
  ruleId: number,
  patch: { name?: string; type?: RuleType; description?: string; value?: unknown },
  now: Date,
): Promise<{ before: Record<string, unknown> }> {
  const r = await lockRule(tx, tenantId, processId, ruleId);
  const type = patch.type ?? r.type;
  const value = patch.value !== undefined ? patch.value : r.value;
  checkRule({ name: patch.name, value }, type);
  if (patch.name !== undefined) await ruleNameTaken(tx.db, tenantId, processId, patch.name, ruleId);
  await tx.db
    .updateTable('process_rules')
    .set({
      ...(patch.name !== undefined ? { name: patch.name } : {}),
      ...(patch.type !== undefined ? { type: patch.type } : {}),
      ...(patch.description !== undefined ? { description: patch.description } : {}),
      ...(patch.value !== undefined ? { value: patch.value === null ? null : JSON.stringify(patch.value) } : {}),
      updated_at: now,
    })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', ruleId)
    .execute();
  tx.publish({ kind: 'process', tenantId, processId });
  return { before: { name: r.name, type: r.type, description: r.description, value: r.value } };
}

export async function deleteRule(tx: Tx, tenantId: number, processId: number, ruleId: number): Promise<void> {
  await lockRule(tx, tenantId, processId, ruleId);
  await tx.db.deleteFrom('process_rules').where('tenant_id', '=', tenantId).where('id', '=', ruleId).execute();
  tx.publish({ kind: 'process', tenantId, processId });
}
