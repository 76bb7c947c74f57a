/**
 * Prometheus metrics (docs/events.md, "Metrics"), one registry per app (tests build several apps in
 * one process). Label values come from closed sets (route templates, event types, outcomes,
 * queues) or from process keys, so the series count is bounded by the data model: no task ids,
 * no raw URLs.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Kysely } from 'kysely';
import type pg from 'pg';
import type { Database } from '../db/types.js';
import type { Clock } from '../lib/clock.js';
import { outboxBacklog, queueDepths } from './store.js';

export class Metrics {
  readonly registry = new Registry();
  readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  readonly events: Counter<'type'>;
  readonly webhookDeliveries: Counter<'outcome'>;
  readonly webhookDuration: Histogram<'outcome'>;

  constructor(db: Kysely<Database>, pool: pg.Pool, clock: Clock) {
    const registry = this.registry;
    collectDefaultMetrics({ register: registry, prefix: 'queuemate_', eventLoopMonitoringPrecision: 20 });
    this.httpDuration = new Histogram({
      name: 'queuemate_http_request_duration_seconds',
      help: 'HTTP requests by method, route template and status code, and how long they took.',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
      registers: [registry],
    });
    this.events = new Counter({
      name: 'queuemate_events_total',
      help: 'Changes by event type (task.solved, task.taken, task.lock_expired, run.started…), counted once each across server processes when the event is numbered.',
      labelNames: ['type'],
      registers: [registry],
      // every process counts every event it sees become visible, whichever process wrote it
      aggregator: 'max',
    });
    this.webhookDeliveries = new Counter({
      name: 'queuemate_webhook_attempts_total',
      help: 'Webhook delivery attempts by outcome: delivered, retry (failed, will retry), failed (gave up), refused (address not allowed).',
      labelNames: ['outcome'],
      registers: [registry],
    });
    this.webhookDuration = new Histogram({
      name: 'queuemate_webhook_attempt_duration_seconds',
      help: 'Webhook delivery attempt latency by outcome.',
      labelNames: ['outcome'],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    });
    new Gauge({
      name: 'queuemate_queue_depth',
      help: 'Tasks per process and queue (error: the Error flag), read from the queue counters when scraped.',
      labelNames: ['tenant', 'process', 'queue', 'error'],
      registers: [registry],
      // read from the database: the same in every process (src/cluster.ts sums the others)
      aggregator: 'first',
      async collect() {
        this.reset();
        for (const d of await queueDepths(db)) {
          this.set({ tenant: String(d.tenantId), process: d.processKey, queue: d.queue, error: String(d.error) }, d.n);
        }
      },
    });
    const backlog = () => outboxBacklog(db, clock.now());
    new Gauge({
      name: 'queuemate_outbox_held_back_events',
      help: 'Committed outbox events not visible to readers yet because an older transaction is still running (normally 0 or a few).',
      registers: [registry],
      // read from the database: the same in every process (src/cluster.ts sums the others)
      aggregator: 'first',
      async collect() {
        this.set((await backlog()).heldBack);
      },
    });
    new Gauge({
      name: 'queuemate_webhook_pending_deliveries',
      help: 'Webhook deliveries waiting for an attempt.',
      registers: [registry],
      // read from the database: the same in every process (src/cluster.ts sums the others)
      aggregator: 'first',
      async collect() {
        this.set((await backlog()).pendingDeliveries);
      },
    });
    new Gauge({
      name: 'queuemate_webhook_oldest_pending_seconds',
      help: 'Age of the oldest pending webhook delivery (outbox lag), 0 when none.',
      registers: [registry],
      // read from the database: the same in every process (src/cluster.ts sums the others)
      aggregator: 'first',
      async collect() {
        this.set((await backlog()).oldestPendingSeconds);
      },
    });
    new Gauge({
      name: 'queuemate_db_pool_connections',
      help: 'Database pool connections of this server process by state (total, idle, waiting requests).',
      labelNames: ['state'],
      registers: [registry],
      collect() {
        this.set({ state: 'total' }, pool.totalCount);
        this.set({ state: 'idle' }, pool.idleCount);
        this.set({ state: 'in_use' }, pool.totalCount - pool.idleCount);
        this.set({ state: 'waiting' }, pool.waitingCount);
      },
    });
  }
}
