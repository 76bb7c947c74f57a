/**
 * GET /metrics in the Prometheus text format (docs/events.md, "Metrics"). Off with
 * QUEUEMATE_METRICS=off (404, as if absent); with QUEUEMATE_METRICS_TOKEN set it needs
 * `Authorization: Bearer <token>` (401 otherwise), compared in constant time.
 */
import type { FastifyInstance } from 'fastify';
import type { Services } from '../services.js';
import { constantTimeEqual } from '../lib/secrets.js';

/**
 * `collect`: a server process of `start --processes N` answers with every process's metrics,
 * gathered by the primary (src/cluster.ts), rather than its own.
 */
export async function metricsRoute(app: FastifyInstance, opts: { services: Services; collect?: () => Promise<string> }): Promise<void> {
  const { config, metrics } = opts.services;
  if (config.metrics === 'off') return;
  app.get('/metrics', { schema: { hide: true } }, async (req, reply) => {
    if (config.metricsToken) {
      const given = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1] ?? '';
      if (!constantTimeEqual(given, config.metricsToken)) {
        return reply
          .code(401)
          .header('www-authenticate', 'Bearer realm="metrics"')
          .send({ code: 'unauthenticated', message: 'Send Authorization: Bearer <QUEUEMATE_METRICS_TOKEN>', requestId: req.id });
      }
    }
    let text: string;
    try {
      text = opts.collect ? await opts.collect() : await metrics.registry.metrics();
    } catch (err) {
      req.log.warn({ err }, "collecting the server processes' metrics failed");
      return reply
        .code(503)
        .header('retry-after', '1')
        .send({ code: 'unavailable', message: 'Metrics could not be collected; try again', requestId: req.id });
    }
    return reply.header('content-type', metrics.registry.contentType).header('cache-control', 'no-store').send(text);
  });
}
