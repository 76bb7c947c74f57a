/**
 * Request ids: every answer carries one (X-Request-Id, and `requestId` in fixed-shape bodies), and
 * history rows keep the id of the request that made the change.
 */
import crypto from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** A proxy's X-Request-Id is used when it looks like an id: 1–128 of letters, digits and . _ : - */
export const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestIdFor(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : crypto.randomUUID();
}
