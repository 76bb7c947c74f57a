/** People (users of the web app) and Mates (API service accounts). */
import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import { Refusal } from '../lib/errors.js';
import { randomPassword } from '../lib/secrets.js';
import { hashPassword, passwordProblem } from './passwords.js';
import type { Tx } from '../db/tx.js';

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
