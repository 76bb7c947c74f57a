/** People's API helpers: users of each role with a personal access token, cookie sessions, requests. */
import type { FastifyInstance, InjectOptions } from 'fastify';
import type { Store } from '../../src/db/store.js';
import { createUser } from '../../src/accounts/service.js';
import { createPersonalToken } from '../../src/accounts/sessions.js';
import type { Role } from '../../src/accounts/service.js';
import { recordSecret } from './log-sink.js';

export const USER_PASSWORD = 'a-long-enough-password';

export interface TestPerson {
  userId: number;
  username: string;
  role: Role;
  token: string;
}

/** A user of `role` with a personal access token valid for 30 days from `now`. */
export async function personWithToken(
  store: Store,
  tenantId: number,
  role: Role,
  username: string = role,
  now = new Date(),
): Promise<TestPerson> {
  const user = await createUser(store.db, tenantId, { username, role, password: USER_PASSWORD });
  const t = await createPersonalToken(
    store.db,
    tenantId,
    user.id,
    { name: 'test', expiresAt: new Date(now.getTime() + 30 * 86_400_000) },
    now,
  );
  recordSecret(USER_PASSWORD, t.token);
  return { userId: user.id, username, role, token: t.token };
}

/** A user of every role. */
export async function peopleOfEveryRole(store: Store, tenantId: number, prefix = '', now = new Date()): Promise<Record<Role, TestPerson>> {
  const out = {} as Record<Role, TestPerson>;
  for (const role of ['admin', 'developer', 'agent', 'viewer'] as const)
    out[role] = await personWithToken(store, tenantId, role, `${prefix}${role}`, now);
  return out;
}

export interface Session {
  cookie: string;
  csrf: string;
  body: any;
}

/** Signs in through POST /v1/session and returns the cookie and CSRF token. */
export async function signIn(app: FastifyInstance, clientId: string, username: string, password = USER_PASSWORD): Promise<Session> {
  const res = await app.inject({ method: 'POST', url: '/v1/session', payload: { clientId, username, password } });
  if (res.statusCode !== 200) throw new Error(`sign-in failed: ${res.statusCode} ${res.body}`);
  const setCookie = String(res.headers['set-cookie']);
  const cookie = setCookie.split(';')[0];
  recordSecret(password, cookie.slice(cookie.indexOf('=') + 1), res.json().csrfToken);
  return { cookie, csrf: res.json().csrfToken, body: res.json() };
}

/** A request with a personal access token. */
export function asPerson(app: FastifyInstance, person: { token: string }, opts: InjectOptions) {
  return app.inject({ ...opts, headers: { ...(opts.headers ?? {}), authorization: `Bearer ${person.token}` } });
}

/** A request with a cookie session (and its CSRF token). */
export function asSession(app: FastifyInstance, s: Session, opts: InjectOptions) {
  return app.inject({ ...opts, headers: { cookie: s.cookie, 'x-csrf-token': s.csrf, ...(opts.headers ?? {}) } });
}
