/**
 * Request bodies as JSON, read strictly (src/lib/json.ts: duplicate keys ignoring case refused,
 * prototype keys ordinary, depth bounded; a body that is not UTF-8 read as ISO-8859-1, docs/mate-api.md §3).
 */
import type { FastifyInstance } from 'fastify';
import { Refusal } from '../lib/errors.js';
import { decodeBody, parseJsonStrict } from '../lib/json.js';

const JSON_TYPE = /^application\/(?:json|[a-z0-9.+-]+\+json)\s*(?:;.*)?$/i;

/**
 * Replaces the instance's body parsers with the strict JSON reader; other content types → unsupported_media_type.
 * `allowEmpty`: an empty body is read as no body (the people's API: browsers send a Content-Type
 * on body-less POSTs); the routes that need a body refuse its absence themselves.
 */
export function strictJsonBodies(app: FastifyInstance, opts: { allowEmpty?: boolean } = {}): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (req, body, done) => {
    const type = req.headers['content-type'] ?? '';
    const buf = body as Buffer;
    if (opts.allowEmpty && buf.length === 0) return done(null, undefined);
    if (!JSON_TYPE.test(type)) {
      return done(
        new Refusal('unsupported_media_type', `Content-Type must be application/json, got ${type ? JSON.stringify(type) : 'none'}`),
        undefined,
      );
    }
    if (buf.length === 0) return done(new Refusal('invalid_body', 'The body is empty; a JSON value is required'), undefined);
    try {
      done(null, parseJsonStrict(decodeBody(buf)));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
}
