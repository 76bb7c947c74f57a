/**
 * Tasks by people (docs/people-api.md §5): list with filters and a keyset cursor, detail with
 * history, comments and KPI events, create, and every action of docs/product.md §5.6. The rules
 * live in src/tasks/people.ts and src/task-lists/; these routes only read the request and answer
 * the Task.
 */
import { Type } from 'typebox';
import type { Caller } from '../../lib/caller.js';
import type { Tx } from '../../db/tx.js';
import { Readable } from 'node:stream';
import { FILTER_KEYS, readTaskFilter } from '../../task-lists/filter.js';
import { listTasks, readTaskListQuery } from '../../task-lists/list.js';
import { getTaskDetail, loadTaskViews, type Task } from '../../task-lists/view.js';
import type { TaskRow } from '../../tasks/store.js';
import { exportTasksCsv } from '../../task-lists/export.js';
import {
  approveTask,
  clearErrorFlag,
  commentTask,
  createTaskByPerson,
  deleteTask,
  editTask,
  moveTask,
  rejectTask,
  reopenTask,
  unlockTask,
} from '../../tasks/people.js';
import { QUEUES } from '../../tasks/state-machine.js';
import {
  answer,
  CsvStream,
  defineRoute,
  ErrorBody,
  FreeObject,
  IdParams,
  IsoDate,
  Nullable,
  OneOf,
  processFor,
  type PeopleRoute,
} from '../route.js';

const Queue = OneOf(QUEUES);
export const TaskSchema = Type.Object({
  id: Type.Integer(),
  processId: Type.Integer(),
  queue: Queue,
  error: Type.Boolean(),
  reason: Nullable(Type.String()),
  urgent: Type.Boolean(),
  retryCount: Type.Integer(),
  activationDate: IsoDate,
  deadline: Nullable(IsoDate),
  lockedBy: Nullable(
    Type.Object({ type: Type.Union([Type.Literal('mate'), Type.Literal('user')]), id: Type.Integer(), name: Type.String() }),
  ),
  lockedUntil: Nullable(IsoDate),
  createdAt: IsoDate,
  updatedAt: IsoDate,
  data: Type.Object({}, { additionalProperties: true, description: 'field values by field name' }),
});
const Actor = Type.Object({ type: Type.String(), id: Nullable(Type.Integer()), name: Type.String() });
const TaskDetailSchema = Type.Intersect([
  TaskSchema,
  Type.Object({
    history: Type.Array(
      Type.Object({
        id: Type.Integer(),
        at: IsoDate,
        actor: Actor,
        action: Type.String(),
        fromQueue: Nullable(Type.String()),
        toQueue: Nullable(Type.String()),
        error: Type.Boolean(),
        reason: Nullable(Type.String()),
        comment: Nullable(Type.String()),
        retryCount: Type.Integer(),
        requestId: Nullable(Type.String()),
        details: Nullable(Type.Object({}, { additionalProperties: true })),
      }),
    ),
    comments: Type.Array(Type.Object({ id: Type.Integer(), at: IsoDate, author: Actor, text: Type.String() })),
    kpiEvents: Type.Array(
      Type.Object({
        id: Type.Integer(),
        at: IsoDate,
        outcome: Type.String(),
        entries: Type.Integer(),
        secondsSaved: Type.Integer(),
        runId: Nullable(Type.Integer()),
        mateId: Nullable(Type.Integer()),
      }),
    ),
  }),
]);
const Comment = Type.Optional(Type.String({ maxLength: 100_000, description: 'appended as a comment and kept in the history row' }));
const CommentOnly = Type.Object({ comment: Comment }, { additionalProperties: false });
const filterDoc: Record<string, string> = {
  queue: 'Ready, NeedsData, NeedsApproval, Manual or Solved',
  error: 'true/false: the Error flag',
  urgent: 'true/false',
  locked: 'true/false',
  overdue: 'true/false: deadline passed and not Solved',
  notActiveYet: 'true/false: Ready with a future activation date',
  q: 'free text over field values, reason and comments',
  createdFrom: 'date-time, inclusive',
  createdTo: 'date-time, exclusive',
  updatedFrom: 'date-time, inclusive',
  updatedTo: 'date-time, exclusive',
};
const ListQuery = Type.Object(
  {
    ...Object.fromEntries(FILTER_KEYS.map((k) => [k, Type.Optional(Type.String({ description: filterDoc[k] }))])),
    sort: Type.Optional(Type.String({ description: 'a system attribute or f.<field>, - for descending (default -createdAt)' })),
    limit: Type.Optional(Type.String({ description: '1-500, default 50' })),
    cursor: Type.Optional(Type.String({ description: 'nextCursor of the previous page' })),
  },
  { additionalProperties: true, description: 'plus f.<field>=value: a field equals a value' },
);

