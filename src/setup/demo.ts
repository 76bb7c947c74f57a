/**
 * First start: on an empty store, create a demo tenant with a `demo` process, an admin and a
 * Mate, and return their credentials so the CLI can print them once.
 */
import { sql } from 'kysely';
import type { Store } from '../db/store.js';
import { createTenant, countTenants } from '../tenants/service.js';
import { createUser, createMate } from '../accounts/service.js';
import { createProcess, type FieldInput } from '../processes/service.js';

export const DEMO_FIELDS: FieldInput[] = [
  { name: 'coreSystemKey', label: 'Core system key', type: 'text', isKey: true },
  { name: 'dropdownField', label: 'Dropdown field', type: 'dropdown', options: ['Option 1', 'Option 2', 'Option 3'] },
  { name: 'textField', label: 'Text field', type: 'text' },
  { name: 'numberField', label: 'Number field', type: 'number' },
];

export interface DemoCredentials {
  clientId: string;
  apiSecret: string;
  processKey: string;
  admin: { username: string; password: string };
  mate: { username: string; password: string };
}

// pg_advisory_xact_lock key: serializes first-start set-up across server processes.
const SETUP_LOCK_KEY = 720_451_994;

/** Creates the demo set-up if the store has no tenant yet; null when it already has one. */
export async function ensureDemo(store: Store): Promise<DemoCredentials | null> {
  return store.db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(${SETUP_LOCK_KEY})`.execute(trx);
    if ((await countTenants(trx)) > 0) return null;
    const { tenant, apiSecret } = await createTenant(trx, { clientId: 'demo', name: 'Demo', timeZone: 'UTC' });
    const process = await createProcess(trx, tenant.id, {
      processKey: 'demo',
      name: 'Demo process',
      description: 'An example process with one field of each common kind.',
      fields: DEMO_FIELDS,
    });
    const admin = await createUser(trx, tenant.id, { username: 'admin', role: 'admin' });
    const mate = await createMate(trx, tenant.id, { username: 'demo-mate' });
    return {
      clientId: tenant.clientId,
      apiSecret,
      processKey: process.processKey,
      admin: { username: admin.username, password: admin.password! },
      mate: { username: mate.username, password: mate.password! },
    };
  });
}

export function formatDemoCredentials(c: DemoCredentials, publicUrl: string): string {
  const curl = [
    `curl -s -X POST ${publicUrl}/connect/token \\`,
    `  -d grant_type=password -d client_id=${c.clientId} \\`,
    `  --data-urlencode client_secret='${c.apiSecret}' \\`,
    `  -d username=${c.mate.username} --data-urlencode password='${c.mate.password}'`,
  ].join('\n');
  return [
    '',
    '  Queuemate is set up. These credentials are shown only once: keep them.',
    '',
    `  Address:        ${publicUrl}/`,
    `  Client Id:      ${c.clientId}`,
    `  API secret:     ${c.apiSecret}`,
    `  Admin:          ${c.admin.username} / ${c.admin.password}`,
    `  Mate:           ${c.mate.username} / ${c.mate.password}`,
    `  Process:        ${c.processKey}`,
    '',
    '  Get a token for the Mate:',
    '',
    curl.replace(/^/gm, '    '),
    '',
  ].join('\n');
}
