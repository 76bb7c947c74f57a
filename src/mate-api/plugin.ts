/**
 * The Mate API: the Anymate wire format turned into calls on the domain services. Registered
 * under /api and its legacy alias /apimate. Paths match case-insensitively, with or without one
 * trailing slash (router options in app.ts). Check order (mate-api §5): route, token, content type
 * and size, JSON syntax, process, values, state.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, type ErrorCode, type FieldProblem } from '../lib/errors.js';
import { decodeBody, parseJsonStrict } from '../lib/json.js';
import { authenticateMate, authErrorHeaders, type MateContext } from '../auth/authenticate.js';
import { statusFor } from './errors.js';
import { taskObject, dummyTask } from './task-object.js';
import { getKey, readInteger, readOptionalText, readComment } from '../lib/values.js';
import { loadProcessById, type ProcessDef } from '../processes/store.js';
import { cachedProcessByKey } from '../processes/cache.js';
import { isStoreUnavailable } from '../db/store.js';
import { okToRun } from '../processes/gate.js';
import {
  Refusal, prepareTasks, createTasksIn, createAndTakeIn, handBack, updateTask, extendLock,
  type MateCall, type HandBackItem, type HandBackResult,
} from '../tasks/service.js';
import { withIdempotency, requestHash, isValidKey, type StoredAnswer } from '../tasks/idempotency.js';
import { startOrGetRun, finishRun, reportFailure, getRules, touchMate } from '../runs/service.js';
import { formatDateTime } from '../lib/time.js';
import type { KpiOverrides } from '../kpis/rules.js';
import type { HandBackAction } from '../tasks/state-machine.js';

type Body = Record<string, unknown>;

interface Ctx {
  req: FastifyRequest;
  mate: MateContext;
  call: MateCall;
  /** the ProcessKey path segment, percent-decoded */
  processKey: string;
  body: unknown;
  process(key?: string): Promise<ProcessDef>;
}

interface Answer {
  status?: number;
  headers?: Record<string, string>;
  body: unknown;
}

interface RouteDef {
  method: 'GET' | 'POST';
  name: string;
  withProcess: boolean;
  summary: string;
  /** expected top-level JSON type of a POST body */
  bodyType?: 'object' | 'array';
  /** the endpoint's normal keys, kept on every refusal (mate-api §5) */
  refusal: (processKey: string) => Record<string, unknown>;
  handler: (ctx: Ctx) => Promise<Answer>;
}

const JSON_TYPE = /^application\/(?:json|[a-z0-9.+-]+\+json)\s*(?:;.*)?$/i;
const MAX_CREATE_ITEMS = 10_000;
const MAX_RETURN_ITEMS = 1_000;
const OVERRIDE_MAX = 2 ** 31 - 1;

declare module 'fastify' {
  interface FastifyRequest {
    mate?: MateContext;
  }
  interface FastifyContextConfig {
    mateRoute?: RouteDef;
  }
}

// ------------------------------------------------------------------------------------------------
// Reading values

function requireId(body: Body, key: 'taskId' | 'runId'): number {
  const v = getKey(body, key);
  if (v === undefined || v === null) throw new AppError('missing_field', `${key} is required`, [{ field: key, code: 'missing_field', message: `${key} is required` }]);
  return readInteger(v, key, { min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER });
}

function readOverride(body: Body, key: 'overwriteSecondsSaved' | 'overwriteEntries'): number | null {
  const v = getKey(body, key);
  if (v === undefined || v === null || v === '') return null;
  return readInteger(v, key, { min: 0, max: OVERRIDE_MAX });
}

function readOverrides(body: Body): KpiOverrides {
  return { overwriteSecondsSaved: readOverride(body, 'overwriteSecondsSaved'), overwriteEntries: readOverride(body, 'overwriteEntries') };
}

const ACTIONS: Record<string, HandBackAction> = { solved: 'Solved', manual: 'Manual', error: 'Error', retry: 'Retry' };

function readAction(body: Body, call: MateCall, action: HandBackAction): HandBackItem {
  return {
    call,
    taskId: requireId(body, 'taskId'),
    action,
    reason: readOptionalText(getKey(body, 'reason'), 'reason'),
    comment: readComment(body),
    overrides: readOverrides(body),
    activationDate: action === 'Retry' ? getKey(body, 'activationDate') ?? null : null,
  };
}

