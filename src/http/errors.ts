/**
 * What every HTTP surface does with an error a handler throws: a Refusal is answered as itself;
 * the framework's own body errors and a store that is down become refusals with their codes; any
 * other error is an internal error, logged with its details and answered with none of them.
 */
import type { FastifyRequest } from 'fastify';
import { Refusal } from '../lib/errors.js';
import { isStoreUnavailable } from '../db/store.js';

export function asRefusal(err: unknown, req: FastifyRequest, bodyLimit: number): Refusal {
  if (err instanceof Refusal) return err;
  const fe = err as { statusCode?: number; code?: string; message?: string };
  if (fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || fe.statusCode === 413) {
    return new Refusal('payload_too_large', `The body is larger than ${bodyLimit} bytes`);
  }
  if (fe.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || fe.statusCode === 415) {
    return new Refusal('unsupported_media_type', 'Content-Type must be application/json');
  }
  if (fe.statusCode === 400 && fe.code?.startsWith('FST_ERR_CTP')) {
    return new Refusal('invalid_body', fe.message ?? 'The body could not be read');
  }
  if (isStoreUnavailable(err) || fe.statusCode === 503) {
    req.log.error({ err }, 'store unavailable');
    return new Refusal('unavailable', 'The service is unavailable; try again shortly');
  }
  req.log.error({ err }, 'unexpected error');
  return new Refusal('internal_error', `An unexpected error occurred (request ${req.id})`);
}

/** Seconds a client should wait before retrying, for the codes that say to. */
export const RETRY_AFTER: Partial<Record<Refusal['code'], string>> = {
  unavailable: '5',
  idempotency_in_progress: '1',
  task_busy: '1',
};

/** How many times the request carries a header (Node keeps only the first of some, e.g. Authorization). */
export function headerCount(req: FastifyRequest, name: string): number {
  let n = 0;
  const raw = req.raw.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) if (raw[i].toLowerCase() === name) n++;
  return n;
}
