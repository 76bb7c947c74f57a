/**
 * A live stream of one tenant's events for one reader (GET /v1/events, docs/events.md): replays
 * what came after the reader's last id, then follows, woken by the hub; a heartbeat keeps idle
 * connections open. The outbox is the source of truth: a wake-up only makes the reader look.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import type { EventHub } from './hub.js';
import { watermarkId, readEvents, type OutboxEvent } from './store.js';

// events per read; a reader far behind catches up in pages of this size
const PAGE = 500;

/** Event families a role does not see on the stream: webhook administration is for admins. */
export function hiddenFamiliesFor(role: string): string[] {
  return role === 'admin' ? [] : ['webhook'];
}

export interface StreamSink {
  /** writes one event; resolves when the client can take more (back-pressure) */
  event(e: OutboxEvent): Promise<void>;
  heartbeat(): void;
}

export interface StreamOptions {
  db: Kysely<Database>;
  hub: EventHub;
  tenantId: number;
  role: string;
  /** the last id the client has (Last-Event-ID); null: only events from now on */
  lastEventId: number | null;
  heartbeatMs: number;
  sink: StreamSink;
  onError(err: unknown): void;
}

/** Starts the stream; returns the function that stops it. */
export function startStream(o: StreamOptions): () => void {
  let stopped = false;
  // wake-ups before the starting point is known are covered by the first read after it
  let ready = false;
  let cursor = 0;
  let reading = false;
  let again = false;
  const hidden = hiddenFamiliesFor(o.role);

  const pump = async () => {
    if (!ready) return;
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    try {
      do {
        again = false;
        for (;;) {
          if (stopped) return;
          const batch = await readEvents(o.db, o.tenantId, cursor, PAGE, hidden);
          for (const e of batch) {
            if (stopped) return;
            await o.sink.event(e);
            cursor = e.id;
          }
          if (batch.length < PAGE) break;
        }
      } while (again && !stopped);
    } catch (err) {
      if (!stopped) o.onError(err);
    } finally {
      reading = false;
    }
  };

  // subscribe before reading the starting point, so nothing that becomes visible in between is missed
  const unsubscribe = o.hub.subscribe((tenantIds) => {
    if (tenantIds.length === 0 || tenantIds.includes(o.tenantId)) void pump();
  });
  const heartbeat = setInterval(() => o.sink.heartbeat(), o.heartbeatMs);
  heartbeat.unref();
  void (async () => {
    try {
      cursor = o.lastEventId ?? (await watermarkId(o.db, o.tenantId));
      ready = true;
    } catch (err) {
      o.onError(err);
      return;
    }
    await pump();
  })();
  return () => {
    if (stopped) return;
    stopped = true;
    unsubscribe();
    clearInterval(heartbeat);
  };
}
