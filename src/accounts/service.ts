/** People (users of the web app) and Mates (API service accounts). */
import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import { AppError } from '../lib/errors.js';
import { randomPassword } from '../lib/secrets.js';
import { hashPassword, passwordProblem } from './passwords.js';

export const ROLES = ['admin', 'developer', 'agent', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

const USERNAME = /^[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}$/;

function checkUsername(kind: string, username: string): void {
  if (!USERNAME.test(username)) {
    throw new AppError('invalid_field', `${kind} username "${username}" must be 1-100 characters of letters, digits and . _ @ + -`);
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
  if (!ROLES.includes(input.role)) throw new AppError('invalid_field', `Role "${input.role}" is not one of ${ROLES.join(', ')}`);
  const generated = input.password === undefined ? randomPassword() : null;
  const password = input.password ?? generated!;
  const problem = passwordProblem(password);
  if (problem) throw new AppError('invalid_field', `Password ${problem}`);
  const taken = await db
    .selectFrom('users')
    .select('id')
    .where('tenant_id', '=', tenantId)
    .where((eb) => eb(eb.fn('lower', ['username']), '=', input.username.toLowerCase()))
    .executeTakeFirst();
  if (taken) throw new AppError('conflict', `A user named "${input.username}" already exists`);
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
  if (problem) throw new AppError('invalid_field', `Password ${problem}`);
  const taken = await db
    .selectFrom('mates')
    .select('id')
    .where('tenant_id', '=', tenantId)
    .where((eb) => eb(eb.fn('lower', ['username']), '=', input.username.toLowerCase()))
    .executeTakeFirst();
  if (taken) throw new AppError('conflict', `A Mate named "${input.username}" already exists`);
  const row = await db
    .insertInto('mates')
    .values({ tenant_id: tenantId, username: input.username, password_hash: await hashPassword(password), display_name: input.displayName ?? input.username })
    .returning(['id', 'username'])
    .executeTakeFirstOrThrow();
  return { id: row.id, username: row.username, password: generated };
}
