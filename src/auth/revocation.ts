/**
 * What a token's validity depends on besides its signature: the tenant (its API-secret versions)
 * and the Mate (enabled, credential version). Kept in memory so that checking a token costs no
 * query per call; the changes below raise `cv`/`sv` and so revoke earlier tokens.
 *
 * A change made in this process clears the caches at once. Another process re-reads an entry
 * once it is older than STATE_MAX_AGE_MS, so a revocation reaches it within ~2 s (the contract
 * allows 5 s).
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import type { Store } from '../db/store.js';
import { inTransaction } from '../db/tx.js';
import { AppError } from '../lib/errors.js';
import { systemClock, type Clock } from '../lib/clock.js';
import { randomSecret, sha256 } from '../lib/secrets.js';
import { hashPassword, passwordProblem } from '../accounts/passwords.js';
import { normalizeClientId } from '../tenants/service.js';

/** Age after which a cached entry is re-read: bounds how late another process's revocation lands. */
export const STATE_MAX_AGE_MS = 2000;
/** Entries kept per cache before it is emptied; far above any real number of Mates and tenants. */
const MAX_ENTRIES = 100_000;

export interface TenantState {
  tenantId: number;
  clientId: string;
  timeZone: string;
  secretVersion: number;
  /** Earlier secret versions still in their grace period, with the end of it (ms since epoch). */
  graceVersions: Array<{ version: number; until: number }>;
}

export interface MateState {
  tenantId: number;
  mateId: number;
  username: string;
  displayName: string;
  disabled: boolean;
  credentialVersion: number;
}

/** Whether tokens (and secrets) of secret version `sv` are still accepted at `now`. */
export function secretVersionAccepted(tenant: TenantState, sv: number, now: Date): boolean {
  if (sv === tenant.secretVersion) return true;
  return tenant.graceVersions.some((g) => g.version === sv && g.until > now.getTime());
}

/** A read-through cache whose entries expire by age; one load per key at a time. */
class StateCache<V> {
  private entries = new Map<string, { value: V; loadedAt: number }>();
  private inflight = new Map<string, Promise<V>>();
  // Raised by every invalidation; a load that started before one does not store its result.
  private epoch = 0;

  constructor(
    private readonly clock: Clock,
    private readonly load: (key: string) => Promise<V>,
  ) {}

  get(key: string): Promise<V> {
    const now = this.clock.now().getTime();
    const hit = this.entries.get(key);
    if (hit && now >= hit.loadedAt && now - hit.loadedAt < STATE_MAX_AGE_MS) return Promise.resolve(hit.value);
    const running = this.inflight.get(key);
    if (running) return running;
    const epoch = this.epoch;
    const p = this.load(key)
      .then((value) => {
        if (this.epoch === epoch) {
          if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
          this.entries.set(key, { value, loadedAt: now });
        }
        return value;
      })
      .finally(() => {
        if (this.inflight.get(key) === p) this.inflight.delete(key);
      });
    this.inflight.set(key, p);
    return p;
  }

  invalidate(key?: string): void {
    this.epoch++;
    if (key === undefined) {
      this.entries.clear();
      this.inflight.clear();
    } else {
      this.entries.delete(key);
      this.inflight.delete(key);
    }
  }
}

// Caches of this process per database, so that a change made here reaches them at once.
const liveCaches = new WeakMap<Kysely<Database>, Set<RevocationCache>>();

export class RevocationCache {
  private readonly tenants: StateCache<TenantState | null>;
  private readonly mates: StateCache<MateState | null>;

  constructor(
    private readonly db: Kysely<Database>,
    clock: Clock,
  ) {
    this.tenants = new StateCache(clock, (clientId) => loadTenantState(db, clientId, clock.now()));
    this.mates = new StateCache(clock, (key) => {
      const [tenantId, mateId] = key.split(':').map(Number);
      return loadMateState(db, tenantId, mateId);
    });
    let set = liveCaches.get(db);
    if (!set) liveCaches.set(db, (set = new Set()));
    set.add(this);
  }

  tenant(clientId: string): Promise<TenantState | null> {
    return this.tenants.get(normalizeClientId(clientId));
  }

  mate(tenantId: number, mateId: number): Promise<MateState | null> {
    return this.mates.get(`${tenantId}:${mateId}`);
  }

  invalidateMate(tenantId: number, mateId: number): void {
    this.mates.invalidate(`${tenantId}:${mateId}`);
  }

  /** Tenants are cached by Client Id; a tenant change is rare, so all tenant entries go. */
  invalidateTenants(): void {
    this.tenants.invalidate();
  }

  close(): void {
    liveCaches.get(this.db)?.delete(this);
  }
}

function localCaches(db: Kysely<Database>): Iterable<RevocationCache> {
  return liveCaches.get(db) ?? [];
}

