/** The Mate API's answers (docs/mate-api.md §4–§6): Response objects, refusals, task objects and the dummy task. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Refusal } from '../lib/errors.js';
import { formatDateTime } from '../lib/time.js';
import type { ProcessDef } from '../processes/store.js';
import { formatTaskValues } from '../processes/task-data.js';
import type { TaskRow } from '../tasks/store.js';
import { MATE_API_STATUS } from './status.js';
import { authErrorHeaders } from '../auth/authenticate.js';
import { RETRY_AFTER } from '../http/errors.js';

export interface Answer {
  status?: number;
  headers?: Record<string, string>;
  body: unknown;
}

/** A successful Response (docs/mate-api.md §4): succeeded, message, the endpoint's keys, requestId. */
export function response(req: FastifyRequest, message: string, extra: Record<string, unknown> = {}): Answer {
  return { body: { succeeded: true, message, ...extra, requestId: req.id } };
}

/**
 * A refusal in the endpoint's own shape (docs/mate-api.md §5): its normal keys (`base`), then
 * succeeded false, message, code, requestId and the refusal's details; `errors` lists the
 * problems of a 400, or of a business refusal that has some.
 */
export function refusalBody(base: Record<string, unknown>, req: FastifyRequest, r: Refusal): Record<string, unknown> {
  const body: Record<string, unknown> = { ...base, succeeded: false, message: r.message, code: r.code, requestId: req.id, ...r.details };
  if (MATE_API_STATUS[r.code] === 400 || r.problems.length)
    body.errors = (r.problems.length ? r.problems : [{ code: r.code, message: r.message }]).slice(0, 100);
  return body;
}

/** A refusal answered in the endpoint's shape: its status, the body above, and the headers its code calls for. */
export function refusalAnswer(base: Record<string, unknown>, req: FastifyRequest, r: Refusal): Answer & { status: number } {
  const headers: Record<string, string> = {};
  const challenge = authErrorHeaders(r, req.headers.authorization !== undefined);
  if (challenge) headers['www-authenticate'] = challenge;
  const retryAfter = RETRY_AFTER[r.code];
  if (retryAfter) headers['retry-after'] = retryAfter;
  return { status: MATE_API_STATUS[r.code], body: refusalBody(base, req, r), headers };
}

export function send(reply: FastifyReply, status: number, body: unknown, headers: Record<string, string> = {}): FastifyReply {
  reply.code(status).header('cache-control', 'no-store').header('content-type', 'application/json; charset=utf-8');
  for (const [k, v] of Object.entries(headers)) reply.header(k, v);
  // a HEAD answer carries the status and headers only (RFC 9110 §9.3.2)
  return reply.send(reply.request.method === 'HEAD' ? '' : JSON.stringify(body));
}

/** The task object (docs/mate-api.md §6.1). */
export function taskObject(row: TaskRow, proc: ProcessDef, timeZone: string): Record<string, unknown> {
  const out: Record<string, unknown> = { taskId: row.id, reason: row.reason, runId: row.run_id, processKey: proc.processKey };
  const values = formatTaskValues(proc.fields, row.data, timeZone);
  for (const [k, v] of Object.entries(values)) {
    // field names may be __proto__-like on processes without fields: define, never assign
    Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  }
  out.activationDate = formatDateTime(row.activation_date, timeZone);
  out.deadline = proc.deadlinesEnabled && row.deadline ? formatDateTime(row.deadline, timeZone) : null;
  out.urgent = row.urgent;
  out.retryCount = row.retry_count;
  return out;
}

/** The keys of the dummy task (docs/mate-api.md §6.2), before message, code and requestId. */
export function dummyTaskBase(processKey: string): Record<string, unknown> {
  return { taskId: -1, reason: null, runId: -1, processKey };
}

export function dummyTask(processKey: string, code: string, message: string, requestId: string): Record<string, unknown> {
  return { ...dummyTaskBase(processKey), message, code, requestId };
}
