/**
 * Contract-test helpers (docs/mate-api.md §9): send exactly the bytes and headers an official client
 * sends, and check answers the way that client reads them. Written for Queuemate; the clients'
 * behaviour is described in the test files, with the source file each one follows.
 */
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import type { FieldInput, RuleInput } from '../../src/processes/service.js';

/** Process PK of the checklist: coreSystemKey (text), numberField (number), flag (boolean). */
export const PK_FIELDS: FieldInput[] = [
  { name: 'coreSystemKey', type: 'text' },
  { name: 'numberField', type: 'number' },
  { name: 'flag', type: 'boolean' },
];

export const PK_RULES: RuleInput[] = [
  { name: 'mailTo', type: 'text', value: 'ops@example.com' },
  { name: 'limit', type: 'number', value: 250.5 },
  { name: 'dryRun', type: 'boolean', value: false },
  { name: 'countries', type: 'list', value: ['DK', 'SE'] },
  {
    name: 'vendors',
    type: 'table',
    value: [
      { name: 'Acme', account: '1000' },
      { name: 'Globex', account: '2000' },
    ],
  },
  { name: 'notes', type: 'richText', value: '<p>Be <b>careful</b></p>' },
  { name: 'unsetRule', type: 'text' },
];

export interface Wire {
  status: number;
  headers: Record<string, unknown>;
  text: string;
  /** the parsed JSON (undefined when the body is not JSON) */
  body: any;
}

export interface RawRequest {
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  payload?: string | Buffer;
}

export async function send(app: FastifyInstance, r: RawRequest): Promise<Wire> {
  const res = await app.inject({ method: r.method, url: r.url, headers: r.headers, payload: r.payload });
  let body: unknown;
  try {
    body = res.body ? JSON.parse(res.body) : undefined;
  } catch {
    body = undefined;
  }
  return { status: res.statusCode, headers: res.headers, text: res.body, body };
}

/**
 * Python's json.dumps with its defaults: separators ", " and ": ", ensure_ascii (non-ASCII as
 * lower-case \uXXXX escapes), keys in insertion order.
 */
export function pyDumps(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'number') return String(v);
  if (typeof v === 'string') {
    return JSON.stringify(v).replace(/[\u007f-\uffff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
  }
  if (Array.isArray(v)) return '[' + v.map(pyDumps).join(', ') + ']';
  return (
    '{' +
    Object.entries(v as Record<string, unknown>)
      .map(([k, x]) => `${pyDumps(k)}: ${pyDumps(x)}`)
      .join(', ') +
    '}'
  );
}

/** Exactly these keys, in any order. */
export function assertKeys(body: unknown, keys: string[], what = ''): void {
  assert.ok(body !== null && typeof body === 'object' && !Array.isArray(body), `${what}: an object expected, got ${JSON.stringify(body)}`);
  assert.deepEqual(Object.keys(body as object).sort(), [...keys].sort(), `${what}: keys of ${JSON.stringify(body)}`);
}

/** A Response (docs/mate-api.md §4): succeeded boolean, message a string, requestId a string, code on refusals. */
export function assertResponse(body: any, opts: { succeeded: boolean; code?: string; extra?: string[] }, what = ''): void {
  const keys = ['succeeded', 'message', 'requestId', ...(opts.extra ?? [])];
  if (!opts.succeeded || opts.code) keys.push('code');
  assertKeys(body, keys, what);
  assert.equal(typeof body.succeeded, 'boolean', what);
  assert.equal(body.succeeded, opts.succeeded, `${what}: ${JSON.stringify(body)}`);
  assert.equal(typeof body.message, 'string', what);
  assert.equal(typeof body.requestId, 'string', what);
  if (!opts.succeeded) assert.ok(body.message.length > 0, `${what}: a refusal has a message`);
  if (opts.code) assert.equal(body.code, opts.code, `${what}: ${JSON.stringify(body)}`);
}

/** The JSON answer headers of docs/mate-api.md §4. */
export function assertJsonHeaders(w: Wire, what = ''): void {
  assert.equal(w.headers['content-type'], 'application/json; charset=utf-8', what);
  assert.equal(w.headers['cache-control'], 'no-store', what);
  assert.equal(typeof w.headers['x-request-id'], 'string', what);
  if (w.body && typeof w.body === 'object' && 'requestId' in w.body)
    assert.equal(w.body.requestId, w.headers['x-request-id'], `${what}: requestId = X-Request-Id`);
}

/** Decodes a compact JWS without verifying it, as the clients do. */
export function decodeUnverified(token: string): { header: any; payload: any; signature: string } {
  const parts = token.split('.');
  assert.equal(parts.length, 3, 'a compact JWS has three segments');
  for (const p of parts) assert.match(p, /^[A-Za-z0-9_-]*$/, 'segments are base64url without padding');
  const dec = (s: string) => JSON.parse(Buffer.from(s, 'base64url').toString('utf8'));
  return { header: dec(parts[0]), payload: dec(parts[1]), signature: parts[2] };
}

/** A date-time of docs/mate-api.md §4: ms and a numeric offset, never Z. */
export const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}[+-]\d{2}:\d{2}$/;

/** Keys of a task object of process PK (docs/mate-api.md §6.1), in order. */
export const PK_TASK_KEYS = [
  'taskId',
  'reason',
  'runId',
  'processKey',
  'coreSystemKey',
  'numberField',
  'flag',
  'activationDate',
  'deadline',
  'urgent',
  'retryCount',
];
