/**
 * The logic of the Administration screens that is not UI: form checks that mirror the server's rules
 * (so a form refuses before sending), a refusal's field errors placed by the field, the audit log's
 * URL filters and its before → after in words, token expiries, the time zone list and the words for
 * notifications and webhook deliveries.
 */
import type { Delivery, DeliveryAttempt } from './api-types';
import { ApiError, errorMessage } from './http';
import { formatDateTime } from './time';

/** The server's rule for passwords people set (src/accounts/passwords.ts): 12 to 1024 characters. */
export const PASSWORD_MIN = 12;

export function passwordProblem(password: string): string | null {
  if (password.length < PASSWORD_MIN) return `At least ${PASSWORD_MIN} characters`;
  if (password.length > 1024) return 'At most 1024 characters';
  return null;
}

/** The server's rule for user and Mate names (src/accounts/service.ts). */
export function usernameProblem(username: string): string | null {
  if (!username) return 'Enter a username';
  if (username.length > 100) return 'At most 100 characters';
  if (!/^[A-Za-z0-9]/.test(username)) return 'Start with a letter or a digit';
  if (!/^[A-Za-z0-9._@+-]+$/.test(username)) return 'Only letters, digits and . _ @ + -';
  return null;
}

/** An http(s) URL without credentials, as the webhooks accept (src/events/webhook-subscriptions.ts). */
export function webhookUrlProblem(url: string): string | null {
  let u: URL;
  try {
    u = new URL(url.trim());
  } catch {
    return 'Enter a full URL, such as https://example.com/hooks/queuemate';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return 'The URL must start with http:// or https://';
  if (u.username || u.password) return 'The URL must not carry a user name or password';
  if (url.length > 2000) return 'At most 2000 characters';
  return null;
}

/** Event types ("task.solved") or families ("task.*"), as the webhooks accept. */
export function eventTypeProblem(types: string[]): string | null {
  const bad = types.find((t) => !/^(?:[a-z]+(?:_[a-z]+)*)\.(?:\*|[a-z]+(?:_[a-z]+)*)$/.test(t));
  return bad === undefined ? null : `"${bad}" is not an event type such as task.solved or task.*`;
}

/** The event types and families offered when choosing what an endpoint receives (docs/events.md §2). */
export const EVENT_TYPE_SUGGESTIONS = [
  'task.*',
  'task.created',
  'task.taken',
  'task.solved',
  'task.manual',
  'task.error',
  'task.retry',
  'task.moved',
  'task.lock_expired',
  'process.*',
  'process.gate',
  'process.settings',
  'process.failure_reported',
  'process.stopped_by_errors',
  'run.*',
  'run.started',
  'run.finished',
  'webhook.disabled',
];

/**
 * A refusal's problems placed by the form's fields: a problem naming a field (`errors[].field`, or
 * for a refusal without field errors its message) goes to the first field whose pattern matches;
 * the rest is the form's message in words.
 */
export function placeFieldErrors<F extends string>(
  err: unknown,
  fields: Record<F, RegExp>,
): { byField: Partial<Record<F, string>>; message: string | null } {
  const byField: Partial<Record<F, string>> = {};
  const names = Object.keys(fields) as F[];
  const match = (text: string) => names.find((f) => fields[f].test(text));
  if (!(err instanceof ApiError)) return { byField, message: errorMessage(err) };
  const rest: string[] = [];
  for (const e of err.fieldErrors) {
    const f = e.field !== undefined ? match(e.field) : undefined;
    if (f && byField[f] === undefined) byField[f] = e.message;
    else rest.push(e.message);
  }
  if (err.fieldErrors.length === 0) {
    const f = match(err.message);
    if (f) byField[f] = err.message;
    else rest.push(err.message);
  }
  return { byField, message: rest.length ? rest.join(' ') : null };
}

export const AUDIT_TARGETS = ['user', 'mate', 'tenant', 'webhook', 'process', 'rule'];
export const AUDIT_ACTIONS = [
  'user.create',
  'user.update',
  'user.resetPassword',
  'mate.create',
  'mate.update',
  'mate.resetPassword',
  'tenant.update',
  'tenant.rotateApiSecret',
  'webhook.create',
  'webhook.update',
  'webhook.delete',
  'webhook.secret',
  'webhook.settings',
  'process.create',
  'process.update',
  'process.settings',
  'process.fields',
  'rule.create',
  'rule.update',
  'rule.delete',
  'rule.value',
];

function show(v: unknown): string {
  if (v === null || v === undefined || v === '') return '—';
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return String(v);
  return JSON.stringify(v);
}

export interface Change {
  key: string;
  before: string | null;
  after: string;
}

/**
 * An audit entry's details as lines: `before`/`after` objects become "key: before → after" for the
 * keys that changed (a creation has only after); other details are shown as they are.
 */
export function auditChanges(details: Record<string, unknown> | null | undefined): Change[] {
  if (!details) return [];
  const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  const { before, after, ...rest } = details;
  const out: Change[] = [];
  if (isObj(after) || isObj(before)) {
    const b = isObj(before) ? before : null;
    const a = isObj(after) ? after : {};
    for (const key of [...new Set([...Object.keys(b ?? {}), ...Object.keys(a)])]) {
      if (b && show(b[key]) === show(a[key])) continue;
      out.push({ key, before: b ? show(b[key]) : null, after: show(a[key]) });
    }
  }
  for (const [key, v] of Object.entries(rest)) out.push({ key, before: null, after: show(v) });
  return out;
}

/** An ISO expiry `days` from now at the end of that day in UTC (the server takes at most 366 days). */
export function tokenExpiry(days: number, now: Date = new Date()): string {
  const d = new Date(now.getTime() + days * 86_400_000);
  d.setUTCHours(23, 59, 59, 0);
  return d.toISOString();
}

export const TOKEN_LIFETIMES = [
  { value: '7', label: '7 days' },
  { value: '30', label: '30 days' },
  { value: '90', label: '90 days' },
  { value: '180', label: '180 days' },
  { value: '365', label: '1 year' },
];

/** IANA time zones this browser knows, sorted, with UTC and the current one always present. */
export function timeZones(current?: string): string[] {
  let zones: string[] = [];
  try {
    zones = (Intl as unknown as { supportedValuesOf(k: string): string[] }).supportedValuesOf('timeZone');
  } catch {
    zones = [];
  }
  const set = new Set(zones);
  set.add('UTC');
  if (current) set.add(current);
  return [...set].sort();
}

/** What happens to the old API secret after a rotation, in words. */
export function graceWords(previousValidUntil: string, timeZone: string, now: Date = new Date()): string {
  const until = new Date(previousValidUntil);
  if (until.getTime() <= now.getTime())
    return 'The old secret stopped working at once: Mates using it must get the new one before they sign in again.';
  return `The old secret, and the Mate tokens issued with it, keep working until ${formatDateTime(previousValidUntil, timeZone)}. Give every robot the new secret before then.`;
}

export const NOTIFICATION_KINDS: Record<string, { label: string; color: string }> = {
  failure: { label: 'Failure reported', color: 'red' },
  stoppedByErrors: { label: 'Stopped by errors', color: 'orange' },
  webhookDisabled: { label: 'Webhook disabled', color: 'grape' },
  info: { label: 'Information', color: 'blue' },
};

export function notificationKind(kind: string): { label: string; color: string } {
  return NOTIFICATION_KINDS[kind] ?? { label: kind, color: 'gray' };
}

/** A webhook delivery in words: "Delivered (200) in 12 ms", "Failed after 5 attempts: …", "Waiting (attempt 2)". */
export function deliveryWords(d: Pick<Delivery, 'status' | 'attempts' | 'lastStatusCode' | 'lastError' | 'durationMs'>): string {
  const code = d.lastStatusCode !== null ? ` (HTTP ${d.lastStatusCode})` : '';
  const took = d.durationMs !== null ? ` in ${d.durationMs} ms` : '';
  if (d.status === 'delivered') return `Delivered${code}${took}`;
  const why = d.lastError ? `: ${d.lastError}` : '';
  const attempts = `${d.attempts} attempt${d.attempts === 1 ? '' : 's'}`;
  if (d.status === 'failed') return `Failed after ${attempts}${code}${why}`;
  return d.attempts === 0 ? 'Waiting for its first attempt' : `Retrying after ${attempts}${code}${why}`;
}

/** One delivery attempt in words: "HTTP 200 in 7 ms", "No answer after 10000 ms: timed out". */
export function attemptWords(a: Pick<DeliveryAttempt, 'statusCode' | 'durationMs' | 'error'>): string {
  const head = a.statusCode !== null ? `HTTP ${a.statusCode} in ${a.durationMs} ms` : `No answer after ${a.durationMs} ms`;
  return a.error ? `${head}: ${a.error}` : head;
}
