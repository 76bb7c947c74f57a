/** Dropping Idempotency-Key records past their 24 hours (docs/mate-api.md §8). */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import type { Job } from './runner.js';

export async function purgeExpiredIdempotencyKeys(db: Kysely<Database>, now: Date): Promise<number> {
  // SKIP LOCKED: the rows another server process's sweep is deleting are its own
  const r = await sql`DELETE FROM idempotency_keys WHERE (tenant_id, mate_id, key) IN (
    SELECT tenant_id, mate_id, key FROM idempotency_keys WHERE expires_at <= ${now} FOR UPDATE SKIP LOCKED)`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

/** The job; one delete claiming its rows with SKIP LOCKED: several server processes may run it at once. */
export function idempotencyExpiryJob(db: Kysely<Database>, everyMs: number): Job<{ idempotencyKeysPurged: number }> {
  return {
    name: 'idempotency-expiry',
    everyMs,
    run: async (now) => ({ idempotencyKeysPurged: await purgeExpiredIdempotencyKeys(db, now) }),
  };
}
