/**
 * What the log keeps of a request and of an error (docs/operations.md "Logs"): no body, no
 * credential, no value a client sent.
 *
 * - A request is its method, path, host and client address; every query value but `count` is
 *   replaced (clients put `access_token`, `client_secret` or `password` in URLs).
 * - A PostgreSQL error is its SQLSTATE, constraint, table, column and routine, and its message
 *   with every quoted part replaced: its `detail`, `where` and the message's quoted values carry
 *   the failing row (task data, unique key values) and are left out.
 */
import type { FastifyRequest } from 'fastify';

/** Query parameters whose value is logged: the Mate API reads no other (TakeMany's count). */
const KEPT_QUERY = new Set(['count']);

export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const query = url
    .slice(q + 1)
    .split('&')
    .map((part) => {
      const eq = part.indexOf('=');
      const name = eq < 0 ? part : part.slice(0, eq);
      let decoded = name;
      try {
        decoded = decodeURIComponent(name.replace(/\+/g, ' '));
      } catch {
        // an undecodable name is logged as sent, its value never
      }
      return eq < 0 || KEPT_QUERY.has(decoded.toLowerCase()) ? part.slice(0, 200) : `${name.slice(0, 100)}=[redacted]`;
    })
    .join('&');
  return `${url.slice(0, q)}?${query}`;
}

export function requestSerializer(req: FastifyRequest): Record<string, unknown> {
  return {
    method: req.method,
    url: redactUrl(req.url),
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  };
}

/** Quoted parts of a database message ("…" and '…'): values, or names that are logged apart. */
function scrub(text: string): string {
  return text.replace(/"(?:[^"\\]|\\.)*"/g, '"…"').replace(/'(?:[^'\\]|\\.)*'/g, "'…'");
}

interface DbError extends Error {
  code?: string;
  severity?: string;
  constraint?: string;
  table?: string;
  column?: string;
  routine?: string;
  cause?: unknown;
}

function isDatabaseError(err: DbError): boolean {
  return typeof err.code === 'string' && /^[0-9A-Z]{5}$/.test(err.code) && (typeof err.severity === 'string' || 'routine' in err);
}

/** The error as logged: a database error without its row data; any other with message, stack and code. */
export function errorSerializer(err: unknown, depth = 0): unknown {
  if (!(err instanceof Error)) return err;
  const e = err as DbError;
  if (isDatabaseError(e)) {
    return {
      type: 'DatabaseError',
      code: e.code,
      message: scrub(e.message),
      constraint: e.constraint,
      table: e.table,
      column: e.column,
      routine: e.routine,
      stack: e.stack ? scrub(e.stack) : undefined,
    };
  }
  const out: Record<string, unknown> = { type: e.name, message: e.message, stack: e.stack };
  if (typeof e.code === 'string') out.code = e.code;
  if (e.cause !== undefined && depth < 3) out.cause = errorSerializer(e.cause, depth + 1);
  return out;
}
