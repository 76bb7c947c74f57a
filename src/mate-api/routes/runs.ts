/** OkToRun, StartOrGetRun/StartRun, FinishRun, Failure, GetRules (docs/mate-api.md §7.1–7.5). */
import { Refusal } from '../../lib/errors.js';
import { getKey, readOptionalText } from '../../lib/values.js';
import { okToRun } from '../../tasks/gate.js';
import { startOrGetRun, finishRun } from '../../runs/service.js';
import { reportFailure, getRules } from '../../processes/service.js';
import { response } from '../answers.js';
import { readOverrides, requireId } from '../readers.js';
import { mateRoute, NO_EXTRA_KEYS, S, type MateRoute } from '../route.js';

const runAnswer = { type: 'object', properties: { processKey: { type: 'string' }, runId: { type: 'integer' } } };

export const RUN_ROUTES: MateRoute[] = [
  mateRoute({
    method: 'GET',
    name: 'OkToRun',
    withProcess: true,
    summary: 'May Mates work the process now?',
    refusal: () => ({ gateOpen: false, notBlockedDate: false, stoppedByErrors: false, tasksAvailable: false, okToRun: false }),
    doc: {
      response: {
        type: 'object',
        properties: Object.fromEntries(
          ['gateOpen', 'notBlockedDate', 'stoppedByErrors', 'tasksAvailable', 'okToRun'].map((k) => [k, { type: 'boolean' }]),
        ),
      },
    },
    handler: async (ctx) => {
      const proc = await ctx.process();
      const a = await okToRun(ctx.services.db, proc, ctx.caller.now, ctx.caller.timeZone);
      return { body: { ...a, requestId: ctx.req.id } };
    },
  }),
  ...['StartOrGetRun', 'StartRun'].map((name) =>
    mateRoute({
      method: 'GET',
      name,
      withProcess: true,
      summary: "Open or resume the process's run",
      refusal: (pk) => ({ processKey: pk, runId: -1 }),
      doc: { response: runAnswer },
      handler: async (ctx) => {
        const proc = await ctx.process();
        const runId = await ctx.services.units.transaction((tx) => startOrGetRun(tx, ctx.caller, proc));
        return { body: { processKey: proc.processKey, runId, requestId: ctx.req.id } };
      },
    }),
  ),
  mateRoute({
    method: 'POST',
    name: 'FinishRun',
    withProcess: false,
    bodyType: 'object',
    bareId: 'runId',
    summary: 'Close a run',
    refusal: NO_EXTRA_KEYS,
    doc: {
      body: {
        type: 'object',
        properties: {
          runId: { type: 'integer' },
          overwriteSecondsSaved: { type: ['integer', 'null'] },
          overwriteEntries: { type: ['integer', 'null'] },
        },
        required: ['runId'],
      },
      response: S.response,
    },
    handler: async (ctx) => {
      const { body } = ctx;
      const runId = requireId(body, 'runId');
      const overrides = readOverrides(body);
      const message = await ctx.services.units.transaction((tx) => finishRun(tx, ctx.caller, runId, overrides));
      return response(ctx.req, message);
    },
  }),
  mateRoute({
    method: 'POST',
    name: 'Failure',
    withProcess: false,
    bodyType: 'object',
    summary: 'Report a failure outside task work',
    refusal: NO_EXTRA_KEYS,
    doc: {
      body: { type: 'object', properties: { processKey: { type: 'string' }, message: { type: 'string' } }, required: ['processKey'] },
      response: S.response,
    },
    handler: async (ctx) => {
      const { body } = ctx;
      const key = getKey(body, 'processKey');
      if (key === undefined || key === null || key === '') {
        throw new Refusal('missing_field', 'processKey is required', [
          { field: 'processKey', code: 'missing_field', message: 'processKey is required' },
        ]);
      }
      const processKey = readOptionalText(key, 'processKey') ?? '';
      const proc = await ctx.process(processKey); // the process before the other values (docs/mate-api.md §5)
      const message = readOptionalText(getKey(body, 'message'), 'message') ?? '';
      await ctx.services.units.transaction((tx) => reportFailure(tx, ctx.caller, proc, message));
      return response(ctx.req, `Failure of process ${proc.processKey} recorded`);
    },
  }),
  mateRoute({
    method: 'GET',
    name: 'GetRules',
    withProcess: true,
    summary: "The process's rules",
    refusal: (pk) => ({ processKey: pk }),
    doc: { response: { type: 'object', description: '{processKey, <rule name>: <typed value>, …}', additionalProperties: true } },
    handler: async (ctx) => ({ body: await getRules(ctx.services.db, await ctx.process()) }),
  }),
];
