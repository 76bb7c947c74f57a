/**
 * Wakes this server process's event readers (live streams, the webhook dispatcher) when events of
 * a tenant became visible, seen here (the watermark) or in another server process (LISTEN, on
 * PostgreSQL). A wake-up carries no events: readers read the outbox, the source of truth, so a
 * lost or duplicated wake-up costs at most a read.
 */
import pg from 'pg';
import { EVENTS_CHANNEL, readNotifyPayload } from './watermark.js';

export type Wake = (tenantIds: readonly number[]) => void;

export class EventHub {
  private readonly listeners = new Set<Wake>();

  subscribe(fn: Wake): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  wake(tenantIds: readonly number[]): void {
    for (const fn of this.listeners) {
      try {
        fn(tenantIds);
      } catch {
        // one reader's failure does not keep the others asleep
      }
    }
  }

  get size(): number {
    return this.listeners.size;
  }
}

/**
 * LISTENs on the events channel with a connection of its own and wakes the hub; reconnects after
 * a lost connection (1 s, then doubling up to 30 s) and then wakes every reader, since
 * notifications sent while it was away are lost.
 */
export class PgEventListener {
  private client: pg.Client | null = null;
  private stopped = false;
  private delay = 1000;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly hub: EventHub,
    private readonly onError: (err: unknown) => void,
    /** this process's mark in the NOTIFY payloads it sends (watermark.ts) */
    private readonly origin?: string,
  ) {}

  async start(): Promise<void> {
    const client = new pg.Client(this.config);
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, null));
    client.on('notification', (n) => {
      // this process's own notifications: its readers were woken when it sent them
      const ids = readNotifyPayload(n.payload ?? '', this.origin);
      if (ids) this.hub.wake(ids);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${EVENTS_CHANNEL}`);
    } catch (err) {
      this.lost(client, err);
      return;
    }
    if (this.stopped) {
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
    this.delay = 1000;
  }

  /** A wake-up for every tenant: sent after reconnecting. */
  static readonly ALL: readonly number[] = [];

  private lost(client: pg.Client, err: unknown): void {
    if (this.stopped || (this.client !== null && this.client !== client)) return;
    this.client = null;
    if (err) this.onError(err);
    client.end().catch(() => {});
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.start().then(() => this.hub.wake(PgEventListener.ALL));
    }, this.delay);
    this.timer.unref();
    this.delay = Math.min(this.delay * 2, 30000);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    const c = this.client;
    this.client = null;
    await c?.end().catch(() => {});
  }
}
