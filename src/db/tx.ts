import type { Kysely, Transaction } from 'kysely';
import type { Database } from './types.js';

/** Runs fn in a transaction, or in the caller's transaction when db already is one. */
export function inTransaction<T>(db: Kysely<Database>, fn: (trx: Transaction<Database> | Kysely<Database>) => Promise<T>): Promise<T> {
  if (db.isTransaction) return fn(db);
  return db.transaction().execute(fn);
}
