/** SQL of the token endpoint: the client (tenant and its usable API secrets) and the Mate. */
import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import { normalizeClientId } from '../tenants/service.js';
import { isStorableText } from '../lib/values.js';

export interface ClientRecord {
  tenantId: number;
  clientId: string;
  /** The current secret and those still in their grace period: version and SHA-256 hex. */
  secrets: Array<{ version: number; hash: string }>;
}

/** One query whether or not the tenant exists, so both answers take about as long. */
export async function findClient(db: Kysely<Database>, clientId: string, now: Date): Promise<ClientRecord | null> {
  // no tenant has a Client Id PostgreSQL could not even compare (U+0000, a lone surrogate)
  if (!isStorableText(clientId)) return null;
  const rows = await db
    .selectFrom('tenants as t')
    .leftJoin('tenant_api_secrets as s', (join) =>
      join.onRef('s.tenant_id', '=', 't.id').on((eb) => eb.or([eb('s.expires_at', 'is', null), eb('s.expires_at', '>', now)])),
    )
    .select(['t.id', 't.client_id', 's.version', 's.secret_hash'])
    .where('t.client_id', '=', normalizeClientId(clientId))
    .execute();
  if (rows.length === 0) return null;
  return {
    tenantId: rows[0].id,
    clientId: rows[0].client_id,
    secrets: rows.filter((r) => r.version !== null && r.secret_hash !== null).map((r) => ({ version: r.version!, hash: r.secret_hash! })),
  };
}

export interface MateRecord {
  id: number;
  username: string;
  passwordHash: string;
  disabled: boolean;
  credentialVersion: number;
}

export async function findMateByUsername(db: Kysely<Database>, tenantId: number, username: string): Promise<MateRecord | null> {
  if (!isStorableText(username)) return null;
  const row = await db
    .selectFrom('mates')
    .select(['id', 'username', 'password_hash', 'disabled', 'credential_version'])
    .where('tenant_id', '=', tenantId)
    .where((eb) => eb(eb.fn('lower', ['username']), '=', username.toLowerCase()))
    .executeTakeFirst();
  return row
    ? {
        id: row.id,
        username: row.username,
        passwordHash: row.password_hash,
        disabled: row.disabled,
        credentialVersion: row.credential_version,
      }
    : null;
}