/** The task as the people's API answers it once a change is written (a deleted task once more, with its last state). */
async function viewOf(tx: Tx, caller: Caller, row: TaskRow): Promise<Task> {
  const [view] = await loadTaskViews(tx.db, caller, [row.id], { includeDeleted: true });
  return view;
}

/** A task action whose body is at most a comment (approve, reject, clear-error, unlock). */
function action(
  url: string,
  summary: string,
  act: (tx: Tx, caller: Caller, id: number, comment: string | undefined) => Promise<TaskRow>,
  curlBody = '',
): PeopleRoute {
  return defineRoute({
    method: 'POST',
    url: `/tasks/:id/${url}`,
    permission: 'tasks.work',
    tag: 'Tasks',
    summary,
    curl: `curl -s -X POST $QM/v1/tasks/42/${url} -H "Authorization: Bearer $TOKEN"${curlBody ? ` -H 'Content-Type: application/json' -d '${curlBody}'` : ''}`,
    params: IdParams,
    body: CommentOnly,
    response: { 200: TaskSchema, 404: ErrorBody, 409: ErrorBody },
    async handler({ services, caller, params, body }) {
      return services.units.transaction(async (tx) => viewOf(tx, caller, await act(tx, caller, params.id, body.comment)));
    },
  });
}

