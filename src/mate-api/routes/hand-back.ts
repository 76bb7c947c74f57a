/**
 * Solved, Manual, Error, Retry and their Async forms, Return, UpdateTask and ExtendLock
 * (docs/mate-api.md §7.9–7.14).
 */
import { Refusal } from '../../lib/errors.js';
import { getKey, readInteger } from '../../lib/values.js';
import { formatDateTime } from '../../lib/time.js';
import { loadProcessById } from '../../processes/store.js';
import type { HandBackItem } from '../../tasks/hand-back.js';
import { handBackBatch } from '../../tasks/batching.js';
import { extendLock, updateTask } from '../../tasks/update.js';
import type { HandBackAction } from '../../tasks/state-machine.js';
import { dummyTask, response, taskObject } from '../answers.js';
import type { ProcessDef } from '../../processes/store.js';
import type { TakeResult } from '../../tasks/take.js';
import { ACTIONS, isJsonObject, readAction, requireId, type Body } from '../readers.js';
import { mateRoute, NO_EXTRA_KEYS, S, withProperties, type Ctx, type MateRoute } from '../route.js';

// One Return call hands back at most this many tasks: each item is written on its own.
const MAX_RETURN_ITEMS = 1_000;

const handBackAnswer = withProperties(S.response, {
  queue: { type: 'string' },
  error: { type: 'boolean' },
  next: {
    ...S.task,
    description:
      'Only when the body named takeNext (Queuemate extension): the next task of that process, locked as TakeNext locks it, or the dummy task',
  },
});

const handBackBody = withProperties(S.taskAction, {
  takeNext: {
    type: 'string',
    description:
      'Queuemate extension: a ProcessKey. With the hand-back, take the next task of that process as TakeNext would and answer it in `next` (one request per task; the hand-back commits whether or not a task is taken: docs/mate-api.md)',
  },
});

/** The ProcessKey of the combined call's `takeNext` (docs/mate-api.md, Queuemate extensions); null when absent. */
function readTakeNext(body: Body): string | null {
  const v = getKey(body, 'takeNext');
  if (v === undefined || v === null || v === '') return null;
  if (typeof v !== 'string')
    throw new Refusal('invalid_field', 'takeNext must be a ProcessKey (a string)', [
      { field: 'takeNext', code: 'invalid_field', message: 'takeNext must be a string' },
    ]);
  return v;
}

const handBackRoute = (name: string, action: HandBackAction): MateRoute =>
  mateRoute({
    method: 'POST',
    name,
    withProcess: false,
    bodyType: 'object',
    bareId: 'taskId',
    refusal: NO_EXTRA_KEYS,
    summary: `Hand back a task you hold: ${action}${name.endsWith('Async') ? ' (same as the synchronous form)' : ''}; with takeNext, also take the next task`,
    doc: { body: handBackBody, response: handBackAnswer },
    handler: async (ctx) => {
      const item = readAction(ctx.body, ctx.caller, action);
      const nextKey = readTakeNext(ctx.body);
      // the process before the state (docs/mate-api.md §5): an unknown one hands nothing back
      const proc = nextKey === null ? null : await ctx.process(nextKey);
      if (proc) {
        const { handBack, next } = await ctx.services.batchers.handBackAndTake(proc, item);
        if (!handBack.ok) return ctx.refused(handBack.refusal);
        return response(ctx.req, handBack.value.message, {
          queue: handBack.value.queue,
          error: handBack.value.error,
          next: nextTask(ctx, proc, next!),
        });
      }
      const r = await ctx.services.batchers.handBack(item);
      if (!r.ok) return ctx.refused(r.refusal);
      return response(ctx.req, r.value.message, { queue: r.value.queue, error: r.value.error });
    },
  });

/**
 * The combined call's next task: exactly TakeNext's. A take that failed after its hand-back
 * committed cannot undo the hand-back, so it is answered in `next` (a dummy task with code
 * `unavailable`), never as a failure of the whole call.
 */
function nextTask(ctx: Ctx, proc: ProcessDef, t: TakeResult | { failed: unknown }): Record<string, unknown> {
  if ('failed' in t) {
    ctx.req.log.error({ err: t.failed }, 'combined call: the hand-back committed, the take failed');
    return dummyTask(proc.processKey, 'unavailable', 'The task was handed back; taking the next one failed: call TakeNext', ctx.req.id);
  }
  if ('empty' in t) return dummyTask(proc.processKey, t.empty, t.message, ctx.req.id);
  return taskObject(t.tasks[0], proc, ctx.caller.timeZone);
}

