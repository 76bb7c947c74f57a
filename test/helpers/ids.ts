/**
 * Choosing the next random ids (qm_random_id(), migration 0013) in a test's own database: the
 * function is replaced by one that hands out the queued ids first, in order, then random ones
 * again. Lets a test know an id before it exists (tenant isolation) or make a draw collide.
 */
import crypto from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/db/types.js';

/** A random id in the range qm_random_id() draws from (1 … 2^52 − 1). */
export function randomId(): number {
  return Math.max(1, Number(crypto.randomBytes(8).readBigUInt64BE(0) >> 12n));
}

const installed = new WeakSet<object>();

/** The next calls of qm_random_id() in this database answer `ids`, in order, then random ids. */
export async function queueIds(db: Kysely<Database>, ids: number[]): Promise<void> {
  if (!installed.has(db)) {
    await sql`CREATE TABLE IF NOT EXISTS qm_test_next_ids (pos bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, id bigint NOT NULL)`.execute(
      db,
    );
    await sql`CREATE OR REPLACE FUNCTION qm_random_id() RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
      DECLARE v bigint;
      BEGIN
        DELETE FROM qm_test_next_ids WHERE pos = (SELECT min(pos) FROM qm_test_next_ids) RETURNING id INTO v;
        RETURN COALESCE(v, GREATEST(('x' || substr(replace(gen_random_uuid()::text, '-', ''), 19, 13))::bit(52)::bigint, 1));
      END $$`.execute(db);
    installed.add(db);
  }
  for (const id of ids) await sql`INSERT INTO qm_test_next_ids (id) VALUES (${id})`.execute(db);
}

/** How many queued ids were not handed out yet. */
export async function queuedIds(db: Kysely<Database>): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM qm_test_next_ids`.execute(db);
  return rows[0].n;
}
