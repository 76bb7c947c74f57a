/**
 * The webhook dispatch job: every server process runs the dispatcher (src/events/webhook-dispatcher.ts)
 * every second, for retries that came due and endpoints saved elsewhere, and early when events of
 * a tenant with an enabled endpoint become visible (the hub: seen here or, on PostgreSQL, in another
 * process). Claims with SKIP LOCKED and leases keep processes from delivering to one endpoint at once.
 * A run only claims endpoints and starts their lanes: it never waits for an endpoint's answer, so a
 * slow endpoint does not hold the job (nor the wake-ups for the others) while it answers.
 */
import type { Events } from '../events/service.js';
import type { Job } from './runner.js';

// retries come due on the clock, not on an event: a one-second look is cheap (one indexed query)
const TICK_MS = 1000;

export const WEBHOOK_DISPATCH = 'webhook-dispatch';

export function webhookDispatchJob(events: Events): Job<number> {
  const { dispatcher, hub } = events;
  return {
    name: WEBHOOK_DISPATCH,
    everyMs: TICK_MS,
    // a wake-up asks for a pass only for tenants with endpoints (with none, events cost no dispatcher statement)
    triggers: (soon) =>
      hub.subscribe((tenantIds) => {
        if (dispatcher.wants(tenantIds)) soon();
      }),
    // the tick also looks again which tenants have endpoints (saved through another process)
    run: (_now, { early }) => (early ? dispatcher.pass() : dispatcher.kick()),
  };
}
