/**
 * POST /connect/token (docs/mate-api.md §2): the OAuth 2.0 password grant for Mates.
 *
 * Checks run in the contract's order: form, client, grant type, scope, throttle, user. Every
 * answer carries Cache-Control: no-store and Pragma: no-cache. Unknown user and wrong password
 * answer identically after the same work (a dummy argon2id check); so do unknown Client Id and
 * wrong secret (one query either way, constant-time comparison).
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { verifyDummy, verifyPassword } from '../../accounts/passwords.js';
import { constantTimeEqual, sha256 } from '../../lib/secrets.js';
import { OverloadedError } from '../../auth/semaphore.js';
import { isStoreUnavailable } from '../../db/store.js';
import { findClient, findMateByUsername } from '../../auth/store.js';
import { issueMateToken, MATE_SCOPE, TOKEN_LIFETIME_SECONDS } from '../../auth/tokens.js';

/** A token request is a few hundred bytes; 16 KiB leaves room and bounds hashing of long passwords. */
const FORM_BODY_LIMIT = 16 * 1024;
const FIELDS = ['grant_type', 'client_id', 'client_secret', 'username', 'password', 'scope'] as const;
type Field = (typeof FIELDS)[number];
// Compared against when the Client Id is unknown, so that path hashes and compares too.
const DUMMY_SECRET_HASH = sha256('queuemate-no-such-client');

const FORM = Symbol('form');
const NOT_FORM = Symbol('not form');
interface FormBody {
  [FORM]: string;
}

class OAuthError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly description: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(description);
  }
}

const messages = {
  badCredentials: 'The username or password is incorrect',
  badClient: 'Client authentication failed: unknown Client Id or wrong API secret',
};

function decodeFormComponent(s: string): string {
  return decodeURIComponent(s.replace(/\+/g, ' '));
}

/** application/x-www-form-urlencoded → every value of every key; null if not valid encoding. */
export function parseForm(raw: string): Map<string, string[]> | null {
  const out = new Map<string, string[]>();
  for (const part of raw.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    let key: string;
    let value: string;
    try {
      key = decodeFormComponent(eq < 0 ? part : part.slice(0, eq));
      value = eq < 0 ? '' : decodeFormComponent(part.slice(eq + 1));
    } catch {
      return null;
    }
    const list = out.get(key);
    if (list) list.push(value);
    else out.set(key, [value]);
  }
  return out;
}

/** HTTP Basic client credentials (RFC 6749 §2.3.1: each part form-encoded, then base64). */
function parseBasic(header: string | undefined): { clientId: string; secret: string } | 'malformed' | null {
  if (header === undefined || !/^basic(\s|$)/i.test(header)) return null;
  const m = /^basic +([A-Za-z0-9+/]+=*) *$/i.exec(header);
  if (!m) return 'malformed';
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return 'malformed';
  try {
    return { clientId: decodeFormComponent(decoded.slice(0, colon)), secret: decodeFormComponent(decoded.slice(colon + 1)) };
  } catch {
    return 'malformed';
  }
}

function send(reply: FastifyReply, status: number, body: object, headers: Record<string, string> = {}): FastifyReply {
  return reply
    .code(status)
    .headers({ 'cache-control': 'no-store', pragma: 'no-cache', ...headers })
    .send(body);
}

function sendError(reply: FastifyReply, e: OAuthError): FastifyReply {
  return send(reply, e.status, { error: e.error, error_description: e.description }, e.headers);
}

export const tokenRoutes: FastifyPluginAsync = async (app) => {
  // This scope only: the token endpoint reads forms, and anything else is invalid_request (not 415).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT }, (_req, body, done) => {
    done(null, { [FORM]: body as string } satisfies FormBody);
  });
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: FORM_BODY_LIMIT }, (_req, _body, done) => done(null, NOT_FORM));

  app.setErrorHandler((err: Error & { statusCode?: number }, request, reply) => {
    const status = err.statusCode ?? 500;
    if (status === 413) return sendError(reply, new OAuthError(413, 'invalid_request', 'The request body is too large'));
    if (status >= 400 && status < 500)
      return sendError(
        reply,
        new OAuthError(400, 'invalid_request', 'The request must be form-encoded (application/x-www-form-urlencoded)'),
      );
    if (isStoreUnavailable(err)) {
      request.log.error({ err }, 'store unavailable during sign-in');
      return sendError(
        reply,
        new OAuthError(503, 'temporarily_unavailable', 'The service is unavailable; try again shortly', { 'retry-after': '5' }),
      );
    }
    request.log.error({ err }, 'token endpoint failed');
    return sendError(reply, new OAuthError(500, 'server_error', 'The server could not handle the request'));
  });

  app.post('/connect/token', { bodyLimit: FORM_BODY_LIMIT }, async (request, reply) => {
    try {
      return await token(request, reply);
    } catch (err) {
      if (err instanceof OAuthError) return sendError(reply, err);
      if (err instanceof OverloadedError) {
        request.log.warn('sign-in refused: too many sign-ins at once');
        return sendError(
          reply,
          new OAuthError(503, 'temporarily_unavailable', 'Too many sign-ins at once; try again shortly', { 'retry-after': '1' }),
        );
      }
      throw err;
    }
  });
};

