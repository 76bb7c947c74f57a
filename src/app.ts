/**
 * createApp(config, deps) builds the Fastify application without listening; src/main.ts is the
 * only place that listens. Tests build it with a store of their own and an injected clock.
 */
import crypto from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Config } from './config.js';
import type { Store } from './db/store.js';
import { isMigrated } from './db/migrator.js';
import { systemClock, type Clock } from './lib/clock.js';
import { createMateAuth } from './auth/service.js';
import { tokenRoutes } from './auth/routes.js';
import { mateApi } from './mate-api/plugin.js';
import { startSweeper } from './tasks/sweeper.js';
import { createTaskBatchers, type TaskBatchers } from './tasks/batching.js';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';

export interface AppDeps {
  store: Store;
  clock?: Clock;
  /** run the lock sweeper on a timer (default true; tests call sweepOnce themselves) */
  sweeper?: boolean;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export async function createApp(config: Config, deps: AppDeps): Promise<FastifyInstance> {
  const clock = deps.clock ?? systemClock;
  const app = Fastify({
    logger: {
      level: config.logLevel,
      // Never log credentials: tokens, passwords and secrets stay out of the log (ASVS 16.2.5).
      redact: ['req.headers.authorization', 'req.headers.cookie', 'body.password', 'body.client_secret'],
    },
    bodyLimit: config.bodyLimit,
    // Trust the X-Request-Id of a proxy in front when it is well-formed; otherwise make one.
    requestIdHeader: 'x-request-id',
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : crypto.randomUUID();
    },
    routerOptions: { caseSensitive: false, ignoreTrailingSlash: true },
    // Requests still running at shutdown get this long; main.ts also bounds the whole shutdown.
    return503OnClosing: true,
    // a number of hops is accepted at run time (Fastify's type leaves it out)
    trustProxy: config.trustProxy as boolean | string,
  });

  app.decorate('store', deps.store);
  app.decorate('clock', clock);
  app.decorate('config', config);
  app.decorate('taskBatchers', createTaskBatchers(deps.store.db));
  app.decorate('mateAuth', await createMateAuth(config, deps.store, clock));

  app.addHook('onSend', async (req, reply) => {
    reply.header('x-request-id', req.id);
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'no-referrer');
    reply.header('x-frame-options', 'DENY');
  });

  await app.register(swagger, {
    openapi: {
      info: {
        title: 'Queuemate Mate API',
        version: '1',
        description: 'The Anymate-compatible API for Mates (robots). Get a token from POST /connect/token (form-encoded password grant), then call /api/<Endpoint>[/<ProcessKey>] with Authorization: Bearer <token>. Business refusals answer 200 with succeeded: false and a code; see docs/mate-api.md.',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } } },
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  await app.register(tokenRoutes);
  await app.register(mateApi, { prefix: '/api' });
  await app.register(mateApi, { prefix: '/apimate', hidden: true });

  if (deps.sweeper !== false) {
    const stop = startSweeper(deps.store, clock, config.lockSweepIntervalSeconds, app.log, () => app.mateAuth.throttle.prune());
    app.addHook('onClose', stop);
  }

  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (_req, reply) => {
    try {
      await deps.store.pool.query('SELECT 1');
    } catch {
      return reply.code(503).send({ status: 'unavailable', reason: 'database unreachable' });
    }
    if (!(await isMigrated(deps.store))) return reply.code(503).send({ status: 'unavailable', reason: 'database not migrated' });
    return { status: 'ready' };
  });

  return app;
}

declare module 'fastify' {
  interface FastifyInstance {
    store: Store;
    clock: Clock;
    config: Config;
    taskBatchers: TaskBatchers;
  }
}
