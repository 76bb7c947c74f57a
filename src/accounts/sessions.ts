/**
 * People's credentials (docs/people-api.md §1): web sessions and personal access tokens, both rows
 * of `user_tokens` holding only the SHA-256 of a 256-bit random token (a slow hash adds nothing
 * for random tokens). Sign-in checks the password with argon2id; the same answer, after the same
 * work, for an unknown Client Id, an unknown user, a wrong password and a disabled user.
 *
 * Every session and token of a user is revoked when the user is disabled or their password
 * changes (setUserDisabled, changeUserPassword below), in the same transaction.
 */
import crypto from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database, UserRole, UserTokenKind } from '../db/types.js';
import type { NumberFormat } from '../lib/values.js';
import type { Tx } from '../db/tx.js';
import { Refusal } from '../lib/errors.js';
import { constantTimeEqual, randomSecret, sha256 } from '../lib/secrets.js';
import { hashPassword, passwordProblem, verifyDummy, verifyPassword } from './passwords.js';
import { normalizeClientId } from '../tenants/service.js';

/**
 * A web session lasts 12 hours from sign-in (a working day), then the person signs in again: a
 * stolen cookie is useful for at most that long.
 */
export const SESSION_LIFETIME_SECONDS = 12 * 3600;
/** A personal access token lives at most a year: long-lived scripts renew it once a year. */
export const PAT_MAX_LIFETIME_DAYS = 366;
export const PAT_PREFIX = 'qmp_';
/** last_used_at is written at most once a minute per token: no write on every request. */
const LAST_USED_RESOLUTION_MS = 60_000;

export const INVALID_CREDENTIALS = 'The Client Id, username or password is incorrect';

export interface PersonTenant {
  id: number;
  clientId: string;
  name: string;
  timeZone: string;
  numberFormat: NumberFormat;
}

export interface PersonUser {
  id: number;
  username: string;
  name: string;
  role: UserRole;
}

/** Who is calling the people's API, from a session cookie or a personal access token. */
export interface Person {
  tenant: PersonTenant;
  user: PersonUser;
  credential: { kind: UserTokenKind; id: number; expiresAt: Date | null };
}

/** The CSRF token of a session: derived from its secret token, so only the cookie's holder can know it. */
export function csrfTokenFor(sessionToken: string): string {
  return crypto.createHash('sha256').update(`queuemate-csrf\0${sessionToken}`).digest('base64url');
}

export function csrfTokenMatches(sessionToken: string, given: string | undefined): boolean {
  return given !== undefined && constantTimeEqual(csrfTokenFor(sessionToken), given);
}

/**
 * A token's tenant: personal access tokens are `qmp_<tenant>_<secret>` and session tokens
 * `<tenant>_<secret>`, the tenant id in base 36 and the secret 256 random bits in base64url, so
 * that a token is found by (tenant_id, token_hash), on the node of that tenant's rows, never by a
 * lookup across tenants (docs/deployment.md, "Beyond one PostgreSQL: Citus").
 */
export function tokenFor(tenantId: number, kind: UserTokenKind, secret = randomSecret()): string {
  return `${kind === 'personal' ? PAT_PREFIX : ''}${tenantId.toString(36)}_${secret}`;
}

const SECRET_CHARS = 43;
const TENANT_TOKEN = new RegExp(`^([0-9a-z]{1,11})_[A-Za-z0-9_-]{${SECRET_CHARS}}$`);
const LEGACY_TOKEN = new RegExp(`^[A-Za-z0-9_-]{${SECRET_CHARS}}$`);

/**
 * The tenant a token names (its part after `qmp_` for a personal one), 'legacy' for a token issued
 * before tokens carried their tenant (the bare secret), null for anything else.
 */
export function tokenTenant(token: string, kind: UserTokenKind): number | 'legacy' | null {
  const body = kind === 'personal' ? (token.startsWith(PAT_PREFIX) ? token.slice(PAT_PREFIX.length) : null) : token;
  if (body === null) return null;
  if (LEGACY_TOKEN.test(body)) return 'legacy';
  const m = TENANT_TOKEN.exec(body);
  if (!m) return null;
  const id = parseInt(m[1], 36);
  return Number.isSafeInteger(id) && id > 0 && id.toString(36) === m[1] ? id : null;
}