/** A Return item as a hand-back, or the refusal that makes it fail alone (docs/mate-api.md §7.13). */
function readReturnItem(item: unknown, ctx: Ctx): HandBackItem | { taskId: number | null; refusal: Refusal } {
  try {
    if (!isJsonObject(item)) throw new Refusal('invalid_field', 'Each item must be an object');
    const rawAction = getKey(item, 'action');
    if (rawAction === undefined || rawAction === null || rawAction === '') throw new Refusal('missing_field', 'action is required');
    const action = typeof rawAction === 'string' ? ACTIONS[rawAction.toLowerCase()] : undefined;
    if (!action) throw new Refusal('invalid_field', `action ${JSON.stringify(rawAction)} is not one of Solved, Manual, Error, Retry`);
    return readAction(item, ctx.caller, action);
  } catch (err) {
    if (!(err instanceof Refusal)) throw err;
    let taskId: number | null = null;
    try {
      taskId = isJsonObject(item) ? requireId(item, 'taskId') : null;
    } catch {
      taskId = null;
    }
    return { taskId, refusal: err };
  }
}

export const HAND_BACK_ROUTES: MateRoute[] = [
  mateRoute({
    method: 'POST',
    name: 'UpdateTask',
    withProcess: false,
    bodyType: 'object',
    summary: 'Change field values of a task, add a comment, extend your lock',
    refusal: NO_EXTRA_KEYS,
    doc: { body: { ...S.taskData, properties: { taskId: { type: 'integer' } }, required: ['taskId'] }, response: S.response },
    handler: async (ctx) => {
      const { body } = ctx;
      const taskId = requireId(body, 'taskId');
      const { tenantId } = ctx.caller;
      const r = await ctx.services.units.transaction((tx) =>
        updateTask(tx, ctx.caller, taskId, body, async (processId) => (await loadProcessById(tx.db, tenantId, processId))!),
      );
      return response(ctx.req, r.message);
    },
  }),
  handBackRoute('Solved', 'Solved'),
  handBackRoute('Manual', 'Manual'),
  handBackRoute('Error', 'Error'),
  handBackRoute('Retry', 'Retry'),
  handBackRoute('SolvedAsync', 'Solved'),
  handBackRoute('ManualAsync', 'Manual'),
  handBackRoute('ErrorAsync', 'Error'),
  handBackRoute('RetryAsync', 'Retry'),
  mateRoute({
    method: 'POST',
    name: 'Return',
    withProcess: false,
    bodyType: 'array',
    summary: 'Hand back several tasks, each with its action (at most 1,000)',
    refusal: () => ({ results: [] }),
    doc: {
      body: {
        type: 'array',
        maxItems: MAX_RETURN_ITEMS,
        items: withProperties(S.taskAction, { action: { type: 'string', enum: ['Solved', 'Manual', 'Error', 'Retry'] } }),
      },
      response: withProperties(S.response, { results: { type: 'array', items: S.response } }),
    },
    handler: async (ctx) => {
      const items = ctx.body;
      if (items.length > MAX_RETURN_ITEMS)
        throw new Refusal('invalid_body', `At most ${MAX_RETURN_ITEMS} items per call; got ${items.length}`);
      const results: Record<string, unknown>[] = [];
      for (const item of items) {
        const read = readReturnItem(item, ctx);
        if ('refusal' in read) {
          results.push({ taskId: read.taskId, succeeded: false, message: read.refusal.message, code: read.refusal.code });
          continue;
        }
        // each item on its own, as its action would (a row another transaction holds is waited for a moment only)
        const [r] = await handBackBatch(ctx.services.units, [read]);
        results.push(
          r.ok
            ? { taskId: r.value.taskId, succeeded: true, message: r.value.message, queue: r.value.queue, error: r.value.error }
            : { taskId: read.taskId, succeeded: false, message: r.refusal.message, code: r.refusal.code },
        );
      }
      const failed = results.filter((r) => !r.succeeded).length;
      if (failed) {
        return {
          body: {
            succeeded: false,
            message: `${failed} of ${results.length} items failed`,
            code: 'items_failed',
            requestId: ctx.req.id,
            results,
          },
        };
      }
      return response(ctx.req, `${results.length} item${results.length === 1 ? '' : 's'} processed`, { results });
    },
  }),
  mateRoute({
    method: 'POST',
    name: 'ExtendLock',
    withProcess: false,
    bodyType: 'object',
    summary: 'Extend your lock on a task (lease)',
    refusal: () => ({ lockedUntil: null }),
    doc: {
      body: {
        type: 'object',
        properties: { taskId: { type: 'integer' }, seconds: { type: 'integer', minimum: 1, maximum: 86400 } },
        required: ['taskId'],
      },
      response: withProperties(S.response, { lockedUntil: { type: ['string', 'null'] } }),
    },
    handler: async (ctx) => {
      const { body } = ctx;
      const taskId = requireId(body, 'taskId');
      const s = getKey(body, 'seconds');
      const seconds = s === undefined || s === null || s === '' ? null : readInteger(s, 'seconds', { min: 1, max: 86_400 });
      const r = await ctx.services.units.transaction((tx) => extendLock(tx, ctx.caller, taskId, seconds));
      return response(ctx.req, r.message, { lockedUntil: formatDateTime(r.row.locked_until!, ctx.caller.timeZone) });
    },
  }),
];