async function token(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const auth = request.server.services.auth;
  const address = request.ip;
  const invalidRequest = (msg: string) => new OAuthError(400, 'invalid_request', msg);

  // 1. form
  const body = request.body as FormBody | typeof NOT_FORM | undefined;
  if (body === undefined || body === null || typeof body !== 'object' || !(FORM in body)) {
    throw invalidRequest('The request must be form-encoded (application/x-www-form-urlencoded)');
  }
  const form = parseForm(body[FORM]);
  if (!form) throw invalidRequest('The form is not valid URL encoding');
  const fields: Partial<Record<Field, string>> = {};
  for (const name of FIELDS) {
    const values = form.get(name);
    if (!values) continue;
    if (values.length > 1) throw invalidRequest(`The field ${name} is repeated`);
    // RFC 6749 §3.1: a parameter without a value is treated as omitted
    if (values[0] !== '') fields[name] = values[0];
  }
  if (fields.grant_type === undefined) throw invalidRequest('The field grant_type is missing');
  // Node keeps only the first of repeated Authorization headers: an ambiguous request is refused
  if (request.raw.rawHeaders.filter((h, i) => i % 2 === 0 && h.toLowerCase() === 'authorization').length > 1) {
    throw invalidRequest('Send one Authorization header, not several');
  }
  const basic = parseBasic(request.headers.authorization);
  if (basic === 'malformed') throw invalidRequest('The Authorization header is not valid HTTP Basic');
  if (
    basic &&
    (fields.client_secret !== undefined ||
      (fields.client_id !== undefined && fields.client_id.toLowerCase() !== basic.clientId.toLowerCase()))
  ) {
    throw invalidRequest('Send the client credentials either with HTTP Basic or in the form, not both');
  }
  if (fields.grant_type === 'password') {
    if (fields.username === undefined) throw invalidRequest('The field username is missing');
    if (fields.password === undefined) throw invalidRequest('The field password is missing');
  }
  const clientId = basic ? basic.clientId : fields.client_id;
  const clientSecret = basic ? basic.secret : fields.client_secret;
  if (clientId === undefined || clientId === '') throw invalidRequest('The field client_id is missing');

  // 2. client
  const now = auth.clock.now();
  const client = await findClient(auth.store.db, clientId, now);
  const given = sha256(clientSecret ?? '');
  let secretVersion: number | null = null;
  for (const s of client?.secrets ?? [{ version: 0, hash: DUMMY_SECRET_HASH }]) {
    // every candidate is compared, in constant time, whatever matched before
    if (constantTimeEqual(given, s.hash) && client && clientSecret) secretVersion ??= s.version;
  }
  if (!client || secretVersion === null) {
    request.log.info(
      { signIn: { outcome: 'invalid_client', clientId: clientId.slice(0, 100), known: !!client, address } },
      'sign-in refused: client authentication failed',
    );
    throw new OAuthError(401, 'invalid_client', messages.badClient, basic ? { 'www-authenticate': 'Basic realm="queuemate"' } : {});
  }

  // 3. grant type, 4. scope
  if (fields.grant_type !== 'password') throw new OAuthError(400, 'unsupported_grant_type', 'Only grant_type=password is supported');
  if (fields.scope !== undefined && !fields.scope.split(' ').every((s) => s === '' || s === MATE_SCOPE)) {
    throw new OAuthError(400, 'invalid_scope', `The only scope is ${MATE_SCOPE}`);
  }

  // 5. throttle
  const username = fields.username!;
  const password = fields.password!;
  const logged = { clientId: client.clientId, username: username.slice(0, 100), address };
  const reserved = await auth.throttle.reserve(client.tenantId, username, address);
  if (!('granted' in reserved)) {
    request.log.warn({ signIn: { outcome: 'throttled', ...logged } }, 'sign-in refused: throttled');
    throw new OAuthError(429, 'invalid_grant', 'Too many failed sign-ins; try again later', {
      'retry-after': String(reserved.retryAfterSeconds),
    });
  }

  // 6. user: only Mates get tokens; a person's username is simply not found among them. This
  // sign-in already counts as a failure (reserved above): a wrong password keeps it.
  let passwordOk = false;
  let mate: Awaited<ReturnType<typeof findMateByUsername>> = null;
  try {
    mate = await findMateByUsername(auth.store.db, client.tenantId, username);
    passwordOk = mate
      ? await auth.hashSlots.run(() => verifyPassword(mate!.passwordHash, password))
      : await auth.hashSlots.run(() => verifyDummy(password));
  } catch (err) {
    // not checked after all (store down, too many sign-ins at once): the try does not count
    await auth.throttle.release(reserved.granted, { keepUser: true }).catch(() => {});
    throw err;
  }
  if (!mate || !passwordOk || mate.disabled) {
    const reason = !mate ? 'unknown_user' : !passwordOk ? 'wrong_password' : 'disabled';
    request.log.info({ signIn: { outcome: 'invalid_grant', reason, ...logged } }, 'sign-in refused');
    // The disabled state is told only to whoever knows the password.
    throw new OAuthError(400, 'invalid_grant', reason === 'disabled' ? 'This Mate is disabled' : messages.badCredentials);
  }

  await auth.throttle.release(reserved.granted);
  const { token: accessToken } = await issueMateToken(auth.keys, {
    issuer: auth.issuer,
    mateId: mate.id,
    clientId: client.clientId,
    credentialVersion: mate.credentialVersion,
    secretVersion,
    now,
  });
  request.log.info({ signIn: { outcome: 'success', ...logged, mateId: mate.id, secretVersion } }, 'Mate signed in');
  return send(reply, 200, { access_token: accessToken, expires_in: TOKEN_LIFETIME_SECONDS, token_type: 'Bearer', scope: MATE_SCOPE });
}