export async function loadTenantState(db: Kysely<Database>, clientId: string, now: Date): Promise<TenantState | null> {
  const tenant = await db
    .selectFrom('tenants')
    .select(['id', 'client_id', 'time_zone', 'secret_version'])
    .where('client_id', '=', clientId)
    .executeTakeFirst();
  if (!tenant) return null;
  const grace = await db
    .selectFrom('tenant_api_secrets')
    .select(['version', 'expires_at'])
    .where('tenant_id', '=', tenant.id)
    .where('version', '<>', tenant.secret_version)
    .where('expires_at', '>', now)
    .execute();
  return {
    tenantId: tenant.id,
    clientId: tenant.client_id,
    timeZone: tenant.time_zone,
    secretVersion: tenant.secret_version,
    graceVersions: grace.map((g) => ({ version: g.version, until: g.expires_at!.getTime() })),
  };
}

export async function loadMateState(db: Kysely<Database>, tenantId: number, mateId: number): Promise<MateState | null> {
  if (!Number.isSafeInteger(tenantId) || !Number.isSafeInteger(mateId)) return null;
  const row = await db
    .selectFrom('mates')
    .select(['tenant_id', 'id', 'username', 'display_name', 'disabled', 'credential_version'])
    .where('tenant_id', '=', tenantId)
    .where('id', '=', mateId)
    .executeTakeFirst();
  if (!row) return null;
  return {
    tenantId: row.tenant_id,
    mateId: row.id,
    username: row.username,
    displayName: row.display_name,
    disabled: row.disabled,
    credentialVersion: row.credential_version,
  };
}

interface ChangeOptions {
  clock?: Clock;
}

/**
 * Sets a Mate's password and raises its credential version: its earlier tokens are refused.
 * Pass the store (not a transaction) so this process's caches are cleared at once.
 */
export async function changeMatePassword(store: Pick<Store, 'db'>, tenantId: number, mateId: number, password: string, opts: ChangeOptions = {}): Promise<{ credentialVersion: number }> {
  const problem = passwordProblem(password);
  if (problem) throw new AppError('invalid_field', `Password ${problem}`);
  const now = (opts.clock ?? systemClock).now();
  const passwordHash = await hashPassword(password);
  const row = await store.db
    .updateTable('mates')
    .set((eb) => ({ password_hash: passwordHash, credential_version: eb('credential_version', '+', 1), updated_at: now }))
    .where('tenant_id', '=', tenantId)
    .where('id', '=', mateId)
    .returning('credential_version')
    .executeTakeFirst();
  if (!row) throw new AppError('not_found', `No Mate ${mateId}`);
  for (const cache of localCaches(store.db)) cache.invalidateMate(tenantId, mateId);
  return { credentialVersion: row.credential_version };
}

/**
 * Disables (raising the credential version, so its tokens are refused) or enables a Mate.
 * Enabling does not bring back tokens from before the disabling.
 */
export async function setMateDisabled(store: Pick<Store, 'db'>, tenantId: number, mateId: number, disabled: boolean, opts: ChangeOptions = {}): Promise<{ disabled: boolean; credentialVersion: number }> {
  const now = (opts.clock ?? systemClock).now();
  const row = await store.db
    .updateTable('mates')
    .set((eb) => ({
      disabled,
      // only a change to disabled raises cv; disabling twice keeps one revocation
      credential_version: disabled
        ? eb.case().when('disabled', '=', false).then(eb('credential_version', '+', 1)).else(eb.ref('credential_version')).end()
        : eb.ref('credential_version'),
      updated_at: now,
    }))
    .where('tenant_id', '=', tenantId)
    .where('id', '=', mateId)
    .returning(['disabled', 'credential_version'])
    .executeTakeFirst();
  if (!row) throw new AppError('not_found', `No Mate ${mateId}`);
  for (const cache of localCaches(store.db)) cache.invalidateMate(tenantId, mateId);
  return { disabled: row.disabled, credentialVersion: row.credential_version };
}

/**
 * Gives the tenant a new API secret (returned once; only its SHA-256 is kept) and raises the
 * secret version. The earlier secret(s), and tokens issued with them, keep working for the
 * tenant's secret_grace_seconds (default 0: refused at once).
 */
export async function rotateApiSecret(store: Pick<Store, 'db'>, tenantId: number, opts: ChangeOptions = {}): Promise<{ apiSecret: string; secretVersion: number; previousValidUntil: Date }> {
  const now = (opts.clock ?? systemClock).now();
  const apiSecret = randomSecret();
  const result = await inTransaction(store.db, async (trx) => {
    const tenant = await trx
      .selectFrom('tenants')
      .select(['secret_version', 'secret_grace_seconds'])
      .where('id', '=', tenantId)
      .forUpdate()
      .executeTakeFirst();
    if (!tenant) throw new AppError('not_found', `No tenant ${tenantId}`);
    const version = tenant.secret_version + 1;
    const previousValidUntil = new Date(now.getTime() + tenant.secret_grace_seconds * 1000);
    await trx
      .updateTable('tenant_api_secrets')
      .set({ expires_at: previousValidUntil })
      .where('tenant_id', '=', tenantId)
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', previousValidUntil)]))
      .execute();
    await trx.insertInto('tenant_api_secrets').values({ tenant_id: tenantId, version, secret_hash: sha256(apiSecret) }).execute();
    await trx.updateTable('tenants').set({ secret_version: version, updated_at: now }).where('id', '=', tenantId).execute();
    return { secretVersion: version, previousValidUntil };
  });
  for (const cache of localCaches(store.db)) cache.invalidateTenants();
  return { apiSecret, ...result };
}
