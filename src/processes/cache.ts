/**
 * Process definitions as the Mate API reads them on every call, kept for one second per server
 * process: a TakeNext then costs one statement instead of two (bench/take-cycle: about +20%
 * throughput). Changes made through this process (settings, a Failure report) are seen at once;
 * changes made through another server process within a second. Misses are not kept, so a new
 * process is found at once.
 */
import type { Kysely } from 'kysely';
import { loadProcessByKey, type ProcessDef } from './store.js';

// One second: the longest a "Stop process" or a settings change takes to reach another server
// process, short enough that people never notice it.
const TTL_MS = 1000;

const caches = new WeakMap<object, Map<string, { def: ProcessDef; at: number }>>();

function cacheOf(db: Kysely<any>): Map<string, { def: ProcessDef; at: number }> {
  let c = caches.get(db);
  if (!c) {
    c = new Map();
    caches.set(db, c);
  }
  return c;
}

/** `now`: a monotonic time in ms (performance.now(); tests pass their own). */
export async function cachedProcessByKey(db: Kysely<any>, tenantId: number, processKey: string, now = performance.now()): Promise<ProcessDef | null> {
  const cache = cacheOf(db);
  const key = `${tenantId}:${processKey.toLowerCase()}`;
  const hit = cache.get(key);
  if (hit && now - hit.at < TTL_MS) return hit.def;
  const def = await loadProcessByKey(db, tenantId, processKey);
  if (def) cache.set(key, { def, at: now });
  else cache.delete(key);
  return def;
}

/** Forgets the tenant's cached processes (after a change made through `db`). */
export function forgetProcesses(db: Kysely<any>, tenantId: number): void {
  const cache = caches.get(db);
  if (!cache) return;
  const prefix = `${tenantId}:`;
  for (const k of cache.keys()) if (k.startsWith(prefix)) cache.delete(k);
}
