/** Random secrets, their digests and constant-time comparison. */
import crypto from 'node:crypto';

/** A URL-safe random secret with `bytes` bytes of entropy (32 bytes = 256 bits by default). */
export function randomSecret(bytes = 32): string {
  return crypto.randomBytes(bytes).toString('base64url');
}

/** A readable random password for people and Mates created by the CLI (about 120 bits). */
export function randomPassword(): string {
  return crypto.randomBytes(15).toString('base64url');
}

/**
 * SHA-256 hex digest. Used only for high-entropy random secrets (API secrets, tokens), where a
 * slow hash adds nothing; passwords use argon2id (auth/passwords.ts).
 */
export function sha256(value: string): string {
  return crypto.createHash('sha256').update(value, 'utf8').digest('hex');
}

/** Compares two strings in time that depends only on their lengths' digests, not their content. */
export function constantTimeEqual(a: string, b: string): boolean {
  const ha = crypto.createHash('sha256').update(a, 'utf8').digest();
  const hb = crypto.createHash('sha256').update(b, 'utf8').digest();
  return crypto.timingSafeEqual(ha, hb);
}
