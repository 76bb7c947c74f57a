/** Tenants and their API secrets. */
import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import { Refusal } from '../lib/errors.js';
import { inTransaction, type Tx } from '../db/tx.js';
import { randomSecret, sha256 } from '../lib/secrets.js';
import { NUMBER_FORMATS, type NumberFormat } from '../lib/values.js';

export interface Tenant {
  id: number;
  clientId: string;
  name: string;
  timeZone: string;
  /** how numbers in strings are read (src/lib/values.ts) */
  numberFormat: NumberFormat;
  secretVersion: number;
}

export function isValidTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

export function normalizeClientId(clientId: string): string {
  return clientId.trim().toLowerCase();
}

export interface CreateTenantInput {
  clientId: string;
  name?: string;
  timeZone?: string;
}

/** Creates a tenant with its first API secret; the secret is returned once and stored hashed. */
export async function createTenant(db: Kysely<Database>, input: CreateTenantInput): Promise<{ tenant: Tenant; apiSecret: string }> {
  const clientId = normalizeClientId(input.clientId);
  if (!/^[a-z0-9][a-z0-9_-]{0,62}$/.test(clientId)) {
    throw new Refusal(
      'invalid_field',
      `Client Id "${input.clientId}" must be 1-63 characters of a-z, 0-9, "-" and "_", starting with a letter or digit`,
    );
  }
  const timeZone = input.timeZone ?? 'UTC';
  if (!isValidTimeZone(timeZone))
    throw new Refusal('invalid_field', `Time zone "${timeZone}" is not an IANA time zone (e.g. Europe/Copenhagen)`);
  const apiSecret = randomSecret();
  return inTransaction(db, async (trx) => {
    const existing = await trx.selectFrom('tenants').select('id').where('client_id', '=', clientId).executeTakeFirst();
    if (existing) throw new Refusal('conflict', `A tenant with Client Id "${clientId}" already exists`);
    const row = await trx
      .insertInto('tenants')
      .values({ client_id: clientId, name: input.name ?? clientId, time_zone: timeZone })
      .returningAll()
      .executeTakeFirstOrThrow();
    await trx
      .insertInto('tenant_api_secrets')
      .values({ tenant_id: row.id, version: 1, secret_hash: sha256(apiSecret) })
      .execute();
    return { tenant: toTenant(row), apiSecret };
  });
}

function toTenant(row: {
  id: number;
  client_id: string;
  name: string;
  time_zone: string;
  number_format: NumberFormat;
  secret_version: number;
}): Tenant {
  return {
    id: row.id,
    clientId: row.client_id,
    name: row.name,
    timeZone: row.time_zone,
    numberFormat: row.number_format,
    secretVersion: row.secret_version,
  };
}

export async function findTenantByClientId(db: Kysely<Database>, clientId: string): Promise<Tenant | null> {
  const row = await db.selectFrom('tenants').selectAll().where('client_id', '=', normalizeClientId(clientId)).executeTakeFirst();
  return row ? toTenant(row) : null;
}

export async function requireTenant(db: Kysely<Database>, clientId: string): Promise<Tenant> {
  const t = await findTenantByClientId(db, clientId);
  if (!t) throw new Refusal('not_found', `No tenant with Client Id "${clientId}"`);
  return t;
}

export async function countTenants(db: Kysely<Database>): Promise<number> {
  const r = await db
    .selectFrom('tenants')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/**
 * Gives the tenant a new API secret (returned once; only its SHA-256 is kept) and raises the
 * secret version. The earlier secret(s), and tokens issued with them, keep working for
 * `graceSeconds` when given, else the tenant's secret_grace_seconds (default 0: refused at once).
 * `tx` must be a transaction.
 */
export async function rotateApiSecret(
  tx: Tx,
  tenantId: number,
  now: Date,
  graceSeconds?: number,
): Promise<{ apiSecret: string; secretVersion: number; previousValidUntil: Date }> {
  const apiSecret = randomSecret();
  const tenant = await tx.db
    .selectFrom('tenants')
    .select(['secret_version', 'secret_grace_seconds'])
    .where('id', '=', tenantId)
    .forUpdate()
    .executeTakeFirst();
  if (!tenant) throw new Refusal('not_found', `No tenant ${tenantId}`);
  const version = tenant.secret_version + 1;
  const previousValidUntil = new Date(now.getTime() + (graceSeconds ?? tenant.secret_grace_seconds) * 1000);
  await tx.db
    .updateTable('tenant_api_secrets')
    .set({ expires_at: previousValidUntil })
    .where('tenant_id', '=', tenantId)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', previousValidUntil)]))
    .execute();
  await tx.db
    .insertInto('tenant_api_secrets')
    .values({ tenant_id: tenantId, version, secret_hash: sha256(apiSecret) })
    .execute();
  await tx.db.updateTable('tenants').set({ secret_version: version, updated_at: now }).where('id', '=', tenantId).execute();
  tx.publish({ kind: 'tenant', tenantId });
  return { apiSecret, secretVersion: version, previousValidUntil };
}

export interface TenantSettings {
  id: number;
  clientId: string;
  name: string;
  timeZone: string;
  numberFormat: NumberFormat;
  secretVersion: number;
}

export async function getTenant(db: Kysely<Database>, tenantId: number): Promise<TenantSettings> {
  const row = await db.selectFrom('tenants').selectAll().where('id', '=', tenantId).executeTakeFirst();
  if (!row) throw new Refusal('not_found', `No tenant ${tenantId}`);
  return toTenant(row);
}

/**
 * Renames the tenant or changes its time zone or number format (read by every later request,
 * Mates' within seconds).
 */
export async function updateTenant(
  tx: Tx,
  tenantId: number,
  patch: { name?: string; timeZone?: string; numberFormat?: string },
  now: Date,
): Promise<TenantSettings> {
  if (patch.name !== undefined && (patch.name.trim() === '' || patch.name.length > 200)) {
    throw new Refusal('invalid_field', 'name must be 1-200 characters', [
      { field: 'name', code: 'invalid_field', message: 'name must be 1-200 characters' },
    ]);
  }
  if (patch.timeZone !== undefined && !isValidTimeZone(patch.timeZone)) {
    const message = `Time zone "${patch.timeZone}" is not an IANA time zone (e.g. Europe/Copenhagen)`;
    throw new Refusal('invalid_field', message, [{ field: 'timeZone', code: 'invalid_field', message }]);
  }
  const numberFormat = patch.numberFormat;
  if (numberFormat !== undefined && !NUMBER_FORMATS.some((f) => f === numberFormat)) {
    const message = `Number format "${numberFormat}" is not one of ${NUMBER_FORMATS.join(', ')}`;
    throw new Refusal('invalid_field', message, [{ field: 'numberFormat', code: 'invalid_field', message }]);
  }
  const row = await tx.db
    .updateTable('tenants')
    .set({
      ...(patch.name !== undefined ? { name: patch.name.trim() } : {}),
      ...(patch.timeZone !== undefined ? { time_zone: patch.timeZone } : {}),
      ...(numberFormat !== undefined ? { number_format: numberFormat as NumberFormat } : {}),
      updated_at: now,
    })
    .where('id', '=', tenantId)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw new Refusal('not_found', `No tenant ${tenantId}`);
  tx.publish({ kind: 'tenant', tenantId });
  return toTenant(row);
}
