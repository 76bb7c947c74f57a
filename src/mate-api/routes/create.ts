/** CreateTask, CreateTasks and CreateAndTakeTask (docs/mate-api.md §7.7–7.8), each taking an Idempotency-Key. */
import { Refusal } from '../../lib/errors.js';
import { prepareTasks, createTasks, createAndTake } from '../../tasks/create.js';
import { dummyTaskBase, response, taskObject } from '../answers.js';
import { idempotentCreate } from '../idempotent.js';
import { S, withProperties, type MateRoute } from '../route.js';

// One call creates at most this many tasks: a 1 MiB body holds fewer anyway, and it bounds one
// transaction's size.
const MAX_CREATE_ITEMS = 10_000;

const createTask: MateRoute<'object'> = {
  method: 'POST',
  name: 'CreateTask',
  withProcess: true,
  bodyType: 'object',
  summary: 'Create a task',
  refusal: () => ({ taskId: -1 }),
  doc: { body: S.taskData, response: withProperties(S.response, { taskId: { type: 'integer' }, queue: { type: 'string' } }) },
  handler: async (ctx) => {
    const proc = await ctx.process();
    return idempotentCreate(ctx, createTask, async (tx) => {
      const prepared = prepareTasks(ctx.caller, proc, [ctx.body], false);
      const [row] = await createTasks(tx, ctx.caller, proc, prepared, false);
      return response(ctx.req, 'Task created', { taskId: row.id, queue: row.queue });
    });
  },
};

const createTasksRoute: MateRoute<'array'> = {
  method: 'POST',
  name: 'CreateTasks',
  withProcess: true,
  bodyType: 'array',
  summary: 'Create tasks, all or nothing (at most 10,000)',
  refusal: () => ({ taskIds: [] }),
  doc: {
    body: { type: 'array', items: S.taskData, maxItems: MAX_CREATE_ITEMS },
    response: withProperties(S.response, { taskIds: { type: 'array', items: { type: 'integer' } } }),
  },
  handler: async (ctx) => {
    const items = ctx.body;
    if (items.length > MAX_CREATE_ITEMS)
      throw new Refusal('invalid_body', `At most ${MAX_CREATE_ITEMS} tasks per call; got ${items.length}`);
    const proc = await ctx.process();
    return idempotentCreate(ctx, createTasksRoute, async (tx) => {
      const prepared = prepareTasks(ctx.caller, proc, items, true);
      const rows = await createTasks(tx, ctx.caller, proc, prepared, true);
      return response(ctx.req, `${rows.length} task${rows.length === 1 ? '' : 's'} created`, { taskIds: rows.map((r) => r.id) });
    });
  },
};

const createAndTakeTask: MateRoute<'object'> = {
  method: 'POST',
  name: 'CreateAndTakeTask',
  withProcess: true,
  bodyType: 'object',
  summary: 'Create a task and take it at once',
  refusal: dummyTaskBase,
  doc: { body: S.taskData, response: S.task },
  handler: async (ctx) => {
    const proc = await ctx.process();
    return idempotentCreate(ctx, createAndTakeTask, async (tx) => {
      const [prepared] = prepareTasks(ctx.caller, proc, [ctx.body], false);
      const { task } = await createAndTake(tx, ctx.caller, proc, prepared);
      return { body: taskObject(task, proc, ctx.caller.timeZone) };
    });
  },
};

export const CREATE_ROUTES: MateRoute[] = [createTask, createTasksRoute, createAndTakeTask];
