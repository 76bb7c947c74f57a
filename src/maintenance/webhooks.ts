/**
 * The webhook delivery job: every server process runs the dispatcher when events of a tenant with
 * an enabled endpoint become visible (the hub: here or, on PostgreSQL, in another process) and
 * every second for retries that came due and endpoints saved elsewhere; claims with SKIP LOCKED
 * and leases keep processes from delivering to one endpoint at once (src/events/webhook-dispatcher.ts).
 * Every 10 minutes it also purges events and delivery logs past their retention
 * (outbox-retention.ts).
 */
import type { MaintenanceLog } from './scheduler.js';
import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import type { Clock } from '../lib/clock.js';
import type { Events } from '../events/service.js';
import { purgeOldEvents } from './outbox-retention.js';

// retries come due on the clock, not on an event: a one-second look is cheap (one indexed query)
const TICK_MS = 1000;
const PURGE_EVERY_MS = 10 * 60 * 1000;

export interface EventJobsState {
  lastDispatchAt: Date | null;
  lastPurgeAt: Date | null;
}

export function startEventJobs(
  deps: { db: Kysely<Database>; clock: Clock; events: Events; retentionHours: number; state: EventJobsState },
  log: MaintenanceLog,
): () => Promise<void> {
  let stopped = false;
  let purging: Promise<unknown> | null = null;
  const dispatch = (tenantIds?: readonly number[]) => {
    if (stopped) return;
    const { dispatcher } = deps.events;
    // a wake-up passes only for tenants with endpoints; the tick always does (retries come due)
    (tenantIds ? dispatcher.wake(tenantIds) : dispatcher.kick())
      ?.then(() => {
        deps.state.lastDispatchAt = deps.clock.now();
      })
      .catch((err) => log.warn({ err }, 'webhook dispatch failed; retrying in a second'));
  };
  const unsubscribe = deps.events.hub.subscribe((tenantIds) => dispatch(tenantIds));
  const tick = setInterval(() => dispatch(), TICK_MS);
  tick.unref();
  const purge = () => {
    if (stopped || purging) return;
    purging = purgeOldEvents(deps.db, deps.clock.now(), deps.retentionHours)
      .then((r) => {
        deps.state.lastPurgeAt = deps.clock.now();
        if (r.events || r.deliveries) log.info(r, 'purged events and delivery logs past their retention');
      })
      .catch((err) => log.warn({ err }, 'event purge failed; retrying at the next interval'))
      .finally(() => {
        purging = null;
      });
  };
  const purgeTimer = setInterval(purge, PURGE_EVERY_MS);
  purgeTimer.unref();
  return async () => {
    stopped = true;
    unsubscribe();
    clearInterval(tick);
    clearInterval(purgeTimer);
    await purging;
    await deps.events.dispatcher.idle();
  };
}
