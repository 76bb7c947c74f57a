/** One's own personal access tokens and password (docs/people-api.md §1). */
import { Type } from 'typebox';
import { changeUserPassword, createPersonalToken, listPersonalTokens, openSession, revokePersonalToken } from '../../accounts/sessions.js';
import { Refusal } from '../../lib/errors.js';
import { sessionCookie } from '../authenticate.js';
import { answer, defineRoute, ErrorBody, IdParams, IsoDate, Nullable, type PeopleRoute } from '../route.js';
import { SessionBody, sessionBody } from './session.js';

const TokenInfo = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  createdAt: IsoDate,
  expiresAt: Nullable(IsoDate),
  lastUsedAt: Nullable(IsoDate),
});

export const ME_ROUTES: PeopleRoute[] = [
  defineRoute({
    method: 'GET',
    url: '/me/tokens',
    permission: 'self',
    tag: 'Session',
    summary: 'List my live personal access tokens (never the tokens themselves)',
    curl: `curl -s $QM/v1/me/tokens -H "Authorization: Bearer $TOKEN"`,
    response: { 200: Type.Object({ items: Type.Array(TokenInfo) }) },
    async handler({ services, person }) {
      return { items: await listPersonalTokens(services.db, person.tenant.id, person.user.id, services.clock.now()) };
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/me/tokens',
    permission: 'self',
    tag: 'Session',
    summary: 'Create a personal access token (qmp_…) with a name and an expiry; the token is shown once',
    curl: `curl -s -X POST $QM/v1/me/tokens -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"name":"nightly export","expiresAt":"2027-01-01T00:00:00Z"}'`,
    body: Type.Object(
      {
        name: Type.String({ minLength: 1, maxLength: 100 }),
        expiresAt: Type.String({ description: 'ISO 8601 date-time, at most 366 days ahead' }),
      },
      { additionalProperties: false },
    ),
    status: 201,
    response: {
      201: Type.Intersect([TokenInfo, Type.Object({ token: Type.String({ description: 'shown only in this answer' }) })]),
      400: ErrorBody,
    },
    async handler({ services, person, body }) {
      // read here, not by the schema: a `format` there would change the OpenAPI and this answer
      const expiresAt = new Date(body.expiresAt);
      if (!/^\d{4}-\d\d-\d\dT/.test(body.expiresAt) || Number.isNaN(expiresAt.getTime())) {
        throw new Refusal('invalid_field', 'expiresAt must be an ISO 8601 date-time', [
          { field: 'expiresAt', code: 'invalid_field', message: 'expiresAt must be an ISO 8601 date-time' },
        ]);
      }
      const t = await createPersonalToken(
        services.db,
        person.tenant.id,
        person.user.id,
        { name: body.name, expiresAt },
        services.clock.now(),
      );
      return answer(201, {
        id: t.id,
        name: t.name,
        token: t.token,
        createdAt: t.createdAt,
        expiresAt: t.expiresAt,
        lastUsedAt: t.lastUsedAt,
      });
    },
  }),
  defineRoute({
    method: 'DELETE',
    url: '/me/tokens/:id',
    permission: 'self',
    tag: 'Session',
    summary: 'Revoke one of my personal access tokens',
    curl: `curl -s -X DELETE $QM/v1/me/tokens/12 -H "Authorization: Bearer $TOKEN"`,
    params: IdParams,
    response: { 404: ErrorBody },
    async handler({ services, person, params }) {
      await services.units.autocommit((tx) => revokePersonalToken(tx, person.tenant.id, person.user.id, params.id, services.clock.now()));
      return null;
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/me/password',
    permission: 'self',
    tag: 'Session',
    summary:
      'Change my password: every session and token of mine ends; a cookie session gets a new cookie and CSRF token in the answer (200), a token caller gets 204',
    curl: `curl -s -X POST $QM/v1/me/password -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"currentPassword":"…","newPassword":"…"}'`,
    body: Type.Object(
      { currentPassword: Type.String({ minLength: 1, maxLength: 1024 }), newPassword: Type.String({ minLength: 1, maxLength: 1024 }) },
      { additionalProperties: false },
    ),
    response: { 200: SessionBody, 401: ErrorBody },
    async handler({ services, person, body }) {
      const now = services.clock.now();
      const fresh = await services.units.transaction(async (tx) => {
        await changeUserPassword(tx, person.tenant.id, person.user.id, body.newPassword, now, body.currentPassword);
        return person.credential.kind === 'session' ? openSession(tx, person, now) : null;
      });
      if (!fresh) return null;
      return answer(200, sessionBody(fresh.person, fresh.token), {
        'set-cookie': sessionCookie(fresh.token, fresh.person.credential.expiresAt!, now, services.config.publicUrl),
      });
    },
  }),
];
