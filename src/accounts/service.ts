/** People (users of the web app) and Mates (API service accounts). */
import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import { Refusal } from '../lib/errors.js';
import { randomPassword } from '../lib/secrets.js';
import { hashPassword, passwordProblem } from './passwords.js';
import type { Tx } from '../db/tx.js';
import { revokeAllCredentials } from './sessions.js';

export const ROLES = ['admin', 'developer', 'agent', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

const USERNAME = /^[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}$/;

function checkUsername(kind: string, username: string): void {
  if (!USERNAME.test(username)) {
    throw new Refusal('invalid_field', `${kind} username "${username}" must be 1-100 characters of letters, digits and . _ @ + -`);
  }
}

export interface CreatedAccount {
  id: number;
  username: string;
  /** The password in clear, only when it was generated here. */
  password: string | null;
}

export interface CreateUserInput {
  username: string;
  role: Role;
  password?: string;
  displayName?: string;
  email?: string;
}

export async function createUser(db: Kysely<Database>, tenantId: number, input: CreateUserInput): Promise<CreatedAccount & { role: Role }> {
  checkUsername('User', input.username);
  if (!ROLES.includes(input.role)) throw new Refusal('invalid_field', `Role "${input.role}" is not one of ${ROLES.join(', ')}`);
  const generated = input.password === undefined ? randomPassword() : null;
  const password = input.password ?? generated!;
  const problem = passwordProblem(password);
  if (problem) throw new Refusal('invalid_field', `Password ${problem}`);
  const taken = await db
    .selectFrom('users')
    .select('id')
    .where('tenant_id', '=', tenantId)
    .where((eb) => eb(eb.fn('lower', ['username']), '=', input.username.toLowerCase()))
    .executeTakeFirst();
  if (taken) throw new Refusal('conflict', `A user named "${input.username}" already exists`);
  const row = await db
    .insertInto('users')
    .values({
      tenant_id: tenantId,
      username: input.username,
      role: input.role,
      password_hash: await hashPassword(password),
      display_name: input.displayName ?? input.username,
      email: input.email ?? null,
    })
    .returning(['id', 'username', 'role'])
    .executeTakeFirstOrThrow();
  return { id: row.id, username: row.username, role: row.role, password: generated };
}

export interface CreateMateInput {
  username: string;
  password?: string;
  displayName?: string;
}

export async function createMate(db: Kysely<Database>, tenantId: number, input: CreateMateInput): Promise<CreatedAccount> {
  checkUsername('Mate', input.username);
  const generated = input.password === undefined ? randomPassword() : null;
  const password = input.password ?? generated!;
  const problem = passwordProblem(password);
  if (problem) throw new Refusal('invalid_field', `Password ${problem}`);
  const taken = await db
    .selectFrom('mates')
    .select('id')
    .where('tenant_id', '=', tenantId)
    .where((eb) => eb(eb.fn('lower', ['username']), '=', input.username.toLowerCase()))
    .executeTakeFirst();
  if (taken) throw new Refusal('conflict', `A Mate named "${input.username}" already exists`);
  const row = await db
    .insertInto('mates')
    .values({
      tenant_id: tenantId,
      username: input.username,
      password_hash: await hashPassword(password),
      display_name: input.displayName ?? input.username,
    })
    .returning(['id', 'username'])
    .executeTakeFirstOrThrow();
  return { id: row.id, username: row.username, password: generated };
}

/**
 * Sets a Mate's password and raises its credential version: its earlier tokens are refused
 * (docs/mate-api.md §2).
 */
export async function changeMatePassword(
  tx: Tx,
  tenantId: number,
  mateId: number,
  password: string,
  now: Date,
): Promise<{ credentialVersion: number }> {
  const problem = passwordProblem(password);
  if (problem) throw new Refusal('invalid_field', `Password ${problem}`);
  const passwordHash = await hashPassword(password);
  const row = await tx.db
    .updateTable('mates')
    .set((eb) => ({ password_hash: passwordHash, credential_version: eb('credential_version', '+', 1), updated_at: now }))
    .where('tenant_id', '=', tenantId)
    .where('id', '=', mateId)
    .returning('credential_version')
    .executeTakeFirst();
  if (!row) throw new Refusal('not_found', `No Mate ${mateId}`);
  tx.publish({ kind: 'mate', tenantId, mateId });
  return { credentialVersion: row.credential_version };
}

/**
 * Disables (raising the credential version, so its tokens are refused) or enables a Mate.
 * Enabling does not bring back tokens from before the disabling.
 */
export async function setMateDisabled(
  tx: Tx,
  tenantId: number,
  mateId: number,
  disabled: boolean,
  now: Date,
): Promise<{ disabled: boolean; credentialVersion: number }> {
  const row = await tx.db
    .updateTable('mates')
    .set((eb) => ({
      disabled,
      // only a change to disabled raises cv; disabling twice keeps one revocation
      credential_version: disabled
        ? eb
            .case()
            .when('disabled', '=', false)
            .then(eb('credential_version', '+', 1))
            .else(eb.ref('credential_version'))
            .end()
        : eb.ref('credential_version'),
      updated_at: now,
    }))
    .where('tenant_id', '=', tenantId)
    .where('id', '=', mateId)
    .returning(['disabled', 'credential_version'])
    .executeTakeFirst();
  if (!row) throw new Refusal('not_found', `No Mate ${mateId}`);
  tx.publish({ kind: 'mate', tenantId, mateId });
  return { disabled: row.disabled, credentialVersion: row.credential_version };
}

export interface UserInfo {
  id: number;
  username: string;
  name: string;
  email: string | null;
  role: Role;
  disabled: boolean;
  lastSignInAt: Date | null;
  createdAt: Date;
}

export function listUsers(db: Kysely<Database>, tenantId: number): Promise<UserInfo[]> {
  return readUsers(db, tenantId, null);
}

export async function getUser(db: Kysely<Database>, tenantId: number, userId: number): Promise<UserInfo> {
  const u = (await readUsers(db, tenantId, userId))[0];
  if (!u) throw new Refusal('not_found', `No user ${userId}`);
  return u;
}

/** The tenant's users in id order, or the one with `userId`. */
async function readUsers(db: Kysely<Database>, tenantId: number, userId: number | null): Promise<UserInfo[]> {
  let q = db
    .selectFrom('users')
    .select(['id', 'username', 'display_name', 'email', 'role', 'disabled', 'last_sign_in_at', 'created_at'])
    .where('tenant_id', '=', tenantId);
  if (userId !== null) q = q.where('id', '=', userId);
  const rows = await q.orderBy('id').execute();
  return rows.map((r) => ({
    id: r.id,
    username: r.username,
    name: r.display_name || r.username,
    email: r.email,
    role: r.role,
    disabled: r.disabled,
    lastSignInAt: r.last_sign_in_at,
    createdAt: r.created_at,
  }));
}

/**
 * Disables (ending every session and token of the user) or enables a user. Enabling brings back
 * no earlier session: the person signs in again.
 */
export async function setUserDisabled(tx: Tx, tenantId: number, userId: number, disabled: boolean, now: Date): Promise<void> {
  const r = await tx.db
    .updateTable('users')
    .set((eb) => ({
      disabled,
      credential_version: disabled ? eb('credential_version', '+', 1) : eb.ref('credential_version'),
      updated_at: now,
    }))
    .where('tenant_id', '=', tenantId)
    .where('id', '=', userId)
    .executeTakeFirst();
  if (Number(r.numUpdatedRows) === 0) throw new Refusal('not_found', `No user ${userId}`);
  if (disabled) await revokeAllCredentials(tx, tenantId, userId, now);
  tx.publish({ kind: 'user', tenantId, userId });
}

/** Changes a user's role and display name; the change applies to their next request (roles are read on each). */
export async function updateUser(
  tx: Tx,
  tenantId: number,
  userId: number,
  patch: { role?: Role; name?: string; email?: string | null },
  now: Date,
): Promise<void> {
  if (patch.role !== undefined && !ROLES.includes(patch.role))
    throw new Refusal('invalid_field', `Role "${patch.role}" is not one of ${ROLES.join(', ')}`);
  const r = await tx.db
    .updateTable('users')
    .set({
      ...(patch.role !== undefined ? { role: patch.role } : {}),
      ...(patch.name !== undefined ? { display_name: patch.name } : {}),
      ...(patch.email !== undefined ? { email: patch.email } : {}),
      updated_at: now,
    })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', userId)
    .executeTakeFirst();
  if (Number(r.numUpdatedRows) === 0) throw new Refusal('not_found', `No user ${userId}`);
  tx.publish({ kind: 'user', tenantId, userId });
}

/** How many enabled admins the tenant has: the last one may not be demoted or disabled. */
export async function countEnabledAdmins(db: Kysely<Database>, tenantId: number): Promise<number> {
  const r = await db
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('tenant_id', '=', tenantId)
    .where('role', '=', 'admin')
    .where('disabled', '=', false)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

export interface MateInfo {
  id: number;
  username: string;
  name: string;
  disabled: boolean;
  lastContactAt: Date | null;
  createdAt: Date;
}

export async function listMates(db: Kysely<Database>, tenantId: number, mateId?: number): Promise<MateInfo[]> {
  let q = db
    .selectFrom('mates')
    .select(['id', 'username', 'display_name', 'disabled', 'last_contact_at', 'created_at'])
    .where('tenant_id', '=', tenantId);
  if (mateId !== undefined) q = q.where('id', '=', mateId);
  const rows = await q.orderBy('id').execute();
  return rows.map((r) => ({
    id: r.id,
    username: r.username,
    name: r.display_name || r.username,
    disabled: r.disabled,
    lastContactAt: r.last_contact_at,
    createdAt: r.created_at,
  }));
}

/** Renames a Mate (its display name; the username it signs in with stays). */
export async function renameMate(tx: Tx, tenantId: number, mateId: number, name: string, now: Date): Promise<void> {
  if (name.trim() === '' || name.length > 200) throw new Refusal('invalid_field', 'name must be 1-200 characters');
  const r = await tx.db
    .updateTable('mates')
    .set({ display_name: name.trim(), updated_at: now })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', mateId)
    .executeTakeFirst();
  if (Number(r.numUpdatedRows) === 0) throw new Refusal('not_found', `No Mate ${mateId}`);
  tx.publish({ kind: 'mate', tenantId, mateId });
}
