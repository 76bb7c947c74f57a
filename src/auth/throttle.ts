/**
 * Sign-in throttling (docs/mate-api.md §2), kept in the store so that it holds across server processes.
 *
 * Each subject (a tenant's username, or a client address) has a fixed window that starts at its
 * first failure. Once it holds `max` failures, further tries are refused with 429 until the window
 * ends; refused tries are not counted. A success clears the username, not the address.
 */
import crypto from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import type { Clock } from '../lib/clock.js';

export interface ThrottleLimits {
  maxFailuresPerUser: number;
  maxFailuresPerAddress: number;
  windowSeconds: number;
}

export interface ThrottleDecision {
  blocked: boolean;
  /** Whole seconds until the blocking window ends (≥ 1 when blocked, else 0). */
  retryAfterSeconds: number;
}

/** Longer usernames are kept as a digest so a caller cannot store big strings in the table. */
const MAX_SUBJECT_NAME = 128;

export function userSubject(tenantId: number, username: string): string {
  const name = username.toLowerCase();
  return `${tenantId}:${name.length > MAX_SUBJECT_NAME ? `sha256:${crypto.createHash('sha256').update(name).digest('hex')}` : name}`;
}

export class SignInThrottle {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    readonly limits: ThrottleLimits,
  ) {}

  async check(tenantId: number, username: string, address: string): Promise<ThrottleDecision> {
    const now = this.clock.now().getTime();
    const windowMs = this.limits.windowSeconds * 1000;
    const rows = await this.db
      .selectFrom('sign_in_failures')
      .select(['scope', 'window_start', 'failures'])
      .where((eb) =>
        eb.or([
          eb.and([eb('scope', '=', 'user'), eb('subject', '=', userSubject(tenantId, username))]),
          eb.and([eb('scope', '=', 'address'), eb('subject', '=', address)]),
        ]),
      )
      .execute();
    let retryAfterMs = 0;
    for (const row of rows) {
      const max = row.scope === 'user' ? this.limits.maxFailuresPerUser : this.limits.maxFailuresPerAddress;
      const ends = row.window_start.getTime() + windowMs;
      if (row.failures >= max && ends > now) retryAfterMs = Math.max(retryAfterMs, ends - now);
    }
    return { blocked: retryAfterMs > 0, retryAfterSeconds: retryAfterMs > 0 ? Math.max(1, Math.ceil(retryAfterMs / 1000)) : 0 };
  }

  async recordFailure(tenantId: number, username: string, address: string): Promise<void> {
    await this.bump('user', userSubject(tenantId, username), this.limits.maxFailuresPerUser);
    await this.bump('address', address, this.limits.maxFailuresPerAddress);
  }

  async recordSuccess(tenantId: number, username: string): Promise<void> {
    await this.db
      .deleteFrom('sign_in_failures')
      .where('scope', '=', 'user')
      .where('subject', '=', userSubject(tenantId, username))
      .execute();
  }

  /** Deletes rows whose window ended; for a periodic clean-up. */
  async prune(): Promise<number> {
    const cutoff = new Date(this.clock.now().getTime() - this.limits.windowSeconds * 1000);
    const r = await this.db.deleteFrom('sign_in_failures').where('window_start', '<=', cutoff).executeTakeFirst();
    return Number(r.numDeletedRows);
  }

  /** Counts one failure in one statement, restarting the window if the old one ended. */
  private async bump(scope: 'user' | 'address', subject: string, max: number): Promise<void> {
    const now = this.clock.now();
    const windowMs = this.limits.windowSeconds * 1000;
    const nowIso = now.toISOString();
    const cutoff = new Date(now.getTime() - windowMs).toISOString();
    const freshBlockedUntil = max <= 1 ? new Date(now.getTime() + windowMs).toISOString() : null;
    await sql`
      INSERT INTO sign_in_failures AS f (scope, subject, window_start, failures, blocked_until)
      VALUES (${scope}, ${subject}, ${nowIso}::timestamptz, 1, ${freshBlockedUntil}::timestamptz)
      ON CONFLICT (scope, subject) DO UPDATE SET
        window_start = CASE WHEN f.window_start <= ${cutoff}::timestamptz THEN ${nowIso}::timestamptz ELSE f.window_start END,
        failures = CASE WHEN f.window_start <= ${cutoff}::timestamptz THEN 1 ELSE f.failures + 1 END,
        blocked_until = CASE
          WHEN f.window_start <= ${cutoff}::timestamptz THEN ${freshBlockedUntil}::timestamptz
          WHEN f.failures + 1 >= ${max}::integer THEN f.window_start + ${this.limits.windowSeconds}::integer * interval '1 second'
          ELSE NULL END`.execute(this.db);
  }
}
