/**
 * Units of work. Domain operations run on a `Tx`: the database handle to use (a transaction, or
 * the pool for a single autocommitted statement) and `publish`, which queues a change for the
 * in-process notifier and delivers it only once the work has committed. Operations never start
 * transactions of their own on a handle they were given, so they compose.
 */
import type { Kysely } from 'kysely';
import type { Database } from './types.js';
import type { Change, ChangeNotifier } from '../lib/notifier.js';

export interface Tx {
  readonly db: Kysely<Database>;
  /** delivered to subscribers after the unit commits; dropped if it rolls back */
  publish(change: Change): void;
}

export class Units {
  /**
   * Called after every unit of work ends (committed or not): the events watermark's cue that
   * outbox rows may have become visible (src/events/watermark.ts). Cheap: it only asks for a look.
   */
  afterWork: (() => void) | null = null;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly notifier: ChangeNotifier,
  ) {}

  /** Runs fn in one transaction; its published changes are delivered after COMMIT. */
  async transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    const changes: Change[] = [];
    try {
      const result = await this.db.transaction().execute((trx) => fn({ db: trx, publish: (c) => changes.push(c) }));
      for (const c of changes) this.notifier.publish(c);
      return result;
    } finally {
      this.afterWork?.();
    }
  }

  /**
   * For work whose transaction another module begins (the Idempotency-Key record's): `txFor`
   * wraps that transaction's handle; the changes published on it are delivered when fn returns,
   * that is after the other module committed.
   */
  async within<T>(fn: (txFor: (db: Kysely<Database>) => Tx) => Promise<T>): Promise<T> {
    const changes: Change[] = [];
    try {
      const result = await fn((db) => ({ db, publish: (c) => changes.push(c) }));
      for (const c of changes) this.notifier.publish(c);
      return result;
    } finally {
      this.afterWork?.();
    }
  }

  /**
   * Runs fn without a transaction: each statement commits on its own, so fn must write with one
   * statement (or accept partial effects). Published changes are delivered when fn returns.
   */
  async autocommit<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    const changes: Change[] = [];
    try {
      return await fn({ db: this.db, publish: (c) => changes.push(c) });
    } finally {
      // a statement that committed before a later one failed has still changed the data
      for (const c of changes) this.notifier.publish(c);
      this.afterWork?.();
    }
  }
}

/**
 * Runs fn in a transaction, or in the caller's transaction when db already is one: for set-up
 * writes (tenants, accounts, processes) that compose into a larger set-up and publish nothing.
 */
export function inTransaction<T>(db: Kysely<Database>, fn: (trx: Kysely<Database>) => Promise<T>): Promise<T> {
  if (db.isTransaction) return fn(db);
  return db.transaction().execute(fn);
}