/**
 * Finds the live credential for a raw token: not revoked, not expired, its user enabled. One
 * query, by the tenant the token names and its hash (the unique (tenant_id, token_hash) index); a
 * token issued before tokens named their tenant, by its hash among the legacy tokens. Null for
 * anything else.
 */
export async function authenticatePersonToken(db: Kysely<Database>, token: string, kind: UserTokenKind, now: Date): Promise<Person | null> {
  const tenant = tokenTenant(token, kind);
  if (tenant === null) return null;
  const hash = sha256(token);
  const row = await db
    .selectFrom('user_tokens as t')
    .innerJoin('users as u', (j) => j.onRef('u.tenant_id', '=', 't.tenant_id').onRef('u.id', '=', 't.user_id'))
    .innerJoin('tenants as n', 'n.id', 't.tenant_id')
    .select([
      't.id as token_id',
      't.token_hash',
      't.kind',
      't.expires_at',
      't.revoked_at',
      't.last_used_at',
      'u.id as user_id',
      'u.username',
      'u.display_name',
      'u.role',
      'u.disabled',
      'n.id as tenant_id',
      'n.client_id',
      'n.name as tenant_name',
      'n.time_zone',
      'n.number_format',
    ])
    .where((eb) => (tenant === 'legacy' ? eb('t.legacy', '=', true) : eb('t.tenant_id', '=', tenant)))
    .where('t.token_hash', '=', hash)
    .executeTakeFirst();
  // the row was found by its hash; the comparison in constant time is belt and braces
  if (!row || !constantTimeEqual(row.token_hash, hash)) return null;
  if (row.kind !== kind || row.revoked_at !== null || row.disabled) return null;
  if (row.expires_at !== null && row.expires_at.getTime() <= now.getTime()) return null;
  if (row.last_used_at === null || now.getTime() - row.last_used_at.getTime() >= LAST_USED_RESOLUTION_MS) {
    await db
      .updateTable('user_tokens')
      .set({ last_used_at: now })
      .where('tenant_id', '=', row.tenant_id)
      .where('id', '=', row.token_id)
      .execute();
  }
  return {
    tenant: { id: row.tenant_id, clientId: row.client_id, name: row.tenant_name, timeZone: row.time_zone, numberFormat: row.number_format },
    user: { id: row.user_id, username: row.username, name: row.display_name || row.username, role: row.role },
    credential: { kind: row.kind, id: row.token_id, expiresAt: row.expires_at },
  };
}

export interface SignInInput {
  clientId: string;
  username: string;
  password: string;
  /** the client's address, for the throttle */
  address: string;
}

export interface SignInDeps {
  db: Kysely<Database>;
  now: Date;
  /** the sign-in throttle shared with the Mate token endpoint (src/auth/throttle.ts) */
  throttle: {
    /** counts this try as a failure before the password is checked; refuses past the limit */
    reserve(
      tenantId: number,
      username: string,
      address: string,
    ): Promise<{ granted: Grant } | { blocked: boolean; retryAfterSeconds: number }>;
    /** takes the reserved failure back: the password was right (or, with keepUser, could not be checked) */
    release(grant: Grant, opts?: { keepUser?: boolean }): Promise<void>;
  };
  /** bounds concurrent argon2id work (src/auth/semaphore.ts) */
  hash<T>(fn: () => Promise<T>): Promise<T>;
}

/** A reserved failure, as the throttle hands it out. */
type Grant = { readonly rows: ReadonlyArray<unknown> };

export interface SignedIn {
  person: Person;
  /** the session's secret token, for the cookie; only its hash is stored */
  token: string;
  csrfToken: string;
}

/**
 * Signs a person in and opens a session. Unknown Client Id, unknown user, wrong password and a
 * disabled user all answer invalid_credentials after one argon2id verification; a throttled
 * username or address answers rate_limited (details.retryAfterSeconds) before any password work.
 */
