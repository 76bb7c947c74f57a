/** Sign-in, who-am-I and sign-out (docs/people-api.md §1). */
import { Type } from 'typebox';
import { signIn, csrfTokenFor, revokeCredential, type Person } from '../../accounts/sessions.js';
import { OverloadedError } from '../../auth/semaphore.js';
import { Refusal } from '../../lib/errors.js';
import { clearedSessionCookie, sessionCookie } from '../authenticate.js';
import { answer, defineRoute, ErrorBody, IsoDate, Nullable, type PeopleRoute } from '../route.js';

export const SessionBody = Type.Object({
  user: Type.Object({
    id: Type.Integer(),
    username: Type.String(),
    name: Type.String(),
    role: Type.Union([Type.Literal('admin'), Type.Literal('developer'), Type.Literal('agent'), Type.Literal('viewer')]),
  }),
  tenant: Type.Object({ id: Type.Integer(), clientId: Type.String(), name: Type.String(), timeZone: Type.String() }),
  csrfToken: Nullable(
    Type.String({ description: 'send as X-CSRF-Token on cookie-authenticated writes; null for a personal access token' }),
  ),
  expiresAt: Nullable(IsoDate),
});

export function sessionBody(person: Person, sessionToken: string | null) {
  return {
    user: person.user,
    tenant: person.tenant,
    csrfToken: sessionToken ? csrfTokenFor(sessionToken) : null,
    expiresAt: person.credential.expiresAt,
  };
}

export const SESSION_ROUTES: PeopleRoute[] = [
  defineRoute({
    method: 'POST',
    url: '/session',
    permission: 'session.create',
    tag: 'Session',
    summary: 'Sign in: sets the HttpOnly session cookie and answers the session with its CSRF token',
    curl: `curl -si -X POST $QM/v1/session -H 'Content-Type: application/json' -d '{"clientId":"demo","username":"admin","password":"…"}'`,
    body: Type.Object(
      {
        clientId: Type.String({ minLength: 1, maxLength: 200 }),
        username: Type.String({ minLength: 1, maxLength: 200 }),
        password: Type.String({ minLength: 1, maxLength: 1024 }),
      },
      { additionalProperties: false },
    ),
    response: { 200: SessionBody, 401: ErrorBody, 429: ErrorBody },
    async handler({ services, req, body }) {
      const now = services.clock.now();
      let signedIn;
      try {
        signedIn = await signIn(
          { db: services.db, now, throttle: services.auth.throttle, hash: (fn) => services.auth.hashSlots.run(fn) },
          { clientId: body.clientId, username: body.username, password: body.password, address: req.ip },
        );
      } catch (err) {
        if (err instanceof OverloadedError) throw new Refusal('unavailable', 'Too many sign-ins at once; try again shortly');
        if (err instanceof Refusal) {
          req.log.info(
            {
              signIn: {
                outcome: err.code,
                clientId: body.clientId.slice(0, 100),
                username: body.username.slice(0, 100),
                address: req.ip,
              },
            },
            'person sign-in refused',
          );
        }
        throw err;
      }
      req.log.info(
        { signIn: { outcome: 'success', tenantId: signedIn.person.tenant.id, userId: signedIn.person.user.id } },
        'person signed in',
      );
      return answer(200, sessionBody(signedIn.person, signedIn.token), {
        'set-cookie': sessionCookie(signedIn.token, signedIn.person.credential.expiresAt!, now, services.config.publicUrl),
      });
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/session',
    permission: 'self',
    tag: 'Session',
    summary: 'Who am I: user, role, tenant, time zone (and the CSRF token of a cookie session)',
    curl: `curl -s $QM/v1/session -H "Authorization: Bearer $TOKEN"`,
    response: { 200: SessionBody, 401: ErrorBody },
    async handler({ req, person }) {
      return sessionBody(person, req.sessionToken ?? null);
    },
  }),
  defineRoute({
    method: 'DELETE',
    url: '/session',
    permission: 'self',
    tag: 'Session',
    summary: 'Sign out: ends the cookie session and clears the cookie (a personal access token is revoked with DELETE /v1/me/tokens/:id)',
    curl: `curl -s -X DELETE $QM/v1/session -b "qm_session=$SESSION" -H "X-CSRF-Token: $CSRF"`,
    async handler({ services, person }) {
      if (person.credential.kind === 'session') {
        await services.units.autocommit((tx) =>
          revokeCredential(tx, person.tenant.id, person.user.id, person.credential.id, services.clock.now()),
        );
      }
      return answer(204, undefined, { 'set-cookie': clearedSessionCookie(services.config.publicUrl) });
    },
  }),
];
