/**
 * Who calls the people's API: a personal access token (`Authorization: Bearer qmp_…`, no CSRF
 * check) or the session cookie (`qm_session`), whose writes must carry the session's CSRF token in
 * `X-CSRF-Token` and, when the browser sends an Origin, come from the server's own origin.
 * Mate tokens are refused here; people's credentials are refused on the Mate API (they are not JWTs).
 */
import type { FastifyRequest } from 'fastify';
import { Refusal } from '../lib/errors.js';
import { authenticatePersonToken, csrfTokenMatches, PAT_PREFIX, type Person } from '../accounts/sessions.js';
import type { Services } from '../services.js';

export const SESSION_COOKIE = 'qm_session';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const BEARER = /^Bearer +(\S+) *$/i;
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{20,200}$/;

/** The value of one cookie of the request, or undefined. */
export function cookieValue(req: FastifyRequest, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** Whether the request's Origin (when sent) is the server's: its configured public URL, or the address it was reached at. */
export function originAllowed(req: FastifyRequest, publicUrl: string | null): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  const own = new Set<string>([`${req.protocol}://${req.host}`]);
  if (publicUrl) own.add(new URL(publicUrl).origin);
  return own.has(origin);
}

export interface Authenticated {
  person: Person;
  /** the session's secret token, when the cookie authenticated the request */
  sessionToken: string | null;
}

/**
 * Authenticates the request; null when it carries no credentials at all. Throws unauthenticated
 * for credentials that are not valid, csrf_failed for a cookie write without the right token or origin.
 */
export async function authenticatePerson(services: Services, req: FastifyRequest): Promise<Authenticated | null> {
  const now = services.clock.now();
  const authorization = req.headers.authorization;
  if (authorization !== undefined) {
    const m = BEARER.exec(authorization);
    if (!m) throw new Refusal('unauthenticated', 'The Authorization header must be "Bearer qmp_<token>"');
    const token = m[1];
    if (!token.startsWith(PAT_PREFIX)) {
      throw new Refusal('unauthenticated', "Only personal access tokens (qmp_…) are accepted on /v1; a Mate's token is for the Mate API");
    }
    const person = TOKEN_SHAPE.test(token.slice(PAT_PREFIX.length))
      ? await authenticatePersonToken(services.db, token, 'personal', now)
      : null;
    if (!person) throw new Refusal('unauthenticated', 'The personal access token is invalid, expired or revoked');
    return { person, sessionToken: null };
  }
  const cookie = cookieValue(req, SESSION_COOKIE);
  if (cookie === undefined || cookie === '') return null;
  const person = TOKEN_SHAPE.test(cookie) ? await authenticatePersonToken(services.db, cookie, 'session', now) : null;
  if (!person) throw new Refusal('unauthenticated', 'The session has ended; sign in again');
  if (!SAFE_METHODS.has(req.method)) {
    const header = req.headers['x-csrf-token'];
    if (!csrfTokenMatches(cookie, typeof header === 'string' ? header : undefined)) {
      throw new Refusal('csrf_failed', 'A write with the session cookie needs the X-CSRF-Token header of the session');
    }
    if (!originAllowed(req, services.config.publicUrl))
      throw new Refusal('csrf_failed', `Requests from origin ${req.headers.origin} are not accepted`);
  }
  return { person, sessionToken: cookie };
}

/** Set-Cookie value for a session (Secure when the public URL is https). */
export function sessionCookie(token: string, expiresAt: Date, now: Date, publicUrl: string | null): string {
  const secure = publicUrl?.startsWith('https:') ? '; Secure' : '';
  const maxAge = Math.max(0, Math.floor((expiresAt.getTime() - now.getTime()) / 1000));
  return `${SESSION_COOKIE}=${token}; HttpOnly; SameSite=Lax; Path=/; Max-Age=${maxAge}${secure}`;
}

export function clearedSessionCookie(publicUrl: string | null): string {
  const secure = publicUrl?.startsWith('https:') ? '; Secure' : '';
  return `${SESSION_COOKIE}=; HttpOnly; SameSite=Lax; Path=/; Max-Age=0${secure}`;
}