export async function signIn(deps: SignInDeps, input: SignInInput): Promise<SignedIn> {
  const { db, now } = deps;
  const tenant = await db
    .selectFrom('tenants')
    .select(['id', 'client_id', 'name', 'time_zone', 'number_format'])
    .where('client_id', '=', normalizeClientId(input.clientId))
    .executeTakeFirst();
  // an unknown Client Id is throttled under tenant 0, which never exists
  const tenantId = tenant?.id ?? 0;
  // the try counts as a failure before its password is checked (atomic across server processes)
  const reserved = await deps.throttle.reserve(tenantId, input.username, input.address);
  if (!('granted' in reserved)) {
    throw new Refusal('rate_limited', 'Too many failed sign-ins; try again later', [], { retryAfterSeconds: reserved.retryAfterSeconds });
  }
  let user;
  let ok: boolean;
  try {
    user = tenant
      ? await db
          .selectFrom('users')
          .select(['id', 'username', 'display_name', 'role', 'password_hash', 'disabled'])
          .where('tenant_id', '=', tenant.id)
          .where((eb) => eb(eb.fn('lower', ['username']), '=', input.username.toLowerCase()))
          .executeTakeFirst()
      : undefined;
    const hash = user?.password_hash;
    ok = hash ? await deps.hash(() => verifyPassword(hash, input.password)) : await deps.hash(() => verifyDummy(input.password));
  } catch (err) {
    // not checked after all (store down, too many sign-ins at once): the try does not count
    await deps.throttle.release(reserved.granted, { keepUser: true }).catch(() => {});
    throw err;
  }
  // a wrong password (or unknown user, or disabled) keeps the reserved failure
  if (!tenant || !user || !ok || user.disabled) throw new Refusal('invalid_credentials', INVALID_CREDENTIALS);
  await deps.throttle.release(reserved.granted);
  const token = tokenFor(tenant.id, 'session');
  const expiresAt = new Date(now.getTime() + SESSION_LIFETIME_SECONDS * 1000);
  const row = await db
    .insertInto('user_tokens')
    .values({ tenant_id: tenant.id, user_id: user.id, kind: 'session', token_hash: sha256(token), expires_at: expiresAt, created_at: now })
    .returning('id')
    .executeTakeFirstOrThrow();
  await db.updateTable('users').set({ last_sign_in_at: now }).where('tenant_id', '=', tenant.id).where('id', '=', user.id).execute();
  return {
    token,
    csrfToken: csrfTokenFor(token),
    person: {
      tenant: {
        id: tenant.id,
        clientId: tenant.client_id,
        name: tenant.name,
        timeZone: tenant.time_zone,
        numberFormat: tenant.number_format,
      },
      user: { id: user.id, username: user.username, name: user.display_name || user.username, role: user.role },
      credential: { kind: 'session', id: row.id, expiresAt },
    },
  };
}

