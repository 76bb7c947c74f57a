/** Reading the Mate API's action bodies (docs/mate-api.md §3, docs/mate-api.md §6.4): lenient on input. */
import { Refusal } from '../lib/errors.js';
import { getKey, readInteger, readOptionalText, readComment } from '../lib/values.js';
import type { Caller } from '../lib/caller.js';
import { parseDateTimeInput } from '../lib/time.js';
import type { KpiOverrides } from '../kpis/rules.js';
import type { HandBackAction } from '../tasks/state-machine.js';
import type { ActivationDateInput, HandBackItem } from '../tasks/hand-back.js';

export type Body = Record<string, unknown>;

// KPI overrides are integers 0 to 2^31−1 (docs/mate-api.md §3).
const OVERRIDE_MAX = 2 ** 31 - 1;

/** Retry may set an activation date at most this far ahead (docs/mate-api.md §7.11). */
const MAX_ACTIVATION_AHEAD_MS = 366 * 24 * 3600 * 1000;

export function requireId(body: Body, key: 'taskId' | 'runId'): number {
  const v = getKey(body, key);
  if (v === undefined || v === null) {
    throw new Refusal('missing_field', `${key} is required`, [{ field: key, code: 'missing_field', message: `${key} is required` }]);
  }
  return readInteger(v, key, { min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER });
}

function readOverride(body: Body, key: 'overwriteSecondsSaved' | 'overwriteEntries'): number | null {
  const v = getKey(body, key);
  if (v === undefined || v === null || v === '') return null;
  return readInteger(v, key, { min: 0, max: OVERRIDE_MAX });
}

export function readOverrides(body: Body): KpiOverrides {
  return { overwriteSecondsSaved: readOverride(body, 'overwriteSecondsSaved'), overwriteEntries: readOverride(body, 'overwriteEntries') };
}

/** A Return item's action, in any case. */
export const ACTIONS: Record<string, HandBackAction> = { solved: 'Solved', manual: 'Manual', error: 'Error', retry: 'Retry' };

/**
 * Retry's `activationDate` (docs/mate-api.md §7.11), in the caller's time zone when it has no
 * offset: null when absent, null or `""`. A value that is not a date within 366 days of the call
 * is kept as sent: the hand-back refuses it for its task (invalid_activation_date), after the
 * task's own refusals, as one item of a batch.
 */
export function readActivationDate(value: unknown, caller: Caller): ActivationDateInput {
  if (value === undefined || value === null || value === '') return null;
  const at = typeof value === 'string' ? parseDateTimeInput(value, caller.timeZone) : null;
  if (!at || at.getTime() > caller.now.getTime() + MAX_ACTIVATION_AHEAD_MS) return { invalid: value };
  return at;
}

/** A task action (docs/mate-api.md §6.4) as a hand-back item. */
export function readAction(body: Body, caller: Caller, action: HandBackAction): HandBackItem {
  return {
    caller,
    taskId: requireId(body, 'taskId'),
    action,
    reason: readOptionalText(getKey(body, 'reason'), 'reason'),
    comment: readComment(body),
    overrides: readOverrides(body),
    activationDate: action === 'Retry' ? readActivationDate(getKey(body, 'activationDate'), caller) : null,
  };
}

/** A JSON object: not null, not an array. */
export function isJsonObject(value: unknown): value is Body {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A body that is a bare positive integer (the .NET client's `Solved(taskId)`, `FinishRun(runId)`). */
function isBareId(body: unknown): body is number {
  return typeof body === 'number' && Number.isSafeInteger(body) && body > 0;
}

/**
 * The body, once its top-level JSON type is the endpoint's (an object or an array); refused
 * otherwise. An endpoint with `bareId` also takes a bare positive integer, as `{ [bareId]: n }`.
 */
export function checkTopLevel(
  name: string,
  bodyType: 'object' | 'array' | undefined,
  body: unknown,
  bareId?: 'taskId' | 'runId',
): Body | unknown[] | undefined {
  if (bareId !== undefined && isBareId(body)) return { [bareId]: body };
  if (bodyType === 'array') {
    if (!Array.isArray(body)) throw new Refusal('invalid_body', `${name} takes a JSON array`);
    return body;
  }
  if (bodyType === 'object') {
    if (!isJsonObject(body)) {
      const hint =
        Array.isArray(body) && name === 'CreateTask'
          ? ' (an array of tasks belongs on CreateTasks)'
          : bareId !== undefined
            ? ` (or a bare positive ${bareId})`
            : '';
      throw new Refusal('invalid_body', `${name} takes a JSON object${hint}`);
    }
    return body;
  }
  return undefined;
}
