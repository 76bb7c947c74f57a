/**
 * Every background job of a server process, added to its runner (runner.ts); docs/operations.md,
 * "Background jobs", lists them. Each job is correct with any number of server processes: they
 * coordinate through the database (SKIP LOCKED, leases, an advisory lock, idempotent deletes).
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import type { Units } from '../db/tx.js';
import type { Store } from '../db/store.js';
import type { ChangeNotifier } from '../lib/notifier.js';
import type { SignInThrottle } from '../auth/throttle.js';
import type { BulkJobs } from '../bulk/jobs.js';
import type { Events } from '../events/service.js';
import type { JobRunner } from './runner.js';
import { sweepJobs } from './sweep.js';
import { webhookDispatchJob } from './webhook-dispatch.js';
import { eventPurgeJob } from './outbox-retention.js';
import { EmbeddedVacuum } from './embedded-vacuum.js';

export interface BackgroundDeps {
  db: Kysely<Database>;
  units: Units;
  notifier: ChangeNotifier;
  throttle: SignInThrottle;
  bulkJobs: BulkJobs;
  events: Events;
  /** the store: the embedded one (PGlite) gets the vacuum job; uncleanStop: its lock was taken over from a dead process */
  store: Pick<Store, 'kind' | 'uncleanStop'>;
  lockSweepIntervalSeconds: number;
  eventRetentionHours: number;
}

export function addBackgroundJobs(runner: JobRunner, deps: BackgroundDeps): JobRunner {
  runner.add(...sweepJobs(deps, deps.lockSweepIntervalSeconds * 1000));
  runner.add(webhookDispatchJob(deps.events));
  runner.add(eventPurgeJob(deps.db, deps.eventRetentionHours));
  // the embedded store has no autovacuum; PostgreSQL has its own
  if (deps.store.kind === 'pglite') runner.add(new EmbeddedVacuum(deps.db, deps.notifier, { afterUncleanStop: deps.store.uncleanStop }));
  return runner;
}
