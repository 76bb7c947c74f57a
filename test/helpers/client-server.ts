/**
 * The client's tests run it against a real server on a real port: the app of test/helpers/app.ts
 * listening on 127.0.0.1, a seeded tenant, and MateClients pointed at it.
 */
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { testApp, type TestApp } from './app.js';
import { seedTenant, type SeededTenant } from './seed.js';
import type { Clock } from '../../src/lib/clock.js';
import type { Config } from '../../src/config.js';
import type { CreateProcessInput } from '../../src/processes/service.js';
import { MateClient, type MateClientOptions } from '../../client/src/index.js';

export interface ClientServer {
  t: TestApp;
  tenant: SeededTenant;
  base: string;
  /** a MateClient of the tenant's Mate (options override) */
  client(options?: Partial<MateClientOptions>): MateClient;
  processId(key: string): Promise<number>;
  close(): Promise<void>;
}

export async function clientServer(
  clientId: string,
  processes: CreateProcessInput[],
  opts: { clock?: Clock; config?: Partial<Config> } = {},
): Promise<ClientServer> {
  const t = await testApp(opts);
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  const tenant = await seedTenant(t.store, clientId, { processes });
  return {
    t,
    tenant,
    base,
    client: (options = {}) =>
      new MateClient({
        baseUrl: base,
        clientId: tenant.clientId,
        clientSecret: tenant.apiSecret,
        username: tenant.mateUsername,
        password: tenant.matePassword,
        ...options,
      }),
    async processId(key: string) {
      const { rows } = await sql<{
        id: number;
      }>`SELECT id FROM processes WHERE tenant_id = ${tenant.tenantId} AND process_key = ${key}`.execute(t.store.db);
      return rows[0].id;
    },
    close: () => t.close(),
  };
}

/** A fetch that counts the requests made through it, by path. */
export function countingFetch(): { fetch: typeof fetch; count(path: RegExp): number; paths: string[] } {
  const paths: string[] = [];
  return {
    paths,
    fetch: (input, init) => {
      paths.push(new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url).pathname);
      return fetch(input, init);
    },
    count: (re) => paths.filter((p) => re.test(p)).length,
  };
}

export interface TaskRowView {
  id: number;
  queue: string;
  error: boolean;
  reason: string | null;
  retry_count: number;
  locked_until: Date | null;
  data: Record<string, unknown>;
}

/** The tasks of a process as stored. */
export async function tasksOf(t: TestApp, tenantId: number, processId: number): Promise<TaskRowView[]> {
  const { rows } = await sql<TaskRowView>`SELECT id, queue, error, reason, retry_count, locked_until, data FROM tasks
    WHERE tenant_id = ${tenantId} AND process_id = ${processId} ORDER BY id`.execute(t.store.db);
  return rows;
}
