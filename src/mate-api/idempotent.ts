/**
 * Idempotency-Key on the three create calls (docs/mate-api.md §8): the create runs in the
 * transaction that records the key, and a refusal the create answers (200 or 400) is stored and
 * replayed like a success.
 */
import { Refusal } from '../lib/errors.js';
import { withIdempotency, requestHash, isValidKey, type StoredAnswer } from '../tasks/idempotency.js';
import type { Tx } from '../db/tx.js';
import { refusalBody, type Answer } from './answers.js';
import { MATE_API_STATUS } from './status.js';
import type { Ctx, MateRoute } from './route.js';

/** Runs `create` inside the idempotency transaction, turning refusals it answers with into answers to store. */
async function asAnswer(ctx: Ctx, route: MateRoute, create: () => Promise<Answer>): Promise<StoredAnswer> {
  try {
    const a = await create();
    return { status: a.status ?? 200, body: a.body };
  } catch (err) {
    if (!(err instanceof Refusal)) throw err;
    const status = MATE_API_STATUS[err.code];
    if (status !== 200 && status !== 400) throw err;
    return { status, body: refusalBody(route.refusal(ctx.refusalKey()), ctx.req, err) };
  }
}

export async function idempotentCreate(ctx: Ctx, route: MateRoute, create: (tx: Tx) => Promise<Answer>): Promise<Answer> {
  const { units, db } = ctx.services;
  const raw = ctx.req.headers['idempotency-key'];
  if (raw === undefined) {
    const answer = await units.transaction((tx) => asAnswer(ctx, route, () => create(tx)));
    return { status: answer.status, body: answer.body };
  }
  const key = Array.isArray(raw) ? raw.join(',') : raw;
  if (!isValidKey(key)) {
    const message = 'Idempotency-Key must be 1-255 visible ASCII characters';
    throw new Refusal('invalid_field', message, [{ field: 'Idempotency-Key', value: key, code: 'invalid_field', message }]);
  }
  const proc = await ctx.process();
  const scope = {
    tenantId: ctx.caller.tenantId,
    mateId: ctx.mate.mateId,
    key,
    hash: requestHash(route.name, proc.processKey, ctx.body),
    now: ctx.caller.now,
  };
  const outcome = await units.within((txFor) => withIdempotency(db, scope, (trx) => asAnswer(ctx, route, () => create(txFor(trx)))));
  switch (outcome.kind) {
    case 'fresh':
      return { status: outcome.answer.status, body: outcome.answer.body };
    case 'replay':
      return { status: outcome.answer.status, body: outcome.answer.body, headers: { 'idempotent-replayed': 'true' } };
    case 'conflict':
      throw new Refusal('idempotency_conflict', `Idempotency-Key "${key}" was used with another request`);
    case 'in_progress':
      throw new Refusal('idempotency_in_progress', `A request with Idempotency-Key "${key}" is still running`);
  }
}
