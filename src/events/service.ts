/**
 * The events machinery of one server process (docs/events.md): the watermark that sees events
 * become visible, the hub that wakes readers, on PostgreSQL the LISTEN connection that hears the
 * other processes, and the webhook dispatcher.
 */
import crypto from 'node:crypto';
import type { Kysely } from 'kysely';
import type pg from 'pg';
import type { Database } from '../db/types.js';
import type { Units } from '../db/tx.js';
import type { Clock } from '../lib/clock.js';
import { EventHub, PgEventListener } from './hub.js';
import { EventWatermark, type VisibleBatch } from './watermark.js';
import { Dispatcher, type DispatcherOptions } from './webhook-dispatcher.js';

export interface EventsOptions {
  db: Kysely<Database>;
  /** where the watermark's statement runs, once a second and after units of work (default `db`) */
  watermarkDb?: Kysely<Database>;
  /** the units of work whose end wakes the watermark (the app's, and the hot path's when it has its own) */
  units: Units[];
  clock: Clock;
  /** PostgreSQL: the connection settings for LISTEN, and NOTIFY the other processes; null on PGlite */
  listen: pg.ClientConfig | null;
  dispatcher: Omit<DispatcherOptions, 'onEventWritten' | 'onError'>;
  onVisible?: (batch: VisibleBatch) => void;
}

export class Events {
  readonly hub = new EventHub();
  readonly watermark: EventWatermark;
  readonly dispatcher: Dispatcher;
  private readonly listener: PgEventListener | null;
  /** the open live streams of this process, each with the function that ends it (at shutdown) */
  readonly streams = new Set<() => void>();
  /** where background failures are told (the app sets its logger) */
  reportError: (err: unknown, what: string) => void = () => {};

  constructor(opts: EventsOptions) {
    const origin = crypto.randomUUID();
    this.watermark = new EventWatermark(opts.watermarkDb ?? opts.db, {
      notify: opts.listen !== null,
      origin,
      // transactions of other processes, and of writes made outside a unit of work
      pollMs: 1000,
      onVisible: (batch) => {
        opts.onVisible?.(batch);
        this.hub.wake([...batch.tenants.keys()]);
      },
      onError: (err) => this.reportError(err, 'events watermark'),
    });
    for (const units of opts.units) units.afterWork = () => this.watermark.kick();
    this.dispatcher = new Dispatcher(opts.db, opts.clock, {
      ...opts.dispatcher,
      onEventWritten: () => this.watermark.kick(),
      onError: (err) => this.reportError(err, 'webhook dispatcher'),
    });
    this.listener = opts.listen
      ? new PgEventListener(opts.listen, this.hub, (err) => this.reportError(err, 'events listener'), origin)
      : null;
  }

  async start(): Promise<void> {
    // the first look only takes the horizon: events written after it are announced by later looks
    await this.watermark.flush();
    await this.listener?.start();
  }

  async stop(): Promise<void> {
    // the dispatcher's pass and lanes in flight end (each lane after its attempt in flight) before the store closes
    await this.dispatcher.stop();
    await this.watermark.stop();
    await this.listener?.stop();
  }
}
