/** Headers every answer carries, whatever the surface. */
import type { FastifyInstance } from 'fastify';

export function securityHeaders(app: FastifyInstance): void {
  app.addHook('onSend', async (req, reply) => {
    reply.header('x-request-id', req.id);
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'no-referrer');
    reply.header('x-frame-options', 'DENY');
  });
}
