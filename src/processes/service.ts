/** Processes: their settings, fields and rules (docs/product.md §2, docs/product.md §3, docs/product.md §7). */
import type { Kysely } from 'kysely';
import type { Database, FieldType, RuleType } from '../db/types.js';
import { Refusal, problemsRefusal, type FieldProblem } from '../lib/errors.js';
import { sql } from 'kysely';
import { inTransaction, type Tx } from '../db/tx.js';
import { callerMateId, type Caller } from '../lib/caller.js';
import { loadRules, PROCESS_KEY, type ProcessDef } from './store.js';

export const FIELD_TYPES: readonly FieldType[] = ['text', 'number', 'integer', 'boolean', 'date', 'datetime', 'dropdown', 'email'];
export const RULE_TYPES: readonly RuleType[] = ['text', 'number', 'boolean', 'list', 'table', 'richText'];
/** Keys with a meaning of their own in task data (docs/mate-api.md §6.3); no field may take these names. */
export const RESERVED_KEYS = [
  'taskId',
  'reason',
  'runId',
  'processKey',
  'comment',
  'newNote',
  'activationDate',
  'deadline',
  'urgent',
  'queue',
  'error',
  'retryCount',
];
const RESERVED_LOWER = new Set(RESERVED_KEYS.map((k) => k.toLowerCase()));

const NAME = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;

export interface FieldInput {
  name: string;
  label?: string;
  type: FieldType;
  required?: boolean;
  isKey?: boolean;
  unique?: boolean;
  options?: string[];
  default?: unknown;
}

export interface RuleInput {
  name: string;
  type: RuleType;
  value?: unknown;
  description?: string;
}

export interface CreateProcessInput {
  processKey: string;
  name?: string;
  description?: string;
  tasksEnabled?: boolean;
  fields?: FieldInput[];
  rules?: RuleInput[];
}

export function validateFields(fields: FieldInput[]): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const seen = new Set<string>();
  fields.forEach((f, index) => {
    const bad = (message: string) => problems.push({ index, field: f?.name, code: 'invalid_field', message });
    if (typeof f !== 'object' || f === null) return bad(`Field ${index} must be an object`);
    if (typeof f.name !== 'string' || !NAME.test(f.name))
      return bad(`Field name "${f.name}" must start with a letter and hold only letters, digits and _ (at most 64)`);
    if (RESERVED_LOWER.has(f.name.toLowerCase())) return bad(`Field name "${f.name}" is reserved (${RESERVED_KEYS.join(', ')})`);
    if (seen.has(f.name.toLowerCase())) return bad(`Field name "${f.name}" is used twice (names compare ignoring case)`);
    seen.add(f.name.toLowerCase());
    if (!FIELD_TYPES.includes(f.type)) return bad(`Field "${f.name}" has type "${f.type}", not one of ${FIELD_TYPES.join(', ')}`);
    if (f.type === 'dropdown') {
      if (!Array.isArray(f.options) || f.options.length === 0 || f.options.some((o) => typeof o !== 'string' || o === '')) {
        return bad(`Dropdown field "${f.name}" needs a list of non-empty options`);
      }
    } else if (f.options !== undefined && f.options.length > 0) {
      return bad(`Field "${f.name}" of type ${f.type} cannot have options`);
    }
    if (f.unique && !f.isKey) return bad(`Field "${f.name}" can be unique only if it is a key field`);
  });
  return problems;
}

export function validateRules(rules: RuleInput[]): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const seen = new Set<string>();
  rules.forEach((r, index) => {
    const bad = (message: string) => problems.push({ index, field: r?.name, code: 'invalid_field', message });
    if (typeof r.name !== 'string' || !NAME.test(r.name))
      return bad(`Rule name "${r.name}" must start with a letter and hold only letters, digits and _`);
    if (r.name.toLowerCase() === 'processkey') return bad('No rule may be named processKey');
    if (seen.has(r.name.toLowerCase())) return bad(`Rule name "${r.name}" is used twice`);
    seen.add(r.name.toLowerCase());
    if (!RULE_TYPES.includes(r.type)) return bad(`Rule "${r.name}" has type "${r.type}", not one of ${RULE_TYPES.join(', ')}`);
  });
  return problems;
}

