/**
 * The router's own refusals, answered in the Mate API's shape (docs/mate-api.md §5) instead of the
 * framework's: a path that is not valid percent-encoding (`%C3`, `%zz`) matches no route, so it is
 * 404 `route_not_found` with a `requestId`, like any other path the server does not serve.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * Longest path segment the router hands to a route: more than any request line Node accepts (its
 * header size limit, 16 KiB unless --max-http-header-size raises it), so a ProcessKey of any
 * length reaches the route and is answered `process_not_found` there.
 */
export const MAX_PATH_PARAM = 1024 * 1024;

export function routerRefusal(err: Error & { code?: string }, req: FastifyRequest, reply: FastifyReply): void {
  const path = req.raw.url?.split('?')[0] ?? '';
  const body =
    err.code === 'FST_ERR_BAD_URL' || err.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? {
          succeeded: false,
          message: `No endpoint ${req.method} ${path.slice(0, 200)} (the path is not valid percent-encoding, or too long)`,
          code: 'route_not_found',
          requestId: req.id,
        }
      : { succeeded: false, message: `An unexpected error occurred (request ${req.id})`, code: 'internal_error', requestId: req.id };
  if (body.code === 'internal_error') req.log.error({ err }, 'router failed');
  void reply
    .code(body.code === 'route_not_found' ? 404 : 500)
    .header('cache-control', 'no-store')
    .header('x-request-id', req.id)
    .header('content-type', 'application/json; charset=utf-8')
    .send(JSON.stringify(body));
}
