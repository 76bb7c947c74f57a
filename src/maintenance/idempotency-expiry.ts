/** Dropping Idempotency-Key records past their 24 hours (docs/mate-api.md §8). */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/types.js';

export async function purgeExpiredIdempotencyKeys(db: Kysely<Database>, now: Date): Promise<number> {
  const r = await sql`DELETE FROM idempotency_keys WHERE expires_at <= ${now}`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}