export async function createProcess(
  db: Kysely<Database>,
  tenantId: number,
  input: CreateProcessInput,
): Promise<{ id: number; processKey: string }> {
  if (typeof input.processKey !== 'string' || !PROCESS_KEY.test(input.processKey)) {
    throw new Refusal('invalid_field', `ProcessKey "${input.processKey}" must be 1-100 URL-safe characters (letters, digits, . _ ~ -)`);
  }
  const fields = input.fields ?? [];
  const rules = input.rules ?? [];
  const problems = [...validateFields(fields), ...validateRules(rules)];
  if (problems.length) throw problemsRefusal(problems);
  return inTransaction(db, async (trx) => {
    const taken = await trx
      .selectFrom('processes')
      .select('id')
      .where('tenant_id', '=', tenantId)
      .where((eb) => eb(eb.fn('lower', ['process_key']), '=', input.processKey.toLowerCase()))
      .executeTakeFirst();
    if (taken) throw new Refusal('conflict', `A process with ProcessKey "${input.processKey}" already exists`);
    const p = await trx
      .insertInto('processes')
      .values({
        tenant_id: tenantId,
        process_key: input.processKey,
        name: input.name ?? input.processKey,
        description: input.description ?? '',
        tasks_enabled: input.tasksEnabled ?? true,
      })
      .returning(['id', 'process_key'])
      .executeTakeFirstOrThrow();
    if (fields.length) {
      await trx
        .insertInto('process_fields')
        .values(
          fields.map((f, i) => ({
            tenant_id: tenantId,
            process_id: p.id,
            position: i,
            name: f.name,
            label: f.label ?? f.name,
            type: f.type,
            options: JSON.stringify(f.options ?? []),
            required: f.required ?? false,
            is_key: f.isKey ?? false,
            is_unique: f.unique ?? false,
            default_value: f.default === undefined ? null : JSON.stringify(f.default),
          })),
        )
        .execute();
    }
    if (rules.length) {
      await trx
        .insertInto('process_rules')
        .values(
          rules.map((r, i) => ({
            tenant_id: tenantId,
            process_id: p.id,
            position: i,
            name: r.name,
            type: r.type,
            value: r.value === undefined ? null : JSON.stringify(r.value),
            description: r.description ?? '',
          })),
        )
        .execute();
    }
    return { id: p.id, processKey: p.process_key };
  });
}

/** Failure (docs/mate-api.md §7.4): sets the process's Failure state and keeps a notification; the run stays open. */
export async function reportFailure(tx: Tx, caller: Caller, proc: ProcessDef, message: string): Promise<void> {
  await sql`UPDATE processes SET failure_message = ${message}, failure_at = ${caller.now}
    WHERE tenant_id = ${caller.tenantId} AND id = ${proc.id}`.execute(tx.db);
  await sql`INSERT INTO notifications (tenant_id, process_id, kind, message, mate_id, created_at)
    VALUES (${caller.tenantId}, ${proc.id}, 'failure', ${message}, ${callerMateId(caller)}, ${caller.now})`.execute(tx.db);
  tx.publish({ kind: 'process', tenantId: caller.tenantId, processId: proc.id });
}

/** GetRules (docs/mate-api.md §7.5): `{processKey, <name>: <typed value>, …}`; unset values are null. */
export async function getRules(db: Kysely<Database>, proc: ProcessDef): Promise<Record<string, unknown>> {
  const rules = await loadRules(db, proc.tenantId, proc.id);
  const out: Record<string, unknown> = { processKey: proc.processKey };
  for (const r of rules) {
    let v = r.value ?? null;
    if (v !== null) {
      if (r.type === 'number') v = typeof v === 'number' ? v : Number(v);
      else if (r.type === 'boolean') v = v === true || v === 'true';
      else if (r.type === 'list') v = Array.isArray(v) ? v.map((x) => String(x)) : [];
      else if (r.type === 'table') v = Array.isArray(v) ? v.filter((x) => typeof x === 'object' && x !== null) : [];
      else v = String(v);
    }
    // rule names are user-defined and may be __proto__-like: define, never assign
    Object.defineProperty(out, r.name, { value: v, enumerable: true, writable: true, configurable: true });
  }
  return out;
}
