/** Set-up helpers: a tenant with a Mate and processes, through the real services. */
import type { Store } from '../../src/db/store.js';
import { createTenant } from '../../src/tenants/service.js';
import { createMate, createUser } from '../../src/accounts/service.js';
import { createProcess, type CreateProcessInput } from '../../src/processes/service.js';
import { recordSecret, recordUniqueFields } from './log-sink.js';

export const MATE_PASSWORD = 'correct-horse-battery';

export interface SeededTenant {
  tenantId: number;
  clientId: string;
  apiSecret: string;
  mateId: number;
  mateUsername: string;
  matePassword: string;
}

export async function seedTenant(
  store: Store,
  clientId: string,
  opts: { timeZone?: string; processes?: CreateProcessInput[] } = {},
): Promise<SeededTenant> {
  const { tenant, apiSecret } = await createTenant(store.db, { clientId, timeZone: opts.timeZone });
  const mate = await createMate(store.db, tenant.id, { username: `${clientId}-mate`, password: MATE_PASSWORD });
  for (const p of opts.processes ?? []) await createProcess(store.db, tenant.id, p);
  recordSecret(apiSecret, MATE_PASSWORD);
  recordUniqueFields(opts.processes ?? []);
  return {
    tenantId: tenant.id,
    clientId: tenant.clientId,
    apiSecret,
    mateId: mate.id,
    mateUsername: mate.username,
    matePassword: MATE_PASSWORD,
  };
}

export async function seedUser(
  store: Store,
  tenantId: number,
  username: string,
  role: 'admin' | 'developer' | 'agent' | 'viewer' = 'admin',
) {
  recordSecret('a-long-enough-password');
  return createUser(store.db, tenantId, { username, role, password: 'a-long-enough-password' });
}
