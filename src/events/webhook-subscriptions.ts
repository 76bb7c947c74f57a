/**
 * Webhook subscriptions (docs/events.md, "Webhooks"): a tenant's endpoints, the event types each
 * wants, its signing secret, and whether the tenant's endpoints may reach non-public addresses.
 * Delivery is the dispatcher's (webhook-dispatcher.ts); the delivery log is webhook-deliveries.ts.
 */
import crypto from 'node:crypto';
import net from 'node:net';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import { Refusal } from '../lib/errors.js';
import { isNonPublicAddress } from '../lib/address-guard.js';
import { watermarkIdOf } from './store.js';

const EVENT_TYPE = /^(?:[a-z]+(?:_[a-z]+)*)\.(?:\*|[a-z]+(?:_[a-z]+)*)$/;

export interface Subscription {
  id: number;
  url: string;
  description: string;
  eventTypes: string[];
  enabled: boolean;
  disabledReason: string | null;
  createdAt: Date;
}

export interface SubscriptionInput {
  url: string;
  eventTypes?: string[];
  description?: string;
  enabled?: boolean;
}

/** A new signing secret in the Standard Webhooks form: whsec_ + base64 of 24 random bytes. */
export function newSigningSecret(): string {
  return `whsec_${crypto.randomBytes(24).toString('base64')}`;
}

function readUrl(raw: unknown): string {
  if (typeof raw !== 'string' || raw.length > 2000)
    throw new Refusal('invalid_field', 'url must be an http(s) URL', [
      { field: 'url', code: 'invalid_field', message: 'url must be an http(s) URL of at most 2000 characters' },
    ]);
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new Refusal('invalid_field', 'url is not a URL', [{ field: 'url', code: 'invalid_field', message: 'url is not a URL' }]);
  }
  if (!['http:', 'https:'].includes(u.protocol) || u.username || u.password)
    throw new Refusal('invalid_field', 'url must be http(s) without credentials', [
      { field: 'url', code: 'invalid_field', message: 'url must be http:// or https:// without user:password' },
    ]);
  return u.toString();
}

function readTypes(raw: unknown): string[] {
  if (raw === undefined) return [];
  if (!Array.isArray(raw) || raw.length > 100 || raw.some((t) => typeof t !== 'string' || !EVENT_TYPE.test(t)))
    throw new Refusal('invalid_field', 'eventTypes must be event types like task.solved or task.*', [
      {
        field: 'eventTypes',
        code: 'invalid_field',
        message: 'eventTypes must be a list of event types like "task.solved" or "task.*" (empty: all)',
      },
    ]);
  return [...new Set(raw as string[])].sort();
}

async function allowsNonPublic(db: Kysely<Database>, tenantId: number): Promise<boolean> {
  const { rows } = await sql<{ allow: boolean }>`SELECT webhooks_allow_private AS allow FROM tenants WHERE id = ${tenantId}`.execute(db);
  return rows[0]?.allow ?? false;
}

/** Refuses a URL whose host is a literal non-public address (names are checked at connect time). */
async function checkTarget(db: Kysely<Database>, tenantId: number, url: string): Promise<void> {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  const literal = net.isIP(host) > 0 || host === 'localhost' || host.endsWith('.localhost');
  if (literal && (net.isIP(host) ? isNonPublicAddress(host) : true) && !(await allowsNonPublic(db, tenantId)))
    throw new Refusal('invalid_field', `url: ${host} is not a public address`, [
      {
        field: 'url',
        code: 'invalid_field',
        message: `${host} is a loopback, link-local or private address; an admin may allow such targets for the tenant`,
      },
    ]);
}

const SUBSCRIPTION_COLUMNS = sql`id, url, description, event_types, enabled, disabled_reason, created_at`;
const toSubscription = (r: any): Subscription => ({
  id: r.id,
  url: r.url,
  description: r.description,
  eventTypes: r.event_types,
  enabled: r.enabled,
  disabledReason: r.disabled_reason,
  createdAt: r.created_at,
});

