/**
 * Idempotency-Key on create calls (docs/mate-api.md §8). The key row is inserted in the transaction of
 * the create: a concurrent request with the same key waits on that row, then replays the stored
 * answer, so a key never creates twice, even when the server dies between commit and answer.
 */
import crypto from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/types.js';

// Answers are kept 24 h (docs/mate-api.md §8): long enough for any client retry loop.
const TTL_MS = 24 * 3600 * 1000;

export interface StoredAnswer {
  status: number;
  body: unknown;
}

export type IdempotentOutcome =
  { kind: 'fresh'; answer: StoredAnswer } | { kind: 'replay'; answer: StoredAnswer } | { kind: 'conflict' } | { kind: 'in_progress' };

/**
 * Canonical form of a request: endpoint, process and JSON value, key order ignored, and key case
 * too (keys match case-insensitively, docs/mate-api.md §3, and a body with two keys equal ignoring case is
 * refused before this point).
 */
export function requestHash(endpoint: string, processKey: string, body: unknown): string {
  // Objects and arrays are tagged, so no object canonicalizes like an array (`[{"k":"v"}]` and
  // `[[["k","v"]]]` differ); keys are lower-cased (two keys equal ignoring case are refused) and
  // sorted, so key order and letter case do not matter.
  const canon = (v: unknown): unknown => {
    if (Array.isArray(v)) return { a: v.map(canon) };
    if (v && typeof v === 'object') {
      const o = v as Record<string, unknown>;
      return {
        o: Object.keys(o)
          .map((k) => [k.toLowerCase(), canon(o[k])] as const)
          .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)),
      };
    }
    // JSON.stringify writes Infinity (from 1e309) as null
    if (typeof v === 'number' && !Number.isFinite(v)) return { x: String(v) };
    return v;
  };
  return crypto
    .createHash('sha256')
    .update(JSON.stringify([endpoint.toLowerCase(), processKey.toLowerCase(), canon(body)]))
    .digest('hex');
}

export function isValidKey(key: string): boolean {
  return /^[\x21-\x7e]{1,255}$/.test(key);
}

/** Statuses whose answers are stored; others (401, 404, 429, 5xx) let a retry run anew. */
const STORED = new Set([200, 400]);

export async function withIdempotency(
  db: Kysely<Database>,
  scope: { tenantId: number; mateId: number; key: string; hash: string; now: Date },
  run: (trx: Kysely<Database>) => Promise<StoredAnswer>,
): Promise<IdempotentOutcome> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const outcome = await db.transaction().execute(async (trx): Promise<IdempotentOutcome | null> => {
      const inserted = await sql`INSERT INTO idempotency_keys (tenant_id, mate_id, key, request_hash, state, created_at, expires_at)
        VALUES (${scope.tenantId}, ${scope.mateId}, ${scope.key}, ${scope.hash}, 'in_progress', ${scope.now}, ${new Date(scope.now.getTime() + TTL_MS)})
        ON CONFLICT DO NOTHING RETURNING key`.execute(trx);
      if (inserted.rows.length === 1) {
        const answer = await run(trx);
        if (STORED.has(answer.status)) {
          // kept as JSON text: a replay is the body as answered (task objects have a key order, docs/mate-api.md §6.1)
          await sql`UPDATE idempotency_keys SET state = 'done', status_code = ${answer.status}, response = ${JSON.stringify(answer.body)}
            WHERE tenant_id = ${scope.tenantId} AND mate_id = ${scope.mateId} AND key = ${scope.key}`.execute(trx);
        } else {
          await sql`DELETE FROM idempotency_keys WHERE tenant_id = ${scope.tenantId} AND mate_id = ${scope.mateId} AND key = ${scope.key}`.execute(
            trx,
          );
        }
        return { kind: 'fresh', answer };
      }
      const { rows } = await sql<{
        request_hash: string;
        state: string;
        status_code: number | null;
        response: string | null;
        expires_at: Date;
      }>`
        SELECT request_hash, state, status_code, response, expires_at FROM idempotency_keys
        WHERE tenant_id = ${scope.tenantId} AND mate_id = ${scope.mateId} AND key = ${scope.key}`.execute(trx);
      const row = rows[0];
      if (!row) return null; // deleted meanwhile: try again
      if (row.expires_at <= scope.now) {
        await sql`DELETE FROM idempotency_keys WHERE tenant_id = ${scope.tenantId} AND mate_id = ${scope.mateId} AND key = ${scope.key}`.execute(
          trx,
        );
        return null;
      }
      if (row.request_hash !== scope.hash) return { kind: 'conflict' };
      if (row.state !== 'done') return { kind: 'in_progress' };
      const body = JSON.parse(row.response ?? 'null');
      return { kind: 'replay', answer: { status: row.status_code!, body } };
    });
    if (outcome) return outcome;
  }
  return { kind: 'in_progress' };
}
