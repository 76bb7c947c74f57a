/**
 * createApp(config, deps) builds the Fastify application without listening; src/main.ts is the
 * only place that listens. Tests build it with a store of their own and an injected clock.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Config } from './config.js';
import type { Store } from './db/store.js';
import { isMigrated } from './db/migrator.js';
import { systemClock, type Clock } from './lib/clock.js';
import { createServices, type Services } from './services.js';
import { requestIdFor } from './http/request-id.js';
import { securityHeaders } from './http/security-headers.js';
import { tokenRoutes } from './auth/routes.js';
import { mateApi } from './mate-api/plugin.js';
import { peopleApi } from './people-api/plugin.js';
import { startMaintenance } from './maintenance/scheduler.js';
import { serveWebApp } from './web/serve.js';

export interface AppDeps {
  store: Store;
  clock?: Clock;
  /** run the background jobs on a timer (default true; tests call sweepOnce themselves) */
  sweeper?: boolean;
  /** serve the built web app from this folder at / (src/web/serve.ts); none when left out */
  webDist?: string;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** the application's state (src/services.ts), for the routes */
    services: Services;
  }
}

export async function createApp(config: Config, deps: AppDeps): Promise<FastifyInstance> {
  const services = await createServices(config, deps.store, deps.clock ?? systemClock);
  const app = Fastify({
    logger: {
      level: config.logLevel,
      // Never log credentials: tokens, passwords and secrets stay out of the log (ASVS 16.2.5).
      redact: ['req.headers.authorization', 'req.headers.cookie', 'body.password', 'body.client_secret'],
    },
    bodyLimit: config.bodyLimit,
    // Trust the X-Request-Id of a proxy in front when it is well-formed; otherwise make one.
    requestIdHeader: 'x-request-id',
    genReqId: requestIdFor,
    routerOptions: { caseSensitive: false, ignoreTrailingSlash: true },
    // Requests still running at shutdown get this long; main.ts also bounds the whole shutdown.
    return503OnClosing: true,
    // a number of hops is accepted at run time (Fastify's type leaves it out)
    trustProxy: config.trustProxy as boolean | string,
  });
  app.decorate('services', services);
  app.addHook('onClose', async () => {
    services.close();
    // bulk jobs stop after their current chunk
    await services.bulkJobs.drain();
  });
  securityHeaders(app);

  await app.register(swagger, {
    openapi: {
      info: {
        title: 'Queuemate API',
        version: '1',
        description:
          "The Anymate-compatible API for Mates (robots). Get a token from POST /connect/token (form-encoded password grant), then call /api/<Endpoint>[/<ProcessKey>] with Authorization: Bearer <token>. Business refusals answer 200 with succeeded: false and a code; see docs/mate-api.md. The people's API (web app and scripts) lives under /v1: sign in with POST /v1/session or send a personal access token; see docs/people-api.md.",
      },
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
          personalToken: { type: 'http', scheme: 'bearer', description: "A personal access token qmp_… (people's API, /v1)" },
          sessionCookie: {
            type: 'apiKey',
            in: 'cookie',
            name: 'qm_session',
            description: 'The web session; writes also need X-CSRF-Token',
          },
        },
      },
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  await app.register(tokenRoutes);
  await app.register(mateApi, { prefix: '/api', services });
  await app.register(mateApi, { prefix: '/apimate', services, hidden: true });
  await app.register(peopleApi, { prefix: '/v1', services });

  if (deps.sweeper !== false) {
    const stop = startMaintenance(
      { db: services.db, units: services.units, clock: services.clock, throttle: services.auth.throttle },
      config.lockSweepIntervalSeconds,
      app.log,
    );
    app.addHook('onClose', stop);
  }

  app.get('/healthz', async () => ({ status: 'ok' }));

  if (deps.webDist) await serveWebApp(app, { distDir: deps.webDist, hsts: config.publicUrl.startsWith('https:') });

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