export const TASK_ROUTES: PeopleRoute[] = [
  defineRoute({
    method: 'GET',
    url: '/processes/:id/tasks',
    permission: 'tasks.read',
    tag: 'Tasks',
    summary: "One process's tasks: filters, sort on any system attribute or field, keyset cursor pagination and the total",
    curl: `curl -s "$QM/v1/processes/1/tasks?queue=Manual&error=true&sort=-createdAt&limit=50&f.country=DK" -H "Authorization: Bearer $TOKEN"`,
    params: IdParams,
    querystring: ListQuery,
    response: {
      200: Type.Object({ items: Type.Array(TaskSchema), total: Type.Integer(), nextCursor: Nullable(Type.String()) }),
      400: ErrorBody,
      404: ErrorBody,
    },
    async handler({ services, caller, params, query }) {
      const proc = await processFor(services, caller, params.id);
      return listTasks(services.db, caller, proc, readTaskListQuery(query, proc, caller.timeZone));
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/processes/:id/tasks/export',
    permission: 'tasks.read',
    tag: 'Tasks',
    summary: "CSV of every task of the process matching the list's filters (no sort or paging), streamed in id order, with no size limit",
    curl: `curl -s "$QM/v1/processes/1/tasks/export?queue=Solved" -H "Authorization: Bearer $TOKEN" -o tasks.csv`,
    params: IdParams,
    querystring: Type.Object(Object.fromEntries(FILTER_KEYS.map((k) => [k, Type.Optional(Type.String({ description: filterDoc[k] }))])), {
      additionalProperties: true,
      description: 'plus f.<field>=value',
    }),
    response: { 200: CsvStream, 400: ErrorBody, 404: ErrorBody },
    async handler({ services, caller, params, query }) {
      const proc = await processFor(services, caller, params.id);
      const filter = readTaskFilter(query, proc, caller.timeZone);
      return answer(200, Readable.from(exportTasksCsv(services.db, caller, proc, filter, () => services.turns.background())), {
        'content-type': 'text/csv; charset=utf-8',
        'content-disposition': `attachment; filename="${proc.processKey.replace(/[^A-Za-z0-9._-]/g, '_')}-tasks.csv"`,
      });
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/processes/:id/tasks',
    permission: 'tasks.work',
    tag: 'Tasks',
    summary: 'Create one task: field values plus optional activationDate, deadline, urgent, comment (docs/product.md §5.1)',
    curl: `curl -s -X POST $QM/v1/processes/1/tasks -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"invoiceNo":"INV-1","amount":120.5}'`,
    params: IdParams,
    body: FreeObject({
      additionalProperties: true,
      description: 'field values by field name, and the reserved keys activationDate, deadline, urgent, comment',
    }),
    status: 201,
    response: { 201: TaskSchema, 400: ErrorBody, 404: ErrorBody, 409: ErrorBody },
    async handler({ services, caller, params, body }) {
      const proc = await processFor(services, caller, params.id);
      return answer(
        201,
        await services.units.transaction(async (tx) => viewOf(tx, caller, await createTaskByPerson(tx, caller, proc, body))),
      );
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/tasks/:id',
    permission: 'tasks.read',
    tag: 'Tasks',
    summary: 'A task with its full history, comments, lock holder and lease, and KPI events',
    curl: `curl -s $QM/v1/tasks/42 -H "Authorization: Bearer $TOKEN"`,
    params: IdParams,
    response: { 200: TaskDetailSchema, 404: ErrorBody },
    async handler({ services, caller, params }) {
      return getTaskDetail(services.db, caller, params.id);
    },
  }),
  defineRoute({
    method: 'PATCH',
    url: '/tasks/:id',
    permission: 'tasks.work',
    tag: 'Tasks',
    summary: 'Edit field values and urgent (a NeedsData task that becomes complete moves to Ready), with an optional comment',
    curl: `curl -s -X PATCH $QM/v1/tasks/42 -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"data":{"amount":99},"urgent":true,"comment":"fixed the amount"}'`,
    params: IdParams,
    body: Type.Object(
      { data: Type.Optional(FreeObject({ additionalProperties: true })), urgent: Type.Optional(Type.Boolean()), comment: Comment },
      { additionalProperties: false },
    ),
    response: { 200: TaskSchema, 400: ErrorBody, 404: ErrorBody, 409: ErrorBody },
    async handler({ services, caller, params, body }) {
      return services.units.transaction(async (tx) => viewOf(tx, caller, await editTask(tx, caller, params.id, body)));
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/tasks/:id/move',
    permission: 'tasks.work',
    tag: 'Tasks',
    summary: 'Move the task to any queue (error: true sets the Error flag in Manual); moving an Error resolves it',
    curl: `curl -s -X POST $QM/v1/tasks/42/move -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"queue":"Ready","comment":"retry after fix"}'`,
    params: IdParams,
    body: Type.Object({ queue: Queue, error: Type.Optional(Type.Boolean()), comment: Comment }, { additionalProperties: false }),
    response: { 200: TaskSchema, 400: ErrorBody, 404: ErrorBody, 409: ErrorBody },
    async handler({ services, caller, params, body }) {
      return services.units.transaction(async (tx) => viewOf(tx, caller, await moveTask(tx, caller, params.id, body)));
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/tasks/:id/comments',
    permission: 'tasks.work',
    tag: 'Tasks',
    summary: 'Add a comment',
    curl: `curl -s -X POST $QM/v1/tasks/42/comments -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"text":"called the supplier"}'`,
    params: IdParams,
    body: Type.Object({ text: Type.String({ minLength: 1, maxLength: 100_000 }) }, { additionalProperties: false }),
    response: { 200: TaskSchema, 400: ErrorBody, 404: ErrorBody },
    async handler({ services, caller, params, body }) {
      return services.units.transaction(async (tx) => viewOf(tx, caller, await commentTask(tx, caller, params.id, body.text)));
    },
  }),
  action('approve', 'Approve a task in NeedsApproval (→ Ready, or NeedsData when required fields are missing)', approveTask),
  action('reject', 'Reject a task in NeedsApproval (→ Manual)', rejectTask, '{"comment":"not ours"}'),
  action('clear-error', 'Clear the Error flag (the task stays in Manual); resolves the Error', clearErrorFlag),
  action('unlock', "Release a lock; the former holder's late hand-back is refused (lock_expired)", unlockTask),
  defineRoute({
    method: 'POST',
    url: '/tasks/:id/reopen',
    permission: 'tasks.work',
    tag: 'Tasks',
    summary: 'Reopen a Solved task into Ready or Manual (logged)',
    curl: `curl -s -X POST $QM/v1/tasks/42/reopen -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"queue":"Manual"}'`,
    params: IdParams,
    body: Type.Object(
      { queue: Type.Union([Type.Literal('Ready'), Type.Literal('Manual')]), comment: Comment },
      { additionalProperties: false },
    ),
    response: { 200: TaskSchema, 400: ErrorBody, 404: ErrorBody, 409: ErrorBody },
    async handler({ services, caller, params, body }) {
      return services.units.transaction(async (tx) =>
        viewOf(tx, caller, await reopenTask(tx, caller, params.id, body.queue, body.comment)),
      );
    },
  }),
  defineRoute({
    method: 'DELETE',
    url: '/tasks/:id',
    permission: 'tasks.delete',
    tag: 'Tasks',
    summary: 'Soft-delete a task (logged); answers its last state',
    curl: `curl -s -X DELETE $QM/v1/tasks/42 -H "Authorization: Bearer $TOKEN"`,
    params: IdParams,
    response: { 200: TaskSchema, 404: ErrorBody, 409: ErrorBody },
    async handler({ services, caller, params }) {
      return services.units.transaction(async (tx) => viewOf(tx, caller, await deleteTask(tx, caller, params.id)));
    },
  }),
];
