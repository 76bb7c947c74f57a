/** TakeNext and TakeMany (docs/mate-api.md §7.6). */
import { readInteger } from '../../lib/values.js';
import { dummyTask, dummyTaskBase, taskObject } from '../answers.js';
import { mateRoute, NO_EXTRA_KEYS, S, type MateRoute } from '../route.js';

export const TAKE_ROUTES: MateRoute[] = [
  mateRoute({
    method: 'GET',
    name: 'TakeNext',
    withProcess: true,
    summary: 'Take the next task (or the dummy task, taskId -1)',
    refusal: dummyTaskBase,
    doc: { response: S.task },
    handler: async (ctx) => {
      const proc = await ctx.process();
      const r = await ctx.services.batchers.take(proc, { caller: ctx.caller, count: 1 });
      if ('empty' in r) return { body: dummyTask(proc.processKey, r.empty, r.message, ctx.req.id) };
      return { body: taskObject(r.tasks[0], proc, ctx.caller.timeZone) };
    },
  }),
  mateRoute({
    method: 'GET',
    name: 'TakeMany',
    withProcess: true,
    summary: 'Take up to ?count tasks (1-100, default 10)',
    refusal: NO_EXTRA_KEYS,
    doc: { response: { type: 'array', items: S.task } },
    handler: async (ctx) => {
      const q = ctx.req.query as Record<string, unknown>;
      const rawCount = Object.entries(q).find(([k]) => k.toLowerCase() === 'count')?.[1];
      const proc = await ctx.process(); // the process before values (docs/mate-api.md §5)
      const count =
        rawCount === undefined || rawCount === ''
          ? 10
          : readInteger(Array.isArray(rawCount) ? rawCount[0] : rawCount, 'count', { min: 1, max: 100 });
      const r = await ctx.services.batchers.take(proc, { caller: ctx.caller, count });
      if ('empty' in r) return { body: [] };
      return { body: r.tasks.map((t) => taskObject(t, proc, ctx.caller.timeZone)) };
    },
  }),
];
