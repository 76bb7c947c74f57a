/**
 * createApp(config, deps) builds the Fastify application without listening; src/main.ts is the
 * only place that listens. Tests build it with a store of their own and an injected clock.
 */
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Config } from './config.js';
import type { Store } from './db/store.js';
import { isMigrated } from './db/migrator.js';
import { systemClock, type Clock } from './lib/clock.js';
import { VERSION } from './lib/package.js';
import { createServices, type Services } from './services.js';
import { requestIdFor } from './http/request-id.js';
import { ConnectionGuard } from './http/connections.js';
import { MAX_PATH_PARAM, routerRefusal } from './http/router-errors.js';
import { securityHeaders } from './http/security-headers.js';
import { errorSerializer, requestSerializer } from './http/log.js';
import { tokenRoutes } from './mate-api/routes/token.js';
import { mateApi } from './mate-api/plugin.js';
import { peopleApi } from './people-api/plugin.js';
import { JobRunner } from './maintenance/runner.js';
import { addBackgroundJobs } from './maintenance/jobs.js';
import { LOCK_SWEEP } from './maintenance/lock-sweep.js';
import { WEBHOOK_DISPATCH } from './maintenance/webhook-dispatch.js';
import { EVENT_PURGE } from './maintenance/outbox-retention.js';
import { metricsRoute } from './http/metrics.js';
import { outboxBacklog } from './metrics/store.js';
import { serveWebApp } from './web/serve.js';
import type { ClusterLink } from './cluster.js';

export interface AppDeps {
  store: Store;
  clock?: Clock;
  /** run the background jobs (src/maintenance/jobs.ts) on their timers and triggers (default true; tests call sweepOnce themselves) */
  sweeper?: boolean;
  /** where the log lines go (default stdout; tests read them) */
  logStream?: NodeJS.WritableStream;
  /** serve the built web app from this folder at / (src/web/serve.ts); none when left out */
  webDist?: string;
  /** a server process of `start --processes N`: /metrics and /readyz answer for all of them (src/cluster.ts) */
  cluster?: ClusterLink;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** the application's state (src/services.ts), for the routes */
    services: Services;
    /** this process's client connections and the cap on them (src/http/connections.ts) */
    connections: ConnectionGuard;
  }
}

/**
 * The Mate API's task routes, called once or twice per task by every robot: their answered
 * requests are logged at debug, not info (a log line per call cost about 8 % of the server's CPU
 * per request at M = 16, bench/README.md). Refusals with a 4xx status and errors stay at info.
 */
const HOT_ROUTE = /^\/api(mate)?\/(TakeNext|TakeMany|Solved|Manual|Error|Retry|CreateTask|CreateAndTakeTask|ExtendLock|UpdateTask)(\/|$)/;

/**
 * Fastify's request logging with one line per request (docs/operations.md "Logs"): none when it
 * comes in; when it completes, its method, URL, status and time, at debug for the hot routes'
 * answers below 400. Errors are logged as Fastify logs them.
 */
class RequestLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, req: FastifyRequest, reply: FastifyReply): void {
    if (error) return super.requestCompleted(error, req, reply);
    const level = reply.statusCode < 400 && HOT_ROUTE.test(req.routeOptions.url ?? '') ? 'debug' : 'info';
    reply.log[level]({ req, res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}

export async function createApp(config: Config, deps: AppDeps): Promise<FastifyInstance> {
  const services = await createServices(config, deps.store, deps.clock ?? systemClock);
  const app = Fastify({
    // one line per request, when it completes, instead of two (RequestLog)
    logController: new RequestLog(),
    logger: {
      level: config.logLevel,
      // Never log credentials: tokens, passwords and secrets stay out of the log (ASVS 16.2.5).
      redact: ['req.headers.authorization', 'req.headers.cookie', 'body.password', 'body.client_secret'],
      // no query value, no row data of a database error (src/http/log.ts)
      serializers: { req: requestSerializer as never, err: errorSerializer as never },
      ...(deps.logStream ? { stream: deps.logStream } : {}),
    },
    bodyLimit: config.bodyLimit,
    // Slow clients (slowloris, a body trickled in): the whole request within requestTimeoutMs, the
    // headers within headersTimeoutMs, checked every second; idle keep-alive connections close after
    // 72 s, or sooner when the connection cap nears (src/http/connections.ts).
    requestTimeout: config.requestTimeoutMs,
    http: {
      headersTimeout: Math.min(config.headersTimeoutMs, config.requestTimeoutMs),
      requestTimeout: config.requestTimeoutMs,
      connectionsCheckingInterval: 1000,
    },
    // Trust the X-Request-Id of a proxy in front when it is well-formed; otherwise make one. The
    // header is read by genReqId only: Fastify's requestIdHeader would take any value as sent.
    requestIdHeader: false,
    genReqId: requestIdFor,
    // A ProcessKey longer than any process's is looked up (and not found) rather than answered 414
    // by the router; the URL as a whole is bounded by Node's header size limit.
    routerOptions: { caseSensitive: false, ignoreTrailingSlash: true, maxParamLength: MAX_PATH_PARAM },
    // The router's own refusals (a path that is not valid percent-encoding) in each surface's shape.
    frameworkErrors: routerRefusal,
    // Requests still running at shutdown get this long; main.ts also bounds the whole shutdown.
    return503OnClosing: true,
    // a number of hops is accepted at run time (Fastify's type leaves it out)
    trustProxy: config.trustProxy as boolean | string,
  });
  // the connection cap: idle and header-less connections make room for new clients (src/http/connections.ts)
  const connections = new ConnectionGuard(app.server, {
    maxConnections: config.maxConnections,
    onClose: (reason) => services.metrics.connectionsClosed.inc({ reason }),
  });
  services.metrics.connectionCounts = () => connections.counts();
  app.decorate('connections', connections);
  app.decorate('services', services);
  // the background jobs (src/maintenance): the runner owns their timers, last runs and shutdown
  const jobs = addBackgroundJobs(new JobRunner({ clock: services.clock, log: app.log }), {
    db: services.db,
    units: services.units,
    notifier: services.notifier,
    throttle: services.auth.throttle,
    bulkJobs: services.bulkJobs,
    events: services.events,
    store: deps.store,
    lockSweepIntervalSeconds: config.lockSweepIntervalSeconds,
    eventRetentionHours: config.eventRetentionHours,
  });
  if (deps.sweeper !== false) app.addHook('onReady', async () => jobs.start());
  app.addHook('onClose', async () => {
    // the jobs first: no sweep claims a bulk job, no dispatch starts, once the rest is closing
    await jobs.stop();
    await services.close();
    // bulk jobs stop after their current chunk and let go of their lease (another process resumes them)
    await services.bulkJobs.drain();
  });
  services.events.reportError = (err, what) => app.log.warn({ err }, `${what} failed; it runs again shortly`);
  // live streams never end on their own: end them so that shutdown does not wait for them
  app.addHook('preClose', async () => {
    for (const end of [...services.events.streams]) end();
  });
  securityHeaders(app);
  // An acknowledged change is durable: on the embedded store the answer to a request that may have
  // written waits for the write-ahead log flush covering it (db/embedded-flush.ts). GET and HEAD
  // answers never wait: they write nothing worth a flush (a session's last-seen time at most).
  if (deps.store.flusher) {
    const store = deps.store;
    app.addHook('onSend', async (req) => {
      if (req.method !== 'GET' && req.method !== 'HEAD') await store.durable();
    });
  }
  // requests by method, route template (never the raw URL: bounded label values) and status
  app.addHook('onResponse', async (req, reply) => {
    services.metrics.httpDuration.observe(
      { method: req.method, route: req.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });

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

  await app.register(metricsRoute, { services, collect: deps.cluster ? () => deps.cluster!.metrics() : undefined });

  // the version lets a rolling upgrade be watched process by process (docs/deployment.md)
  app.get('/healthz', async () => ({ status: 'ok', version: VERSION }));

  if (deps.webDist) await serveWebApp(app, { distDir: deps.webDist, hsts: config.publicUrl.startsWith('https:') });

  app.get('/readyz', async (_req, reply) => {
    try {
      await deps.store.pool.query('SELECT 1');
    } catch {
      return reply.code(503).send({ status: 'unavailable', reason: 'database unreachable' });
    }
    if (!(await isMigrated(deps.store))) return reply.code(503).send({ status: 'unavailable', reason: 'database not migrated' });
    // informative, not a readiness condition: a backlog is the endpoints' problem, not this process's
    const backlog = await outboxBacklog(services.db, services.clock.now());
    // `start --processes N`: how many of the N listen (informative too: the others serve meanwhile)
    const processes = deps.cluster ? await deps.cluster.status().catch(() => null) : undefined;
    return {
      status: 'ready',
      ...(processes !== undefined ? { processes } : {}),
      events: {
        heldBack: backlog.heldBack,
        heldBackSeconds: Math.round(backlog.heldBackSeconds),
        pendingDeliveries: backlog.pendingDeliveries,
        oldestPendingDeliverySeconds: Math.round(backlog.oldestPendingSeconds),
        dispatcherLastRunAt: jobs.lastRunAt(WEBHOOK_DISPATCH)?.toISOString() ?? null,
        purgeLastRunAt: jobs.lastRunAt(EVENT_PURGE)?.toISOString() ?? null,
      },
      sweeperLastRunAt: jobs.lastRunAt(LOCK_SWEEP)?.toISOString() ?? null,
      // every background job's last run and last failure (docs/operations.md, "Background jobs")
      jobs: jobs.status(),
    };
  });

  return app;
}
