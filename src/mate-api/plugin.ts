/**
 * The Mate API: the Anymate wire format turned into calls on the domain services. Registered
 * under /api and its legacy alias /apimate. Paths match case-insensitively, with or without one
 * trailing slash (router options in app.ts). Check order (docs/mate-api.md §5): route, token,
 * content type and size, JSON syntax, process, values, state.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Refusal } from '../lib/errors.js';
import type { Caller } from '../lib/caller.js';
import { authenticateAuthorization, type MateContext } from '../auth/authenticate.js';
import type { ProcessDef } from '../processes/store.js';
import { strictJsonBodies } from '../http/json-body.js';
import { asRefusal, headerCount } from '../http/errors.js';
import type { Services } from '../services.js';
import { refusalAnswer, send } from './answers.js';
import { checkTopLevel, type Body } from './readers.js';
import type { Ctx, MateRoute } from './route.js';
import { RUN_ROUTES } from './routes/runs.js';
import { TAKE_ROUTES } from './routes/take.js';
import { CREATE_ROUTES } from './routes/create.js';
import { HAND_BACK_ROUTES } from './routes/hand-back.js';

export const MATE_ROUTES: MateRoute[] = [...RUN_ROUTES, ...TAKE_ROUTES, ...CREATE_ROUTES, ...HAND_BACK_ROUTES];

declare module 'fastify' {
  interface FastifyRequest {
    mate?: MateContext;
    /** ends this call's foreground turn (src/db/turns.ts) */
    leaveTurn?: () => void;
  }
  interface FastifyContextConfig {
    mateRoute?: MateRoute;
  }
}

function decodedProcessKey(req: FastifyRequest): string {
  const p = (req.params as Record<string, string> | undefined)?.processKey;
  return typeof p === 'string' ? p : '';
}

export async function mateApi(app: FastifyInstance, opts: { services: Services; hidden?: boolean }): Promise<void> {
  const { services } = opts;
  strictJsonBodies(app);
  // Bodies are checked by the handlers (lenient input); schemas only document the API.
  app.setValidatorCompiler(() => () => true);
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  // robots first: on the embedded store, bulk jobs and exports wait while a Mate's call is in flight
  app.addHook('onRequest', async (req) => {
    req.leaveTurn = services.turns.enter();
  });
  app.addHook('onResponse', async (req) => req.leaveTurn?.());
  app.addHook('onRequestAbort', async (req) => req.leaveTurn?.());

  // the token, before the content type and size are looked at
  app.addHook('onRequest', async (req) => {
    if (req.is404) return;
    // Node keeps the first of repeated Authorization headers; an ambiguous request is refused
    if (headerCount(req, 'authorization') > 1) throw new Refusal('invalid_token', 'Send one Authorization header, not several');
    req.mate = await authenticateAuthorization(services.auth, req.headers.authorization);
  });

  const routeNotFound = (req: FastifyRequest, reply: FastifyReply) =>
    send(reply, 404, {
      succeeded: false,
      message: `No Mate API endpoint ${req.method} ${req.url.split('?')[0]}`,
      code: 'route_not_found',
      requestId: req.id,
    });
  app.setNotFoundHandler(routeNotFound);

  app.setErrorHandler((err, req, reply) => {
    // an unknown route is answered as such even when its body could not be read (route comes first, docs/mate-api.md §5)
    if (req.is404) return routeNotFound(req, reply);
    const refusal = asRefusal(err, req, services.config.bodyLimit);
    const route = req.routeOptions?.config?.mateRoute;
    const answer = refusalAnswer(route ? route.refusal(decodedProcessKey(req)) : {}, req, refusal);
    return send(reply, answer.status, answer.body, answer.headers);
  });

  for (const route of MATE_ROUTES) {
    app.route({
      method: route.method,
      // No HEAD twin for the GET routes: a HEAD would run TakeNext or StartRun and drop the answer.
      // HEAD matches no route and is answered 404 route_not_found (docs/mate-api.md "Endpoints").
      exposeHeadRoute: false,
      url: route.withProcess ? `/${route.name}/:processKey` : `/${route.name}`,
      config: { mateRoute: route },
      schema: openApiSchema(route, opts.hidden) as never,
      handler: async (req, reply) => {
        const mate = req.mate!;
        const caller: Caller = {
          tenantId: mate.tenantId,
          timeZone: mate.timeZone,
          numberFormat: mate.numberFormat,
          actor: { type: 'mate', id: mate.mateId, name: mate.mateName },
          requestId: req.id,
          now: services.clock.now(),
        };
        let body: Body | unknown[] | undefined;
        if (route.method === 'POST') {
          if (req.body === undefined) {
            throw req.headers['content-type']
              ? new Refusal('invalid_body', 'The body is empty; a JSON value is required')
              : new Refusal('unsupported_media_type', 'Content-Type must be application/json');
          }
          body = checkTopLevel(route.name, route.bodyType, req.body, route.bareId);
        }
        const processKey = decodedProcessKey(req);
        let loaded: ProcessDef | null = null;
        const ctx: Ctx<typeof body> = {
          req,
          services,
          mate,
          caller,
          processKey,
          body,
          refusalKey: () => loaded?.processKey ?? processKey,
          refused: (refusal) => refusalAnswer(route.refusal(processKey), req, refusal),
          async process(key = processKey) {
            if (loaded && key === processKey) return loaded;
            const p = await services.processes.byKey(mate.tenantId, key);
            if (!p) throw new Refusal('process_not_found', `No process with ProcessKey "${key}"`);
            if (key === processKey) loaded = p;
            return p;
          },
        };
        // a write at most every 10 s per Mate (accounts/contact.ts), so awaiting it costs next to nothing
        await services.mateContact
          .touch(mate.tenantId, mate.mateId, caller.now)
          .catch((err) => req.log.warn({ err }, "could not record the Mate's last contact"));
        const answer = await route.handler(ctx);
        return send(reply, answer.status ?? 200, answer.body, answer.headers);
      },
    });
  }
}

function openApiSchema(route: MateRoute, hidden = false): Record<string, unknown> {
  return {
    summary: route.summary,
    tags: ['Mate API'],
    hide: hidden,
    security: [{ bearer: [] }],
    ...(route.withProcess
      ? {
          params: { type: 'object', properties: { processKey: { type: 'string', description: 'ProcessKey, matched case-insensitively' } } },
        }
      : {}),
    ...(route.doc.body && route.method === 'POST' ? { body: route.doc.body } : {}),
    response: { 200: route.doc.response },
  };
}
