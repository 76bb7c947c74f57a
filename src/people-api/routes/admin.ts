/** Tenant administration: settings, API secret, users, Mates, the audit log (docs/people-api.md §3). */
import { Type } from 'typebox';
import {
  changeMatePassword,
  countEnabledAdmins,
  createMate,
  createUser,
  getUser,
  listMates,
  listUsers,
  renameMate,
  ROLES,
  setMateDisabled,
  setUserDisabled,
  updateUser,
} from '../../accounts/service.js';
import { changeUserPassword } from '../../accounts/sessions.js';
import { audit, listAudit } from '../../audit/store.js';
import { Refusal } from '../../lib/errors.js';
import { randomPassword } from '../../lib/secrets.js';
import { NUMBER_FORMATS, type NumberFormat } from '../../lib/values.js';
import { getTenant, rotateApiSecret, updateTenant } from '../../tenants/service.js';
import { answer, defineRoute, ErrorBody, Id, IdParams, IsoDate, Nullable, OneOf, type PeopleRoute } from '../route.js';

/**
 * After a rotation through the API the old API secret (and Mate tokens issued with it) keeps
 * working for 24 hours unless the request names another grace: long enough to roll the new secret
 * out to every robot within a working day, short enough that a leaked secret dies the next day.
 */
export const DEFAULT_SECRET_GRACE_SECONDS = 24 * 3600;
/** At most a week: a rotation that leaves the old secret alive longer is not much of a rotation. */
const MAX_SECRET_GRACE_SECONDS = 7 * 24 * 3600;

const RoleSchema = OneOf(ROLES);
// how numbers in strings are read: point ("1234.56", the default) or comma ("1234,56", "1.234,56")
const NumberFormatSchema = OneOf(NUMBER_FORMATS);
const TenantBody = Type.Object({
  id: Type.Integer(),
  clientId: Type.String(),
  name: Type.String(),
  timeZone: Type.String(),
  numberFormat: NumberFormatSchema,
});
const UserBody = Type.Object({
  id: Type.Integer(),
  username: Type.String(),
  name: Type.String(),
  email: Nullable(Type.String()),
  role: RoleSchema,
  disabled: Type.Boolean(),
  lastSignInAt: Nullable(IsoDate),
  createdAt: IsoDate,
});
const MateBody = Type.Object({
  id: Type.Integer(),
  username: Type.String(),
  name: Type.String(),
  disabled: Type.Boolean(),
  lastContactAt: Nullable(IsoDate),
  createdAt: IsoDate,
});
const PasswordInput = Type.String({
  minLength: 1,
  maxLength: 1024,
  description: 'at least 12 characters; omitted: one is generated and shown once',
});

const tenantBody = (t: { id: number; clientId: string; name: string; timeZone: string; numberFormat: NumberFormat }) => ({
  id: t.id,
  clientId: t.clientId,
  name: t.name,
  timeZone: t.timeZone,
  numberFormat: t.numberFormat,
});

async function findMate(db: Parameters<typeof listMates>[0], tenantId: number, id: number) {
  const m = (await listMates(db, tenantId, id))[0];
  if (!m) throw new Refusal('not_found', `No Mate ${id}`);
  return m;
}