// ------------------------------------------------------------------------------------------------
// Answers

function response(req: FastifyRequest, message: string, extra: Record<string, unknown> = {}): Answer {
  return { body: { succeeded: true, message, ...extra, requestId: req.id } };
}

function refusalBody(route: RouteDef | undefined, processKey: string, req: FastifyRequest, code: ErrorCode, message: string, problems: FieldProblem[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  const base = route ? route.refusal(processKey) : {};
  const body: Record<string, unknown> = { ...base, succeeded: false, message, code, requestId: req.id, ...extra };
  if (statusFor(code) === 400) body.errors = (problems.length ? problems : [{ code, message }]).slice(0, 100);
  return body;
}

function handBackAnswer(req: FastifyRequest, r: HandBackResult): Answer {
  if (r.ok) return response(req, r.message, { queue: r.queue, error: r.error });
  throw new Refusal(r.code, r.message);
}

// ------------------------------------------------------------------------------------------------
// Idempotent creates

async function idempotent(ctx: Ctx, endpoint: string, run: (trx: any) => Promise<StoredAnswer>): Promise<Answer> {
  const raw = ctx.req.headers['idempotency-key'];
  const db = ctx.req.server.store.db;
  if (raw === undefined) {
    const answer = await db.transaction().execute(run);
    return { status: answer.status, body: answer.body };
  }
  const key = Array.isArray(raw) ? raw.join(',') : raw;
  if (!isValidKey(key)) throw new AppError('invalid_field', 'Idempotency-Key must be 1-255 visible ASCII characters', [{ field: 'Idempotency-Key', value: key, code: 'invalid_field', message: 'Idempotency-Key must be 1-255 visible ASCII characters' }]);
  const proc = await ctx.process();
  const outcome = await withIdempotency(db, { tenantId: ctx.call.tenantId, mateId: ctx.call.mateId, key, hash: requestHash(endpoint, proc.processKey, ctx.body), now: ctx.call.now }, run);
  switch (outcome.kind) {
    case 'fresh':
      return { status: outcome.answer.status, body: outcome.answer.body };
    case 'replay':
      return { status: outcome.answer.status, body: outcome.answer.body, headers: { 'idempotent-replayed': 'true' } };
    case 'conflict':
      throw new AppError('idempotency_conflict', `Idempotency-Key "${key}" was used with another request`);
    case 'in_progress':
      throw new AppError('idempotency_in_progress', `A request with Idempotency-Key "${key}" is still running`);
  }
}

/** Runs a create inside the idempotency transaction, turning refusals and 400s into answers to store. */
async function asAnswer(ctx: Ctx, route: RouteDef, fn: () => Promise<Answer>): Promise<StoredAnswer> {
  try {
    const a = await fn();
    return { status: a.status ?? 200, body: a.body };
  } catch (err) {
    if (err instanceof Refusal) return { status: 200, body: refusalBody(route, ctx.processKey, ctx.req, err.code, err.message, err.problems, err.extra) };
    if (err instanceof AppError && statusFor(err.code) === 400) return { status: 400, body: refusalBody(route, ctx.processKey, ctx.req, err.code, err.message, err.problems, err.extra) };
    throw err;
  }
}

// ------------------------------------------------------------------------------------------------
// Endpoints

const RESPONSE = () => ({});

const handBackRoute = (name: string, action: HandBackAction): RouteDef => ({
  method: 'POST', name, withProcess: false, bodyType: 'object', refusal: RESPONSE,
  summary: `Hand back a task you hold: ${action}${name.endsWith('Async') ? ' (same as the synchronous form)' : ''}`,
  handler: async (ctx) => {
    const r = await ctx.req.server.taskBatchers.handBack(readAction(ctx.body as Body, ctx.call, action));
    return handBackAnswer(ctx.req, r);
  },
});

const ROUTES: RouteDef[] = [
  {
    method: 'GET', name: 'OkToRun', withProcess: true, summary: 'May Mates work the process now?',
    refusal: () => ({ gateOpen: false, notBlockedDate: false, stoppedByErrors: false, tasksAvailable: false, okToRun: false }),
    handler: async (ctx) => {
      const proc = await ctx.process();
      const a = await okToRun(ctx.req.server.store.db, proc, ctx.call.now, ctx.call.timeZone);
      return { body: { ...a, requestId: ctx.req.id } };
    },
  },
  ...['StartOrGetRun', 'StartRun'].map((name): RouteDef => ({
    method: 'GET', name, withProcess: true, summary: 'Open or resume the process\'s run',
    refusal: (pk) => ({ processKey: pk, runId: -1 }),
    handler: async (ctx) => {
      const proc = await ctx.process();
      const runId = await startOrGetRun(ctx.req.server.store.db, ctx.call, proc);
      return { body: { processKey: proc.processKey, runId, requestId: ctx.req.id } };
    },
  })),
  {
    method: 'POST', name: 'FinishRun', withProcess: false, bodyType: 'object', summary: 'Close a run', refusal: RESPONSE,
    handler: async (ctx) => {
      const body = ctx.body as Body;
      const runId = requireId(body, 'runId');
      const r = await finishRun(ctx.req.server.store.db, ctx.call, runId, readOverrides(body));
      if (!r.ok) throw new Refusal(r.code, r.message);
      return response(ctx.req, r.message);
    },
  },
  {
    method: 'POST', name: 'Failure', withProcess: false, bodyType: 'object', summary: 'Report a failure outside task work', refusal: RESPONSE,
    handler: async (ctx) => {
      const body = ctx.body as Body;
      const key = getKey(body, 'processKey');
      if (key === undefined || key === null || key === '') throw new AppError('missing_field', 'processKey is required', [{ field: 'processKey', code: 'missing_field', message: 'processKey is required' }]);
      const processKey = readOptionalText(key, 'processKey') ?? '';
      const proc = await ctx.process(processKey); // process before the other values (§5)
      const message = readOptionalText(getKey(body, 'message'), 'message') ?? '';
      await reportFailure(ctx.req.server.store.db, ctx.call, proc, message);
      return response(ctx.req, `Failure of process ${proc.processKey} recorded`);
    },
  },
  {
    method: 'GET', name: 'GetRules', withProcess: true, summary: 'The process\'s rules', refusal: (pk) => ({ processKey: pk }),
    handler: async (ctx) => ({ body: await getRules(ctx.req.server.store.db, await ctx.process()) }),
  },
  {
    method: 'GET', name: 'TakeNext', withProcess: true, summary: 'Take the next task (or the dummy task, taskId -1)',
    refusal: (pk) => ({ taskId: -1, reason: null, runId: -1, processKey: pk }),
    handler: async (ctx) => {
      const proc = await ctx.process();
      const r = await ctx.req.server.taskBatchers.take(proc, { call: ctx.call, count: 1 });
      if ('dummy' in r) return { body: dummyTask(proc.processKey, r.dummy, r.message, ctx.req.id) };
      return { body: taskObject(r.tasks[0], proc, ctx.call.timeZone) };
    },
  },
  {
    method: 'GET', name: 'TakeMany', withProcess: true, summary: 'Take up to ?count tasks (1-100, default 10)', refusal: RESPONSE,
    handler: async (ctx) => {
      const q = ctx.req.query as Record<string, unknown>;
      const rawCount = Object.entries(q).find(([k]) => k.toLowerCase() === 'count')?.[1];
      const proc = await ctx.process(); // process before values (§5)
      const count = rawCount === undefined || rawCount === '' ? 10 : readInteger(Array.isArray(rawCount) ? rawCount[0] : rawCount, 'count', { min: 1, max: 100 });
      const r = await ctx.req.server.taskBatchers.take(proc, { call: ctx.call, count });
      if ('dummy' in r) return { body: [] };
      return { body: r.tasks.map((t) => taskObject(t, proc, ctx.call.timeZone)) };
    },
  },
  {
    method: 'POST', name: 'CreateTask', withProcess: true, bodyType: 'object', summary: 'Create a task', refusal: () => ({ taskId: -1 }),
    handler: async (ctx) => {
      const proc = await ctx.process();
      const route = ctx.req.routeOptions.config.mateRoute!;
      return idempotent(ctx, 'CreateTask', (trx) =>
        asAnswer(ctx, route, async () => {
          const prepared = prepareTasks(ctx.call, proc, [ctx.body], false);
          const [row] = await createTasksIn(trx, ctx.call, proc, prepared, false);
          return response(ctx.req, 'Task created', { taskId: row.id, queue: row.queue });
        }),
      );
    },
  },
  {
    method: 'POST', name: 'CreateTasks', withProcess: true, bodyType: 'array', summary: 'Create tasks, all or nothing (at most 10,000)', refusal: () => ({ taskIds: [] }),
    handler: async (ctx) => {
      const items = ctx.body as unknown[];
      if (items.length > MAX_CREATE_ITEMS) throw new AppError('invalid_body', `At most ${MAX_CREATE_ITEMS} tasks per call; got ${items.length}`);
      const proc = await ctx.process();
      const route = ctx.req.routeOptions.config.mateRoute!;
      return idempotent(ctx, 'CreateTasks', (trx) =>
        asAnswer(ctx, route, async () => {
          const prepared = prepareTasks(ctx.call, proc, items, true);
          const rows = await createTasksIn(trx, ctx.call, proc, prepared, true);
          return response(ctx.req, `${rows.length} task${rows.length === 1 ? '' : 's'} created`, { taskIds: rows.map((r) => r.id) });
        }),
      );
    },
  },
  {
    method: 'POST', name: 'CreateAndTakeTask', withProcess: true, bodyType: 'object', summary: 'Create a task and take it at once',
    refusal: (pk) => ({ taskId: -1, reason: null, runId: -1, processKey: pk }),
    handler: async (ctx) => {
      const proc = await ctx.process();
      const route = ctx.req.routeOptions.config.mateRoute!;
      return idempotent(ctx, 'CreateAndTakeTask', (trx) =>
        asAnswer(ctx, route, async () => {
          const [prepared] = prepareTasks(ctx.call, proc, [ctx.body], false);
          const r = await createAndTakeIn(trx, ctx.call, proc, prepared);
          if ('dummy' in r) {
            const body: Record<string, unknown> = { ...dummyTask(proc.processKey, r.dummy, r.message, ctx.req.id), succeeded: false, ...(r.extra ?? {}) };
            if (r.problems) body.errors = r.problems;
            return { body };
          }
          return { body: taskObject(r.task, proc, ctx.call.timeZone) };
        }),
      );
    },
  },
  {
    method: 'POST', name: 'UpdateTask', withProcess: false, bodyType: 'object', summary: 'Change field values of a task, add a comment, extend your lock', refusal: RESPONSE,
    handler: async (ctx) => {
      const body = ctx.body as Body;
      const taskId = requireId(body, 'taskId');
      const r = await updateTask(ctx.req.server.store.db, ctx.call, taskId, body, async (trx, processId) => (await loadProcessById(trx, ctx.call.tenantId, processId))!);
      if (!r.ok) throw new Refusal(r.code, r.message, r.extra);
      return response(ctx.req, r.message);
    },
  },
  handBackRoute('Solved', 'Solved'),
  handBackRoute('Manual', 'Manual'),
  handBackRoute('Error', 'Error'),
  handBackRoute('Retry', 'Retry'),
  handBackRoute('SolvedAsync', 'Solved'),
  handBackRoute('ManualAsync', 'Manual'),
  handBackRoute('ErrorAsync', 'Error'),
  handBackRoute('RetryAsync', 'Retry'),
  {
    method: 'POST', name: 'Return', withProcess: false, bodyType: 'array', summary: 'Hand back several tasks, each with its action (at most 1,000)', refusal: () => ({ results: [] }),
    handler: async (ctx) => {
      const items = ctx.body as unknown[];
      if (items.length > MAX_RETURN_ITEMS) throw new AppError('invalid_body', `At most ${MAX_RETURN_ITEMS} items per call; got ${items.length}`);
      const results: Record<string, unknown>[] = [];
      for (const item of items) {
        let parsed: HandBackItem;
        try {
          if (typeof item !== 'object' || item === null || Array.isArray(item)) throw new AppError('invalid_field', 'Each item must be an object');
          const rawAction = getKey(item as Body, 'action');
          if (rawAction === undefined || rawAction === null || rawAction === '') throw new AppError('missing_field', 'action is required');
          const action = typeof rawAction === 'string' ? ACTIONS[rawAction.toLowerCase()] : undefined;
          if (!action) throw new AppError('invalid_field', `action ${JSON.stringify(rawAction)} is not one of Solved, Manual, Error, Retry`);
          parsed = readAction(item as Body, ctx.call, action);
        } catch (err) {
          if (!(err instanceof AppError)) throw err;
          let taskId: number | null = null;
          try {
            taskId = requireId(item as Body, 'taskId');
          } catch {
            taskId = null;
          }
          results.push({ taskId, succeeded: false, message: err.message, code: err.code });
          continue;
        }
        // each item in its own transaction, as its action would
        const [r] = await handBack(ctx.req.server.store.db, [parsed]);
        results.push(r.ok ? { taskId: r.taskId, succeeded: true, message: r.message, queue: r.queue, error: r.error } : { taskId: r.taskId, succeeded: false, message: r.message, code: r.code });
      }
      const failed = results.filter((r) => !r.succeeded).length;
      if (failed) return { body: { succeeded: false, message: `${failed} of ${results.length} items failed`, code: 'items_failed', requestId: ctx.req.id, results } };
      return response(ctx.req, `${results.length} item${results.length === 1 ? '' : 's'} processed`, { results });
    },
  },
  {
    method: 'POST', name: 'ExtendLock', withProcess: false, bodyType: 'object', summary: 'Extend your lock on a task (lease)', refusal: () => ({ lockedUntil: null }),
    handler: async (ctx) => {
      const body = ctx.body as Body;
      const taskId = requireId(body, 'taskId');
      const s = getKey(body, 'seconds');
      const seconds = s === undefined || s === null || s === '' ? null : readInteger(s, 'seconds', { min: 1, max: 86_400 });
      const r = await extendLock(ctx.req.server.store.db, ctx.call, taskId, seconds);
      if (!r.ok) throw new Refusal(r.code, r.message);
      return response(ctx.req, r.message, { lockedUntil: formatDateTime(r.row.locked_until!, ctx.call.timeZone) });
    },
  },
];

// ------------------------------------------------------------------------------------------------
// The plugin


function send(reply: FastifyReply, status: number, body: unknown, headers: Record<string, string> = {}): FastifyReply {
  reply.code(status).header('cache-control', 'no-store').header('content-type', 'application/json; charset=utf-8');
  for (const [k, v] of Object.entries(headers)) reply.header(k, v);
  return reply.send(JSON.stringify(body));
}

export async function mateApi(app: FastifyInstance, opts: { hidden?: boolean }): Promise<void> {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (req, body, done) => {
    const type = req.headers['content-type'] ?? '';
    if (!JSON_TYPE.test(type)) return done(new AppError('unsupported_media_type', `Content-Type must be application/json, got ${type ? JSON.stringify(type) : 'none'}`), undefined);
    const buf = body as Buffer;
    if (buf.length === 0) return done(new AppError('invalid_body', 'The body is empty; a JSON value is required'), undefined);
    try {
      done(null, parseJsonStrict(decodeBody(buf)));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
  // Bodies are checked by the handlers (lenient input); schemas only document the API.
  app.setValidatorCompiler(() => () => true);
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  // the token, before the content type and size are looked at
  app.addHook('onRequest', async (req) => {
    if (req.is404) return;
    req.mate = await authenticateMate(req);
  });

  const routeNotFound = (req: FastifyRequest, reply: FastifyReply) =>
    send(reply, 404, { succeeded: false, message: `No Mate API endpoint ${req.method} ${req.url.split('?')[0]}`, code: 'route_not_found', requestId: req.id });
  app.setNotFoundHandler(routeNotFound);

  app.setErrorHandler((err, req, reply) => {
    // an unknown route is answered as such even when its body could not be read (route comes first, §5)
    if (req.is404) return routeNotFound(req, reply);
    const route = req.routeOptions?.config?.mateRoute;
    const processKey = decodedProcessKey(req);
    if (err instanceof Refusal) return send(reply, 200, refusalBody(route, processKey, req, err.code, err.message, err.problems, err.extra));
    if (err instanceof AppError) {
      const status = statusFor(err.code);
      const headers: Record<string, string> = {};
      const challenge = authErrorHeaders(err, req.headers.authorization !== undefined);
      if (challenge) headers['www-authenticate'] = challenge;
      if (err.code === 'idempotency_in_progress') headers['retry-after'] = '1';
      return send(reply, status, refusalBody(route, processKey, req, err.code, err.message, err.problems, err.extra), headers);
    }
    const fe = err as { statusCode?: number; code?: string; message?: string };
    if (fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || fe.statusCode === 413) {
      return send(reply, 413, refusalBody(route, processKey, req, 'payload_too_large', `The body is larger than ${req.server.config.bodyLimit} bytes`, []));
    }
    if (fe.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || fe.statusCode === 415) {
      return send(reply, 415, refusalBody(route, processKey, req, 'unsupported_media_type', 'Content-Type must be application/json', []));
    }
    if (fe.statusCode === 400 && fe.code?.startsWith('FST_ERR_CTP')) {
      return send(reply, 400, refusalBody(route, processKey, req, 'invalid_body', fe.message ?? 'The body could not be read', []));
    }
    if (isStoreUnavailable(err) || fe.statusCode === 503) {
      req.log.error({ err }, 'store unavailable');
      return send(reply, 503, refusalBody(route, processKey, req, 'unavailable', 'The service is unavailable; try again shortly', []), { 'retry-after': '5' });
    }
    req.log.error({ err }, 'unexpected error');
    return send(reply, 500, refusalBody(route, processKey, req, 'internal_error', `An unexpected error occurred (request ${req.id})`, []));
  });

  for (const route of ROUTES) {
    const url = route.withProcess ? `/${route.name}/:processKey` : `/${route.name}`;
    app.route({
      method: route.method,
      url,
      config: { mateRoute: route },
      schema: openApiSchema(route, opts.hidden) as never,
      handler: async (req, reply) => {
        const mate = req.mate!;
        const call: MateCall = { tenantId: mate.tenantId, timeZone: mate.timeZone, mateId: mate.mateId, mateName: mate.mateName, requestId: req.id, now: req.server.clock.now() };
        if (route.method === 'POST') {
          if (req.body === undefined) {
            throw req.headers['content-type'] ? new AppError('invalid_body', 'The body is empty; a JSON value is required') : new AppError('unsupported_media_type', 'Content-Type must be application/json');
          }
          checkTopLevel(route, req.body);
        }
        const processKey = decodedProcessKey(req);
        let loaded: ProcessDef | null = null;
        const ctx: Ctx = {
          req, mate, call, processKey, body: req.body,
          async process(key = processKey) {
            if (loaded && key === processKey) return loaded;
            const p = await cachedProcessByKey(req.server.store.db, mate.tenantId, key);
            if (!p) throw new AppError('process_not_found', `No process with ProcessKey "${key}"`);
            if (key === processKey) loaded = p;
            return p;
          },
        };
        // a write at most every 10 s per Mate (runs/service.ts), so awaiting it costs next to nothing
        await touchMate(req.server.store.db, call).catch((err) => req.log.warn({ err }, 'could not record the Mate\'s last contact'));
        const answer = await route.handler(ctx);
        return send(reply, answer.status ?? 200, answer.body, answer.headers);
      },
    });
  }
}

// ------------------------------------------------------------------------------------------------
// OpenAPI (documentation only: input is read leniently by the handlers, answers are written as is)

const S = {
  response: {
    type: 'object',
    properties: {
      succeeded: { type: 'boolean' }, message: { type: 'string' }, code: { type: 'string', description: 'present when succeeded is false' },
      requestId: { type: 'string' },
    },
    additionalProperties: true,
  },
  task: {
    type: 'object',
    description: 'A task (taskId > 0) with one key per field of the process, or the dummy task (taskId -1, with message and code)',
    properties: {
      taskId: { type: 'integer' }, reason: { type: ['string', 'null'] }, runId: { type: 'integer' }, processKey: { type: 'string' },
      activationDate: { type: 'string', format: 'date-time' }, deadline: { type: ['string', 'null'] }, urgent: { type: 'boolean' }, retryCount: { type: 'integer' },
      message: { type: 'string' }, code: { type: 'string' },
    },
    additionalProperties: true,
  },
  taskData: { type: 'object', description: 'Field values by field name (case-insensitive) plus comment/newNote, activationDate, deadline, urgent', additionalProperties: true },
  taskAction: {
    type: 'object',
    properties: {
      taskId: { type: 'integer' }, reason: { type: 'string' }, comment: { type: 'string' }, overwriteSecondsSaved: { type: ['integer', 'null'] },
      overwriteEntries: { type: ['integer', 'null'] }, activationDate: { type: 'string', description: 'Retry only' },
    },
    required: ['taskId'],
  },
};

const DOC: Record<string, { body?: unknown; response: unknown }> = {
  OkToRun: { response: { type: 'object', properties: Object.fromEntries(['gateOpen', 'notBlockedDate', 'stoppedByErrors', 'tasksAvailable', 'okToRun'].map((k) => [k, { type: 'boolean' }])) } },
  StartOrGetRun: { response: { type: 'object', properties: { processKey: { type: 'string' }, runId: { type: 'integer' } } } },
  StartRun: { response: { type: 'object', properties: { processKey: { type: 'string' }, runId: { type: 'integer' } } } },
  FinishRun: { body: { type: 'object', properties: { runId: { type: 'integer' }, overwriteSecondsSaved: { type: ['integer', 'null'] }, overwriteEntries: { type: ['integer', 'null'] } }, required: ['runId'] }, response: S.response },
  Failure: { body: { type: 'object', properties: { processKey: { type: 'string' }, message: { type: 'string' } }, required: ['processKey'] }, response: S.response },
  GetRules: { response: { type: 'object', description: '{processKey, <rule name>: <typed value>, …}', additionalProperties: true } },
  TakeNext: { response: S.task },
  TakeMany: { response: { type: 'array', items: S.task } },
  CreateTask: { body: S.taskData, response: { ...S.response, properties: { ...S.response.properties, taskId: { type: 'integer' }, queue: { type: 'string' } } } },
  CreateTasks: { body: { type: 'array', items: S.taskData, maxItems: MAX_CREATE_ITEMS }, response: { ...S.response, properties: { ...S.response.properties, taskIds: { type: 'array', items: { type: 'integer' } } } } },
  CreateAndTakeTask: { body: S.taskData, response: S.task },
  UpdateTask: { body: { ...S.taskData, properties: { taskId: { type: 'integer' } }, required: ['taskId'] }, response: S.response },
  Return: { body: { type: 'array', maxItems: MAX_RETURN_ITEMS, items: { ...S.taskAction, properties: { ...S.taskAction.properties, action: { type: 'string', enum: ['Solved', 'Manual', 'Error', 'Retry'] } } } }, response: { ...S.response, properties: { ...S.response.properties, results: { type: 'array', items: S.response } } } },
  ExtendLock: { body: { type: 'object', properties: { taskId: { type: 'integer' }, seconds: { type: 'integer', minimum: 1, maximum: 86400 } }, required: ['taskId'] }, response: { ...S.response, properties: { ...S.response.properties, lockedUntil: { type: ['string', 'null'] } } } },
};

function openApiSchema(route: RouteDef, hidden = false): Record<string, unknown> {
  const doc = DOC[route.name] ?? { body: S.taskAction, response: { ...S.response, properties: { ...S.response.properties, queue: { type: 'string' }, error: { type: 'boolean' } } } };
  return {
    summary: route.summary,
    tags: ['Mate API'],
    hide: hidden,
    security: [{ bearer: [] }],
    ...(route.withProcess ? { params: { type: 'object', properties: { processKey: { type: 'string', description: 'ProcessKey, matched case-insensitively' } } } } : {}),
    ...(doc.body && route.method === 'POST' ? { body: doc.body } : {}),
    response: { 200: doc.response },
  };
}

function checkTopLevel(route: RouteDef, body: unknown): void {
  if (route.bodyType === 'array' && !Array.isArray(body)) throw new AppError('invalid_body', `${route.name} takes a JSON array`);
  if (route.bodyType === 'object' && (typeof body !== 'object' || body === null || Array.isArray(body))) {
    const hint = Array.isArray(body) && route.name === 'CreateTask' ? ' (an array of tasks belongs on CreateTasks)' : '';
    throw new AppError('invalid_body', `${route.name} takes a JSON object${hint}`);
  }
}

function decodedProcessKey(req: FastifyRequest): string {
  const p = (req.params as Record<string, string> | undefined)?.processKey;
  return typeof p === 'string' ? p : '';
}
