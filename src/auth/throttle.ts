/**
 * Sign-in throttling (docs/mate-api.md §2), kept in the store so that it holds across server processes.
 *
 * Each subject (a tenant's username, or a client address) has a fixed window that starts at its
 * first failure. Once it holds `max` failures, further tries are refused with 429 until the window
 * ends; refused tries are not counted. A success clears the username, not the address.
 *
 * A sign-in reserves its failure before its password is checked (reserve, one statement) and
 * releases it when the password was right: however many sign-ins run at once, at most `max`
 * passwords of one username are checked in a window.
 */
import crypto from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import type { Clock } from '../lib/clock.js';
import { isStorableText } from '../lib/values.js';

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
  // a name PostgreSQL cannot store as text (U+0000, a lone surrogate) is kept as its digest too
  return `${tenantId}:${name.length > MAX_SUBJECT_NAME || !isStorableText(name) ? `sha256:${crypto.createHash('sha256').update(name).digest('hex')}` : name}`;
}

/** The failures a sign-in reserved (throttle.reserve): kept if its password is wrong, released otherwise. */
export interface Reservation {
  readonly rows: ReadonlyArray<{ scope: Scope; subject: string; windowStart: Date }>;
}

type Scope = 'user' | 'address';

export class SignInThrottle {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    readonly limits: ThrottleLimits,
  ) {}

  private max(scope: Scope): number {
    return scope === 'user' ? this.limits.maxFailuresPerUser : this.limits.maxFailuresPerAddress;
  }

  /**
   * Counts this sign-in as a failure of the username and of the address before its password is
   * checked, in one statement (so concurrent sign-ins, in any server process, each see the
   * others' counts): a subject that already holds `max` failures in its window refuses. A refused
   * try is taken back at once (refused tries are not counted); a granted one is a failure until
   * `release` takes it back (the password was right).
   */
  async reserve(tenantId: number, username: string, address: string): Promise<{ granted: Reservation } | ThrottleDecision> {
    const now = this.clock.now();
    const windowS = this.limits.windowSeconds;
    const nowIso = now.toISOString();
    const cutoff = new Date(now.getTime() - windowS * 1000).toISOString();
    const maxUser = this.limits.maxFailuresPerUser;
    const maxAddress = this.limits.maxFailuresPerAddress;
    const userSubj = userSubject(tenantId, username);
    // A row holds at most max + 1 failures: max + 1 only while a refused try is being taken back.
    const { rows } = await sql<{ scope: Scope; subject: string; window_start: Date; failures: number }>`
      INSERT INTO sign_in_failures AS f (scope, subject, window_start, failures, blocked_until)
      VALUES ('user', ${userSubj}, ${nowIso}::timestamptz, 1, NULL), ('address', ${address}, ${nowIso}::timestamptz, 1, NULL)
      ON CONFLICT (scope, subject) DO UPDATE SET
        window_start = CASE WHEN f.window_start <= ${cutoff}::timestamptz THEN EXCLUDED.window_start ELSE f.window_start END,
        failures = CASE WHEN f.window_start <= ${cutoff}::timestamptz THEN 1
          ELSE LEAST(f.failures + 1, CASE f.scope WHEN 'user' THEN ${maxUser}::integer ELSE ${maxAddress}::integer END + 1) END,
        blocked_until = CASE
          WHEN f.window_start <= ${cutoff}::timestamptz THEN NULL
          WHEN f.failures + 1 >= CASE f.scope WHEN 'user' THEN ${maxUser}::integer ELSE ${maxAddress}::integer END
            THEN f.window_start + ${windowS}::integer * interval '1 second'
          ELSE NULL END
      RETURNING scope, subject, window_start, failures`.execute(this.db);
    const refused = rows.filter((r) => r.failures > this.max(r.scope));
    if (refused.length === 0) {
      return { granted: { rows: rows.map((r) => ({ scope: r.scope, subject: r.subject, windowStart: r.window_start })) } };
    }
    // take the try back: granted rows lose this failure, refused ones return to their max
    await Promise.all(
      rows.map((r) =>
        sql`UPDATE sign_in_failures SET failures = ${r.failures > this.max(r.scope) ? sql`LEAST(failures, ${this.max(r.scope)}::integer)` : sql`GREATEST(failures - 1, 0)`}
          WHERE scope = ${r.scope} AND subject = ${r.subject} AND window_start = ${r.window_start}`.execute(this.db),
      ),
    );
    const windowMs = windowS * 1000;
    const retryAfterMs = Math.max(...refused.map((r) => r.window_start.getTime() + windowMs - now.getTime()));
    return { blocked: true, retryAfterSeconds: Math.max(1, Math.ceil(retryAfterMs / 1000)) };
  }

  /**
   * Takes a granted reservation back. The password was right: the username's failures are
   * cleared (a success resets it) and the address's reserved failure is taken back. With
   * `keepUser` (the password could not be checked) only this try is taken back from both.
   */
  async release(reservation: Reservation, opts: { keepUser?: boolean } = {}): Promise<void> {
    for (const r of reservation.rows) {
      if (r.scope === 'user' && !opts.keepUser) {
        await this.db.deleteFrom('sign_in_failures').where('scope', '=', 'user').where('subject', '=', r.subject).execute();
      } else {
        await sql`UPDATE sign_in_failures SET failures = GREATEST(failures - 1, 0),
            blocked_until = CASE WHEN failures - 1 >= ${this.max(r.scope)}::integer THEN blocked_until ELSE NULL END
          WHERE scope = ${r.scope} AND subject = ${r.subject} AND window_start = ${r.windowStart}`.execute(this.db);
      }
    }
  }

  /** Deletes rows whose window ended; for a periodic clean-up. */
  async prune(): Promise<number> {
    const cutoff = new Date(this.clock.now().getTime() - this.limits.windowSeconds * 1000);
    // SKIP LOCKED: rows a sign-in is counting, or another server process's sweep is deleting, wait for the next sweep
    const r = await sql`DELETE FROM sign_in_failures WHERE (scope, subject) IN (
      SELECT scope, subject FROM sign_in_failures WHERE window_start <= ${cutoff} FOR UPDATE SKIP LOCKED)`.execute(this.db);
    return Number(r.numAffectedRows ?? 0);
  }
}