/** Creates a subscription; the signing secret is returned this once. New subscriptions get events from now on. */
export async function createSubscription(
  db: Kysely<Database>,
  tenantId: number,
  input: SubscriptionInput,
): Promise<{ subscription: Subscription; secret: string }> {
  const url = readUrl(input.url);
  const types = readTypes(input.eventTypes);
  await checkTarget(db, tenantId, url);
  const secret = newSigningSecret();
  const { rows } = await sql`INSERT INTO webhook_subscriptions (tenant_id, url, secret, event_types, enabled, description, cursor_seq)
    VALUES (${tenantId}, ${url}, ${secret}, ${types}::text[], ${input.enabled ?? true}, ${String(input.description ?? '').slice(0, 500)},
      ${watermarkIdOf(tenantId)})
    RETURNING ${SUBSCRIPTION_COLUMNS}`.execute(db);
  return { subscription: toSubscription(rows[0]), secret };
}

export async function listSubscriptions(db: Kysely<Database>, tenantId: number): Promise<Subscription[]> {
  const { rows } = await sql`SELECT ${SUBSCRIPTION_COLUMNS} FROM webhook_subscriptions WHERE tenant_id = ${tenantId} ORDER BY id`.execute(
    db,
  );
  return rows.map(toSubscription);
}

export async function getSubscription(db: Kysely<Database>, tenantId: number, id: number): Promise<Subscription> {
  const { rows } =
    await sql`SELECT ${SUBSCRIPTION_COLUMNS} FROM webhook_subscriptions WHERE tenant_id = ${tenantId} AND id = ${id}`.execute(db);
  if (!rows[0]) throw new Refusal('not_found', `webhook ${id} not found`);
  return toSubscription(rows[0]);
}

/** Changes a subscription; enabling it again clears its failure streak. */
export async function updateSubscription(
  db: Kysely<Database>,
  tenantId: number,
  id: number,
  patch: Partial<SubscriptionInput>,
): Promise<Subscription> {
  const url = patch.url === undefined ? null : readUrl(patch.url);
  const types = patch.eventTypes === undefined ? null : readTypes(patch.eventTypes);
  if (url) await checkTarget(db, tenantId, url);
  const { rows } = await sql`UPDATE webhook_subscriptions SET url = COALESCE(${url}, url),
      event_types = COALESCE(${types}::text[], event_types),
      description = COALESCE(${patch.description === undefined ? null : String(patch.description).slice(0, 500)}, description),
      enabled = COALESCE(${patch.enabled ?? null}::boolean, enabled),
      failed_in_a_row = CASE WHEN ${patch.enabled === true} THEN 0 ELSE failed_in_a_row END,
      disabled_reason = CASE WHEN ${patch.enabled === true} THEN NULL ELSE disabled_reason END,
      updated_at = now()
    WHERE tenant_id = ${tenantId} AND id = ${id} RETURNING ${SUBSCRIPTION_COLUMNS}`.execute(db);
  if (!rows[0]) throw new Refusal('not_found', `webhook ${id} not found`);
  return toSubscription(rows[0]);
}

/** A new signing secret, returned this once; the old one stops working at once. */
export async function rotateSecret(db: Kysely<Database>, tenantId: number, id: number): Promise<string> {
  const secret = newSigningSecret();
  const r =
    await sql`UPDATE webhook_subscriptions SET secret = ${secret}, updated_at = now() WHERE tenant_id = ${tenantId} AND id = ${id}`.execute(
      db,
    );
  if (!r.numAffectedRows) throw new Refusal('not_found', `webhook ${id} not found`);
  return secret;
}

export async function deleteSubscription(db: Kysely<Database>, tenantId: number, id: number): Promise<void> {
  const r = await sql`DELETE FROM webhook_subscriptions WHERE tenant_id = ${tenantId} AND id = ${id}`.execute(db);
  if (!r.numAffectedRows) throw new Refusal('not_found', `webhook ${id} not found`);
}

export async function getAllowPrivateTargets(db: Kysely<Database>, tenantId: number): Promise<boolean> {
  return allowsNonPublic(db, tenantId);
}

/** Lets (or stops letting) the tenant's webhooks reach loopback, link-local and private addresses. */
export async function setAllowPrivateTargets(db: Kysely<Database>, tenantId: number, allow: boolean): Promise<void> {
  await sql`UPDATE tenants SET webhooks_allow_private = ${allow}, updated_at = now() WHERE id = ${tenantId}`.execute(db);
}
