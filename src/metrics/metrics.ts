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

/**
 * What the `process` label of the queue depth says: the process key, or its id (an opaque number
 * that names nothing of the tenant's business).
 */
export type ProcessLabel = 'key' | 'id';

/** Is `host` an address only this machine can reach (127.0.0.0/8, ::1, localhost)? */
export function isLoopbackHost(host: string): boolean {
  const h = host
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h) || /^::ffff:127(\.\d{1,3}){3}$/.test(h);
}

/**
 * Process keys are the tenants' own words: a /metrics anyone on the network may read (no token,
 * the server listening beyond loopback) labels queue depth by process id instead.
 */
export function processLabelFor(config: { host: string; metricsToken: string | null }): ProcessLabel {
  return config.metricsToken || isLoopbackHost(config.host) ? 'key' : 'id';
}

export class Metrics {
  readonly registry = new Registry();
  readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  readonly events: Counter<'type'>;
  readonly webhookDeliveries: Counter<'outcome'>;
  readonly webhookDuration: Histogram<'outcome'>;
  readonly connectionsClosed: Counter<'reason'>;
  /** this process's open HTTP connections by state, when the app serves (src/http/connections.ts) */
  connectionCounts: (() => Record<'open' | 'waiting' | 'active' | 'idle', number>) | null = null;

  constructor(db: Kysely<Database>, pools: readonly pg.Pool[], clock: Clock, processLabel: ProcessLabel = 'key') {
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
      help:
        processLabel === 'key'
          ? 'Tasks per process (its key) and queue (error: the Error flag), read from the queue counters when scraped.'
          : 'Tasks per process (its id: no token is set and the server listens beyond loopback) and queue (error: the Error flag), read from the queue counters when scraped.',
      labelNames: ['tenant', 'process', 'queue', 'error'],
      registers: [registry],
      // read from the database: the same in every process (src/cluster.ts sums the others)
      aggregator: 'first',
      async collect() {
        this.reset();
        for (const d of await queueDepths(db)) {
          const process = processLabel === 'key' ? d.processKey : String(d.processId);
          this.set({ tenant: String(d.tenantId), process, queue: d.queue, error: String(d.error) }, d.n);
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
    this.connectionsClosed = new Counter({
      name: 'queuemate_http_connections_closed_total',
      help: 'Client connections the server closed to stay under QUEUEMATE_MAX_CONNECTIONS: idle (the longest-idle keep-alive), waiting (no headers after a second, for a new client), refused (a new one, every other busy).',
      labelNames: ['reason'],
      registers: [registry],
    });
    const metrics = this;
    new Gauge({
      name: 'queuemate_http_connections',
      help: 'Open client connections of this server process by state: waiting (for its headers), active (a request being answered), idle (keep-alive between requests).',
      labelNames: ['state'],
      registers: [registry],
      collect() {
        const counts = metrics.connectionCounts?.();
        if (!counts) return;
        for (const state of ['waiting', 'active', 'idle'] as const) this.set({ state }, counts[state]);
      },
    });
    new Gauge({
      name: 'queuemate_db_pool_connections',
      help: 'Database pool connections of this server process by state (total, idle, waiting requests).',
      labelNames: ['state'],
      registers: [registry],
      collect() {
        // the pool and, on PostgreSQL with generic plans, the hot path's (src/db/store.ts), as one
        const sum = (f: (p: pg.Pool) => number) => pools.reduce((n, p) => n + f(p), 0);
        this.set(
          { state: 'total' },
          sum((p) => p.totalCount),
        );
        this.set(
          { state: 'idle' },
          sum((p) => p.idleCount),
        );
        this.set(
          { state: 'in_use' },
          sum((p) => p.totalCount - p.idleCount),
        );
        this.set(
          { state: 'waiting' },
          sum((p) => p.waitingCount),
        );
      },
    });
  }
}
