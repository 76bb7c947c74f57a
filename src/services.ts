/**
 * The application's state, built once by createApp and handed to the HTTP surfaces: the store,
 * the clock, the change notifier and every cache and batcher that lives as long as the app. No
 * module keeps mutable state of its own; a cache that must drop entries when something changes
 * subscribes to the notifier.
 */
import type { Kysely } from 'kysely';
import type { Config } from './config.js';
import type { Store } from './db/store.js';
import type { Database } from './db/types.js';
import { Units } from './db/tx.js';
import type { Clock } from './lib/clock.js';
import { ChangeNotifier } from './lib/notifier.js';
import { MateAuth } from './auth/service.js';
import { MateContact } from './accounts/contact.js';
import { ProcessCache } from './processes/cache.js';
import { TaskBatchers } from './tasks/batching.js';
import { Events } from './events/service.js';
import { Metrics, processLabelFor } from './metrics/metrics.js';
import { BulkJobs, CHUNK_SIZE, EMBEDDED_CHUNK_SIZE } from './bulk/jobs.js';
import { Turns } from './db/turns.js';

export interface Services {
  readonly config: Config;
  readonly store: Store;
  readonly db: Kysely<Database>;
  readonly clock: Clock;
  readonly notifier: ChangeNotifier;
  /** transactions and autocommitted work that publish their changes after commit */
  readonly units: Units;
  /** Mate sign-in: signing keys, revocation state, throttle, password-hashing slots */
  readonly auth: MateAuth;
  readonly processes: ProcessCache;
  readonly batchers: TaskBatchers;
  readonly mateContact: MateContact;
  /** outbox numbering, reader wake-ups, webhook dispatch (src/events) */
  readonly events: Events;
  readonly metrics: Metrics;
  /** people's bulk actions: persisted jobs, run by whichever server process holds their lease (src/bulk/jobs.ts) */
  readonly bulkJobs: BulkJobs;
  /** robots first: background work (bulk jobs, exports) waits for Mate API calls on the embedded store (src/db/turns.ts) */
  readonly turns: Turns;
  close(): Promise<void>;
}

export async function createServices(config: Config, store: Store, clock: Clock): Promise<Services> {
  const notifier = new ChangeNotifier();
  const units = new Units(store.db, notifier);
  const auth = await MateAuth.create(config, store, clock, notifier);
  const processes = new ProcessCache(store.db, notifier);
  // takes and hand-backs on the hot connections (generic plans, store.ts `hotDb`); the same Units
  // when the store has none
  const hotUnits = store.hotDb === store.db ? units : new Units(store.hotDb, notifier);
  const batchers = new TaskBatchers(hotUnits, notifier);
  const metrics = new Metrics(store.db, store.hotPool ? [store.pool, store.hotPool] : [store.pool], clock, processLabelFor(config));
  const events = new Events({
    db: store.db,
    watermarkDb: store.hotDb,
    units: hotUnits === units ? [units] : [units, hotUnits],
    clock,
    listen: store.sessionConfig,
    dispatcher: {
      timeoutMs: config.webhookTimeoutSeconds * 1000,
      disableAfterFailures: config.webhookDisableAfterFailures,
      onAttempt: (outcome, seconds) => {
        metrics.webhookDeliveries.inc({ outcome });
        metrics.webhookDuration.observe({ outcome }, seconds);
      },
    },
    onVisible: (batch) => {
      for (const [type, n] of batch.types) metrics.events.inc({ type }, n);
    },
  });
  await events.start();
  const turns = new Turns({ prioritize: store.kind === 'pglite' });
  const bulkJobs = new BulkJobs(units, store.db, clock, {
    turns,
    chunkSize: store.kind === 'pglite' ? EMBEDDED_CHUNK_SIZE : CHUNK_SIZE,
    leaseMs: config.bulkLeaseSeconds * 1000,
  });
  return {
    config,
    store,
    db: store.db,
    clock,
    notifier,
    units,
    auth,
    processes,
    batchers,
    mateContact: new MateContact(store.db),
    events,
    metrics,
    bulkJobs,
    turns,
    async close() {
      bulkJobs.close();
      auth.close();
      processes.close();
      batchers.close();
      await events.stop();
    },
  };
}