/** Opens a new session for a person already authenticated (after they changed their own password). */
export async function openSession(tx: Tx, person: Person, now: Date): Promise<SignedIn> {
  const token = tokenFor(person.tenant.id, 'session');
  const expiresAt = new Date(now.getTime() + SESSION_LIFETIME_SECONDS * 1000);
  const row = await tx.db
    .insertInto('user_tokens')
    .values({
      tenant_id: person.tenant.id,
      user_id: person.user.id,
      kind: 'session',
      token_hash: sha256(token),
      expires_at: expiresAt,
      created_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return { token, csrfToken: csrfTokenFor(token), person: { ...person, credential: { kind: 'session', id: row.id, expiresAt } } };
}

/**
 * Ends one credential (sign-out, or revoking a personal access token of the user's). Published as
 * a change of the user: their open event streams check their credential at once.
 */
export async function revokeCredential(tx: Tx, tenantId: number, userId: number, id: number, now: Date): Promise<boolean> {
  const r = await tx.db
    .updateTable('user_tokens')
    .set({ revoked_at: now })
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  tx.publish({ kind: 'user', tenantId, userId });
  return Number(r.numUpdatedRows) > 0;
}

/**
 * Whether a credential still lets its person in: not revoked, not expired, the user enabled (the
 * checks of authenticatePersonToken, by the credential's id). Open event streams ask it again.
 */
export async function credentialIsLive(db: Kysely<Database>, tenantId: number, credentialId: number, now: Date): Promise<boolean> {
  const row = await db
    .selectFrom('user_tokens as t')
    .innerJoin('users as u', (j) => j.onRef('u.tenant_id', '=', 't.tenant_id').onRef('u.id', '=', 't.user_id'))
    .select(['t.revoked_at', 't.expires_at', 'u.disabled'])
    .where('t.tenant_id', '=', tenantId)
    .where('t.id', '=', credentialId)
    .executeTakeFirst();
  return !!row && row.revoked_at === null && !row.disabled && (row.expires_at === null || row.expires_at.getTime() > now.getTime());
}

/** Ends every session and token of a user (disabled, or a new password). */
export async function revokeAllCredentials(tx: Tx, tenantId: number, userId: number, now: Date): Promise<void> {
  await tx.db
    .updateTable('user_tokens')
    .set({ revoked_at: now })
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .execute();
}

export interface PersonalToken {
  id: number;
  name: string;
  createdAt: Date;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
}

const TOKEN_NAME_MAX = 100;

/** Creates a personal access token; the token is returned once, only its hash is kept. */
export async function createPersonalToken(
  db: Kysely<Database>,
  tenantId: number,
  userId: number,
  input: { name: string; expiresAt: Date },
  now: Date,
): Promise<PersonalToken & { token: string }> {
  const name = input.name.trim();
  if (name === '' || name.length > TOKEN_NAME_MAX) throw new Refusal('invalid_field', `name must be 1-${TOKEN_NAME_MAX} characters`);
  if (input.expiresAt.getTime() <= now.getTime()) throw new Refusal('invalid_field', 'expiresAt must be in the future');
  if (input.expiresAt.getTime() > now.getTime() + PAT_MAX_LIFETIME_DAYS * 86_400_000) {
    throw new Refusal('invalid_field', `expiresAt must be at most ${PAT_MAX_LIFETIME_DAYS} days ahead`);
  }
  const token = tokenFor(tenantId, 'personal');
  const row = await db
    .insertInto('user_tokens')
    .values({
      tenant_id: tenantId,
      user_id: userId,
      kind: 'personal',
      name,
      token_hash: sha256(token),
      expires_at: input.expiresAt,
      created_at: now,
    })
    .returning(['id', 'name', 'created_at', 'expires_at', 'last_used_at'])
    .executeTakeFirstOrThrow();
  return { token, id: row.id, name: row.name, createdAt: row.created_at, expiresAt: row.expires_at, lastUsedAt: row.last_used_at };
}

/** The user's live personal access tokens (never the tokens themselves). */
export async function listPersonalTokens(db: Kysely<Database>, tenantId: number, userId: number, now: Date): Promise<PersonalToken[]> {
  const rows = await db
    .selectFrom('user_tokens')
    .select(['id', 'name', 'created_at', 'expires_at', 'last_used_at'])
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .where('kind', '=', 'personal')
    .where('revoked_at', 'is', null)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
    .orderBy('id')
    .execute();
  return rows.map((r) => ({ id: r.id, name: r.name, createdAt: r.created_at, expiresAt: r.expires_at, lastUsedAt: r.last_used_at }));
}

export async function revokePersonalToken(tx: Tx, tenantId: number, userId: number, id: number, now: Date): Promise<void> {
  const r = await tx.db
    .updateTable('user_tokens')
    .set({ revoked_at: now })
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .where('kind', '=', 'personal')
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  if (Number(r.numUpdatedRows) === 0) throw new Refusal('not_found', `No personal access token ${id}`);
  tx.publish({ kind: 'user', tenantId, userId });
}

/**
 * Sets a user's password, raises their credential version and ends every session and token of
 * theirs. `currentPassword` (a person changing their own) must match first.
 */
export async function changeUserPassword(
  tx: Tx,
  tenantId: number,
  userId: number,
  password: string,
  now: Date,
  currentPassword?: string,
): Promise<void> {
  const problem = passwordProblem(password);
  if (problem)
    throw new Refusal('invalid_field', `Password ${problem}`, [
      { field: 'password', code: 'invalid_field', message: `Password ${problem}` },
    ]);
  if (currentPassword !== undefined) {
    const row = await tx.db
      .selectFrom('users')
      .select('password_hash')
      .where('tenant_id', '=', tenantId)
      .where('id', '=', userId)
      .executeTakeFirst();
    if (!row || !(await verifyPassword(row.password_hash, currentPassword))) {
      throw new Refusal('invalid_credentials', 'The current password is incorrect');
    }
  }
  const passwordHash = await hashPassword(password);
  const r = await tx.db
    .updateTable('users')
    .set((eb) => ({ password_hash: passwordHash, credential_version: eb('credential_version', '+', 1), updated_at: now }))
    .where('tenant_id', '=', tenantId)
    .where('id', '=', userId)
    .executeTakeFirst();
  if (Number(r.numUpdatedRows) === 0) throw new Refusal('not_found', `No user ${userId}`);
  await revokeAllCredentials(tx, tenantId, userId, now);
  tx.publish({ kind: 'user', tenantId, userId });
}
