/** Password hashing with argon2id (OWASP: m=19 MiB, t=2, p=1, the library's defaults). */
import { hash, verify } from '@node-rs/argon2';

// Algorithm.Argon2id; the enum is a `const enum` that is not importable at run time.
const ARGON2ID = 2;

export function hashPassword(password: string): Promise<string> {
  return hash(password, { algorithm: ARGON2ID });
}

export async function verifyPassword(hashed: string, password: string): Promise<boolean> {
  try {
    return await verify(hashed, password);
  } catch {
    return false;
  }
}

let dummy: Promise<string> | null = null;
/**
 * Checks a password against a fixed hash so that an unknown user takes as long to refuse as a
 * wrong password (no user enumeration by timing).
 */
export async function verifyDummy(password: string): Promise<false> {
  dummy ??= hashPassword('queuemate-dummy-password');
  await verifyPassword(await dummy, password);
  return false;
}

/** Minimum rules for passwords set by people: long enough to resist guessing. */
export function passwordProblem(password: string): string | null {
  if (password.length < 12) return 'must be at least 12 characters';
  if (password.length > 1024) return 'must be at most 1024 characters';
  return null;
}
