/**
 * What a token's validity depends on besides its signature: the tenant (its API-secret versions)
 * and the Mate (enabled, credential version). Kept in memory so that checking a token costs no
 * query per call. Password changes, disabling and secret rotation (src/accounts, src/tenants)
 * raise `cv`/`sv` and so revoke earlier tokens.
 *
 * A change committed through this process clears the caches at once (the change notifier).
 * Another process re-reads an entry once it is older than STATE_MAX_AGE_MS, so a revocation
 * reaches it within ~2 s (the contract allows 5 s).
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import type { NumberFormat } from '../lib/values.js';
import type { Clock } from '../lib/clock.js';
import type { ChangeNotifier } from '../lib/notifier.js';
import { normalizeClientId } from '../tenants/service.js';

/** Age after which a cached entry is re-read: bounds how late another process's revocation lands. */
export const STATE_MAX_AGE_MS = 2000;
/** Entries kept per cache before it is emptied; far above any real number of Mates and tenants. */
const MAX_ENTRIES = 100_000;

export interface TenantState {
  tenantId: number;
  clientId: string;
  timeZone: string;
  numberFormat: NumberFormat;
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

export class RevocationCache {
  private readonly tenants: StateCache<TenantState | null>;
  private readonly mates: StateCache<MateState | null>;

  private readonly unsubscribe: () => void;

  constructor(db: Kysely<Database>, clock: Clock, notifier: ChangeNotifier) {
    this.tenants = new StateCache(clock, (clientId) => loadTenantState(db, clientId, clock.now()));
    this.mates = new StateCache(clock, (key) => {
      const [tenantId, mateId] = key.split(':').map(Number);
      return loadMateState(db, tenantId, mateId);
    });
    // a change committed through this server process reaches the cache at once
    this.unsubscribe = notifier.subscribe((c) => {
      if (c.kind === 'mate') this.invalidateMate(c.tenantId, c.mateId);
      else if (c.kind === 'tenant') this.invalidateTenants();
    });
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
    this.unsubscribe();
  }
}

export async function loadTenantState(db: Kysely<Database>, clientId: string, now: Date): Promise<TenantState | null> {
  const tenant = await db
    .selectFrom('tenants')
    .select(['id', 'client_id', 'time_zone', 'number_format', 'secret_version'])
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
    numberFormat: tenant.number_format,
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
