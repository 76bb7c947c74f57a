/** A person acting through the domain layer (src/tasks/people.ts), as the people's API does. */
import type { FastifyInstance } from 'fastify';
import type { Caller } from '../../src/lib/caller.js';
import type { Tx } from '../../src/db/tx.js';
import { Refusal } from '../../src/lib/errors.js';

export function personCaller(tenantId: number, user: { id: number; username: string }, now: Date, timeZone = 'UTC'): Caller {
  return { tenantId, timeZone, actor: { type: 'user', id: user.id, name: user.username }, requestId: `req-${user.id}`, now };
}

/** Runs fn in one transaction of the app's services. */
export function inTx<T>(app: FastifyInstance, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return app.services.units.transaction(fn);
}

/** The code of the Refusal fn throws (fails when it does not refuse). */
export async function refusalOf(fn: () => Promise<unknown>): Promise<Refusal> {
  try {
    await fn();
  } catch (err) {
    if (err instanceof Refusal) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}
