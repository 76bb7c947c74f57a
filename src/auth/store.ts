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

/**
 * Two queries whether or not the tenant exists, so both answers take about as long: the tenant by
 * its Client Id, then its secrets by its id (tenant 0, which never exists, when there is none), a
 * statement that names its tenant (docs/deployment.md, "Beyond one PostgreSQL: Citus").
 */
export async function findClient(db: Kysely<Database>, clientId: string, now: Date): Promise<ClientRecord | null> {
  // no tenant has a Client Id PostgreSQL could not even compare (U+0000, a lone surrogate)
  if (!isStorableText(clientId)) return null;
  const tenant = await db
    .selectFrom('tenants')
    .select(['id', 'client_id'])
    .where('client_id', '=', normalizeClientId(clientId))
    .executeTakeFirst();
  const secrets = await db
    .selectFrom('tenant_api_secrets')
    .select(['version', 'secret_hash'])
    .where('tenant_id', '=', tenant?.id ?? 0)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
    .execute();
  if (!tenant) return null;
  return { tenantId: tenant.id, clientId: tenant.client_id, secrets: secrets.map((r) => ({ version: r.version, hash: r.secret_hash })) };
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