export const ADMIN_ROUTES: PeopleRoute[] = [
  defineRoute({
    method: 'GET',
    url: '/tenant',
    permission: 'tenant.read',
    tag: 'Administration',
    summary: 'The tenant: Client Id, name, time zone, number format',
    curl: `curl -s $QM/v1/tenant -H "Authorization: Bearer $TOKEN"`,
    response: { 200: TenantBody },
    async handler({ services, caller }) {
      return tenantBody(await getTenant(services.db, caller.tenantId));
    },
  }),
  defineRoute({
    method: 'PATCH',
    url: '/tenant',
    permission: 'tenant.manage',
    tag: 'Administration',
    summary: "Change the tenant's name, time zone (IANA) or number format (how Mates' numbers in strings are read)",
    curl: `curl -s -X PATCH $QM/v1/tenant -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"timeZone":"Europe/Copenhagen"}'`,
    body: Type.Object(
      {
        name: Type.Optional(Type.String({ maxLength: 200 })),
        timeZone: Type.Optional(Type.String({ maxLength: 100 })),
        numberFormat: Type.Optional(NumberFormatSchema),
      },
      { additionalProperties: false },
    ),
    response: { 200: TenantBody, 400: ErrorBody },
    async handler({ services, caller, body }) {
      return services.units.transaction(async (tx) => {
        const before = await getTenant(tx.db, caller.tenantId);
        const after = await updateTenant(tx, caller.tenantId, body, caller.now);
        await audit(tx, caller, {
          action: 'tenant.update',
          targetType: 'tenant',
          targetId: caller.tenantId,
          details: {
            before: { name: before.name, timeZone: before.timeZone, numberFormat: before.numberFormat },
            after: { name: after.name, timeZone: after.timeZone, numberFormat: after.numberFormat },
          },
        });
        return tenantBody(after);
      });
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/tenant/api-secret',
    permission: 'tenant.manage',
    tag: 'Administration',
    summary:
      'Rotate the API secret: the new secret is shown once; the old one (and Mate tokens issued with it) keeps working for graceSeconds (default 86400, at most 604800; 0 = refused at once)',
    curl: `curl -s -X POST $QM/v1/tenant/api-secret -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"graceSeconds":3600}'`,
    body: Type.Optional(
      Type.Object(
        { graceSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_SECRET_GRACE_SECONDS })) },
        { additionalProperties: false },
      ),
    ),
    response: {
      200: Type.Object({
        clientId: Type.String(),
        apiSecret: Type.String({ description: 'shown only in this answer' }),
        secretVersion: Type.Integer(),
        previousValidUntil: IsoDate,
      }),
    },
    async handler({ services, caller, person, body }) {
      const grace = body.graceSeconds ?? DEFAULT_SECRET_GRACE_SECONDS;
      const r = await services.units.transaction(async (tx) => {
        const rotated = await rotateApiSecret(tx, caller.tenantId, caller.now, grace);
        await audit(tx, caller, {
          action: 'tenant.rotateApiSecret',
          targetType: 'tenant',
          targetId: caller.tenantId,
          details: { secretVersion: rotated.secretVersion, graceSeconds: grace, previousValidUntil: rotated.previousValidUntil },
        });
        return rotated;
      });
      return {
        clientId: person.tenant.clientId,
        apiSecret: r.apiSecret,
        secretVersion: r.secretVersion,
        previousValidUntil: r.previousValidUntil,
      };
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/users',
    permission: 'users.manage',
    tag: 'Administration',
    summary: "The tenant's users",
    curl: `curl -s $QM/v1/users -H "Authorization: Bearer $TOKEN"`,
    response: { 200: Type.Object({ items: Type.Array(UserBody) }) },
    async handler({ services, caller }) {
      return { items: await listUsers(services.db, caller.tenantId) };
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/users',
    permission: 'users.manage',
    tag: 'Administration',
    summary: 'Create a user; without a password one is generated and shown once',
    curl: `curl -s -X POST $QM/v1/users -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"username":"alice","role":"agent","name":"Alice"}'`,
    body: Type.Object(
      {
        username: Type.String({ minLength: 1, maxLength: 100 }),
        role: RoleSchema,
        name: Type.Optional(Type.String({ maxLength: 200 })),
        email: Type.Optional(Type.String({ maxLength: 320 })),
        password: Type.Optional(PasswordInput),
      },
      { additionalProperties: false },
    ),
    status: 201,
    response: {
      201: Type.Object({ user: UserBody, password: Nullable(Type.String({ description: 'the generated password, shown once' })) }),
      409: ErrorBody,
    },
    async handler({ services, caller, body }) {
      return services.units.transaction(async (tx) => {
        const created = await createUser(tx.db, caller.tenantId, {
          username: body.username,
          role: body.role,
          password: body.password,
          displayName: body.name,
          email: body.email,
        });
        await audit(tx, caller, {
          action: 'user.create',
          targetType: 'user',
          targetId: created.id,
          details: { after: { username: created.username, role: created.role } },
        });
        return answer(201, { user: await getUser(tx.db, caller.tenantId, created.id), password: created.password });
      });
    },
  }),
  defineRoute({
    method: 'PATCH',
    url: '/users/:id',
    permission: 'users.manage',
    tag: 'Administration',
    summary: "Change a user's role, name or email, or disable (ending their sessions and tokens) or enable them",
    curl: `curl -s -X PATCH $QM/v1/users/3 -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"role":"viewer"}'`,
    params: IdParams,
    body: Type.Object(
      {
        role: Type.Optional(RoleSchema),
        name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
        email: Type.Optional(Nullable(Type.String({ maxLength: 320 }))),
        disabled: Type.Optional(Type.Boolean()),
      },
      { additionalProperties: false },
    ),
    response: { 200: UserBody, 404: ErrorBody, 409: ErrorBody },
    async handler({ services, caller, params, body }) {
      return services.units.transaction(async (tx) => {
        const before = await getUser(tx.db, caller.tenantId, params.id);
        const losesAdmin =
          before.role === 'admin' && !before.disabled && ((body.role !== undefined && body.role !== 'admin') || body.disabled === true);
        if (losesAdmin && (await countEnabledAdmins(tx.db, caller.tenantId)) <= 1) {
          throw new Refusal('conflict', 'This is the last enabled admin: make another user admin first');
        }
        if (body.disabled === true && params.id === caller.actor.id) throw new Refusal('conflict', 'You cannot disable yourself');
        if (body.role !== undefined || body.name !== undefined || body.email !== undefined) {
          await updateUser(tx, caller.tenantId, params.id, { role: body.role, name: body.name, email: body.email }, caller.now);
        }
        if (body.disabled !== undefined && body.disabled !== before.disabled)
          await setUserDisabled(tx, caller.tenantId, params.id, body.disabled, caller.now);
        const after = await getUser(tx.db, caller.tenantId, params.id);
        await audit(tx, caller, {
          action: 'user.update',
          targetType: 'user',
          targetId: params.id,
          details: {
            before: { role: before.role, name: before.name, email: before.email, disabled: before.disabled },
            after: { role: after.role, name: after.name, email: after.email, disabled: after.disabled },
          },
        });
        return after;
      });
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/users/:id/password',
    permission: 'users.manage',
    tag: 'Administration',
    summary: "Reset a user's password (generated and shown once unless given); their sessions and tokens end",
    curl: `curl -s -X POST $QM/v1/users/3/password -H "Authorization: Bearer $TOKEN"`,
    params: IdParams,
    body: Type.Object({ password: Type.Optional(PasswordInput) }, { additionalProperties: false }),
    response: {
      200: Type.Object({ password: Nullable(Type.String({ description: 'the generated password, shown once' })) }),
      404: ErrorBody,
    },
    async handler({ services, caller, params, body }) {
      const generated = body.password === undefined ? randomPassword() : null;
      await services.units.transaction(async (tx) => {
        await changeUserPassword(tx, caller.tenantId, params.id, body.password ?? generated!, caller.now);
        await audit(tx, caller, { action: 'user.resetPassword', targetType: 'user', targetId: params.id });
      });
      return { password: generated };
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/mates',
    permission: 'mates.manage',
    tag: 'Administration',
    summary: "The tenant's Mates with their last contact time",
    curl: `curl -s $QM/v1/mates -H "Authorization: Bearer $TOKEN"`,
    response: { 200: Type.Object({ items: Type.Array(MateBody) }) },
    async handler({ services, caller }) {
      return { items: await listMates(services.db, caller.tenantId) };
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/mates',
    permission: 'mates.manage',
    tag: 'Administration',
    summary: 'Create a Mate; without a password one is generated and shown once',
    curl: `curl -s -X POST $QM/v1/mates -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"username":"invoice-bot"}'`,
    body: Type.Object(
      {
        username: Type.String({ minLength: 1, maxLength: 100 }),
        name: Type.Optional(Type.String({ maxLength: 200 })),
        password: Type.Optional(PasswordInput),
      },
      { additionalProperties: false },
    ),
    status: 201,
    response: { 201: Type.Object({ mate: MateBody, password: Nullable(Type.String()) }), 409: ErrorBody },
    async handler({ services, caller, body }) {
      return services.units.transaction(async (tx) => {
        const created = await createMate(tx.db, caller.tenantId, {
          username: body.username,
          password: body.password,
          displayName: body.name,
        });
        await audit(tx, caller, {
          action: 'mate.create',
          targetType: 'mate',
          targetId: created.id,
          details: { after: { username: created.username } },
        });
        return answer(201, { mate: await findMate(tx.db, caller.tenantId, created.id), password: created.password });
      });
    },
  }),
  defineRoute({
    method: 'PATCH',
    url: '/mates/:id',
    permission: 'mates.manage',
    tag: 'Administration',
    summary: 'Rename, disable (its tokens stop working at once) or enable a Mate',
    curl: `curl -s -X PATCH $QM/v1/mates/2 -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"disabled":true}'`,
    params: IdParams,
    body: Type.Object(
      { name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })), disabled: Type.Optional(Type.Boolean()) },
      { additionalProperties: false },
    ),
    response: { 200: MateBody, 404: ErrorBody },
    async handler({ services, caller, params, body }) {
      return services.units.transaction(async (tx) => {
        const before = await findMate(tx.db, caller.tenantId, params.id);
        if (body.name !== undefined) await renameMate(tx, caller.tenantId, params.id, body.name, caller.now);
        if (body.disabled !== undefined) await setMateDisabled(tx, caller.tenantId, params.id, body.disabled, caller.now);
        const after = await findMate(tx.db, caller.tenantId, params.id);
        await audit(tx, caller, {
          action: 'mate.update',
          targetType: 'mate',
          targetId: params.id,
          details: { before: { name: before.name, disabled: before.disabled }, after: { name: after.name, disabled: after.disabled } },
        });
        return after;
      });
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/mates/:id/password',
    permission: 'mates.manage',
    tag: 'Administration',
    summary: 'Give a Mate a new password (generated and shown once unless given); its earlier tokens stop working',
    curl: `curl -s -X POST $QM/v1/mates/2/password -H "Authorization: Bearer $TOKEN"`,
    params: IdParams,
    body: Type.Object({ password: Type.Optional(PasswordInput) }, { additionalProperties: false }),
    response: { 200: Type.Object({ password: Nullable(Type.String()) }), 404: ErrorBody },
    async handler({ services, caller, params, body }) {
      const generated = body.password === undefined ? randomPassword() : null;
      await services.units.transaction(async (tx) => {
        await changeMatePassword(tx, caller.tenantId, params.id, body.password ?? generated!, caller.now);
        await audit(tx, caller, { action: 'mate.resetPassword', targetType: 'mate', targetId: params.id });
      });
      return { password: generated };
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/audit',
    permission: 'users.manage',
    tag: 'Administration',
    summary: 'The audit log of administrative actions, newest first (filter by action or target type; page back with before=<id>)',
    curl: `curl -s "$QM/v1/audit?targetType=user&limit=50" -H "Authorization: Bearer $TOKEN"`,
    querystring: Type.Object(
      {
        action: Type.Optional(Type.String({ maxLength: 100 })),
        targetType: Type.Optional(Type.String({ maxLength: 100 })),
        before: Type.Optional(Id),
        limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
      },
      { additionalProperties: false },
    ),
    response: {
      200: Type.Object({
        items: Type.Array(
          Type.Object({
            id: Type.Integer(),
            at: IsoDate,
            actor: Type.Object({ type: Type.String(), id: Nullable(Type.Integer()), name: Nullable(Type.String()) }),
            action: Type.String(),
            targetType: Type.String(),
            targetId: Nullable(Type.String()),
            details: Nullable(Type.Object({}, { additionalProperties: true })),
            requestId: Nullable(Type.String()),
          }),
        ),
      }),
    },
    async handler({ services, caller, query }) {
      return {
        items: await listAudit(services.db, caller.tenantId, {
          action: query.action,
          targetType: query.targetType,
          before: query.before,
          limit: query.limit ?? 100,
        }),
      };
    },
  }),
];
