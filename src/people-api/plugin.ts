/**
 * The people's API under /v1 (docs/people-api.md): JSON read strictly, bodies and queries checked
 * against each route's TypeBox schema, every route guarded by its permission (permissions.ts),
 * every refusal answered `{code, message, requestId, errors?}` with its status from status.ts.
 * Check order: route, credentials (and CSRF), permission, content type, body, then the handler.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Compile } from 'typebox/compile';
import type { TSchema } from 'typebox';
import type { TLocalizedValidationError } from 'typebox/error';
import { Refusal, type ErrorCode, type FieldProblem } from '../lib/errors.js';
import type { Caller } from '../lib/caller.js';
import type { Role } from '../accounts/service.js';
import type { Person } from '../accounts/sessions.js';
import { strictJsonBodies } from '../http/json-body.js';
import { asRefusal, RETRY_AFTER } from '../http/errors.js';
import type { Services } from '../services.js';
import { PEOPLE_API_STATUS } from './status.js';
import { allows, isPublic, rolesOf, type Permission } from './permissions.js';
import { authenticatePerson } from './authenticate.js';
import { isAnswer, type PeopleRoute } from './route.js';
import { SESSION_ROUTES } from './routes/session.js';
import { ME_ROUTES } from './routes/me.js';
import { ADMIN_ROUTES } from './routes/admin.js';
import { EVENT_ROUTES } from './routes/events.js';
import { WEBHOOK_ROUTES } from './routes/webhooks.js';
import { PROCESS_ROUTES } from './routes/processes.js';
import { TASK_ROUTES } from './routes/tasks.js';
import { BULK_ROUTES } from './routes/bulk.js';
import { INSIGHT_ROUTES } from './routes/insights.js';

export const PEOPLE_ROUTES: PeopleRoute[] = [
  ...SESSION_ROUTES,
  ...ME_ROUTES,
  ...ADMIN_ROUTES,
  ...PROCESS_ROUTES,
  ...TASK_ROUTES,
  ...BULK_ROUTES,
  ...INSIGHT_ROUTES,
  ...EVENT_ROUTES,
  ...WEBHOOK_ROUTES,
];

declare module 'fastify' {
  interface FastifyRequest {
    /** the signed-in person on /v1 */
    person?: Person;
    /** their role */
    role?: Role;
    /** the Caller domain operations take */
    caller?: Caller;
    /** the session's secret token when the cookie authenticated the request */
    sessionToken?: string | null;
  }
  interface FastifyContextConfig {
    permission?: Permission;
  }
}

export function refusalBody(req: FastifyRequest, r: Refusal): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(r.details)) if (k !== 'retryAfterSeconds') body[k] = v;
  Object.assign(body, { code: r.code, message: r.message, requestId: req.id });
  if (r.problems.length) {
    body.errors = r.problems.map((p) => ({
      ...(p.field !== undefined ? { field: p.field } : {}),
      ...(p.index !== undefined ? { index: p.index } : {}),
      code: p.code,
      message: p.message,
    }));
  }
  return body;
}

/** TypeBox errors → the answer's `errors`. */
function schemaRefusal(part: string, errors: TLocalizedValidationError[]): Refusal {
  const problems: FieldProblem[] = [];
  // a union of literals reports each literal, then anyOf: one problem listing the allowed values
  const allowed = new Map<string, unknown[]>();
  for (const e of errors)
    if (e.keyword === 'const') allowed.set(e.instancePath, [...(allowed.get(e.instancePath) ?? []), e.params.allowedValue]);
  const seen = new Set<string>();
  for (const e of errors) {
    if (e.keyword === 'const') continue;
    if (e.keyword === 'anyOf' && allowed.has(e.instancePath)) {
      e.message = `must be one of ${allowed
        .get(e.instancePath)!
        .map((v) => JSON.stringify(v))
        .join(', ')}`;
    }
    // one problem per value (required and additionalProperties name keys of their own)
    if (e.keyword !== 'required' && e.keyword !== 'additionalProperties' && e.keyword !== 'boolean') {
      if (seen.has(e.instancePath)) continue;
      seen.add(e.instancePath);
    }
    if (e.keyword === 'boolean') continue; // "schema is false", repeated by additionalProperties
    const field = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
    if (e.keyword === 'required') {
      for (const m of e.params.requiredProperties) {
        const f = field ? `${field}.${m}` : m;
        problems.push({ field: f, code: 'missing_field', message: `${f} is required` });
      }
      continue;
    }
    if (e.keyword === 'additionalProperties') {
      for (const x of e.params.additionalProperties) {
        const f = field ? `${field}.${x}` : x;
        problems.push({ field: f, code: 'unknown_field', message: `${f} is not a known ${part} key` });
      }
      continue;
    }
    if (field === '') {
      problems.push({ code: part === 'body' ? 'invalid_body' : 'invalid_field', message: `The ${part} ${e.message}` });
      continue;
    }
    problems.push({ field, code: 'invalid_field', message: `${field} ${e.message}` });
  }
  if (problems.length === 0)
    problems.push({ code: part === 'body' ? 'invalid_body' : 'invalid_field', message: `The ${part} is not valid` });
  const first = problems[0];
  const code: ErrorCode = part === 'body' && first.code === 'invalid_body' ? 'invalid_body' : first.code;
  return new Refusal(code, first.message, problems.slice(0, 100));
}

function validatorFor(schema: TSchema, part: string) {
  const v = Compile(schema);
  return (data: unknown) => {
    // no body at all is read as {}: the schema then names each missing key
    if (part === 'body' && (data === undefined || data === null)) data = {};
    const value = part === 'body' ? data : v.Convert(data);
    if (v.Check(value)) return { value };
    return { error: schemaRefusal(part, v.Errors(value)) };
  };
}

export async function peopleApi(app: FastifyInstance, opts: { services: Services }): Promise<void> {
  const { services } = opts;
  strictJsonBodies(app, { allowEmpty: true });
  app.setValidatorCompiler(({ schema, httpPart }) => validatorFor(schema as TSchema, httpPart ?? 'body') as never);
  // answers are built by the handlers; the response schemas document them
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  app.addHook('onRoute', (route) => {
    const permission = (route.config as { permission?: Permission } | undefined)?.permission;
    if (!permission) throw new Error(`The /v1 route ${route.method} ${route.url} declares no permission (src/people-api/permissions.ts)`);
  });

  // credentials, CSRF and permission, before the body is read
  app.addHook('onRequest', async (req) => {
    if (req.is404) return;
    const permission = req.routeOptions.config.permission!;
    if (isPublic(permission)) return;
    const auth = await authenticatePerson(services, req);
    if (!auth) throw new Refusal('unauthenticated', 'Sign in first (POST /v1/session) or send Authorization: Bearer qmp_<token>');
    const { person } = auth;
    req.person = person;
    req.role = person.user.role;
    req.sessionToken = auth.sessionToken;
    req.caller = {
      tenantId: person.tenant.id,
      timeZone: person.tenant.timeZone,
      numberFormat: person.tenant.numberFormat,
      actor: { type: 'user', id: person.user.id, name: person.user.name },
      requestId: req.id,
      now: services.clock.now(),
    };
    if (!allows(permission, person.user.role)) {
      throw new Refusal('forbidden', `The ${person.user.role} role may not do this (needs ${rolesOf(permission)})`);
    }
  });

  const routeNotFound = (req: FastifyRequest, reply: FastifyReply) =>
    reply
      .code(404)
      .header('cache-control', 'no-store')
      .send({ code: 'route_not_found', message: `No route ${req.method} ${req.url.split('?')[0]}`, requestId: req.id });
  app.setNotFoundHandler(routeNotFound);

  app.setErrorHandler((err, req, reply) => {
    if (req.is404) return routeNotFound(req, reply);
    const refusal = asRefusal(err, req, services.config.bodyLimit);
    const headers: Record<string, string> = { 'cache-control': 'no-store' };
    const retryAfter = refusal.details.retryAfterSeconds ?? RETRY_AFTER[refusal.code];
    if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
    if (refusal.code === 'unauthenticated') headers['www-authenticate'] = 'Bearer realm="queuemate"';
    return reply.code(PEOPLE_API_STATUS[refusal.code]).headers(headers).send(refusalBody(req, refusal));
  });

  const register = (scope: FastifyInstance, route: PeopleRoute) =>
    scope.route({
      method: route.method,
      url: route.url,
      config: { permission: route.permission },
      schema: {
        summary: route.summary,
        description: `Permission \`${route.permission}\`: ${rolesOf(route.permission)}.`,
        tags: [`People: ${route.tag}`],
        ...(isPublic(route.permission) ? { security: [] } : { security: [{ personalToken: [] }, { sessionCookie: [] }] }),
        ...(route.params ? { params: route.params } : {}),
        ...(route.querystring ? { querystring: route.querystring } : {}),
        ...(route.body ? { body: route.body } : {}),
        ...(route.response ? { response: route.response } : {}),
      } as never,
      handler: async (req, reply) => {
        if (!route.raw && route.body === undefined && req.body !== undefined && req.body !== null) {
          throw new Refusal('invalid_body', `${route.method} /v1${route.url} takes no body`);
        }
        const answer = await route.handler({
          req,
          reply,
          services,
          person: req.person!,
          caller: req.caller!,
          // what the route's schemas validated (validatorFor): the Static its handler is typed with
          params: req.params ?? {},
          query: req.query ?? {},
          body: route.body ? req.body : undefined,
        });
        if (route.stream) return reply; // hijacked: the handler writes the answer
        reply.header('cache-control', 'no-store');
        if (answer === null) return reply.code(204).send();
        if (isAnswer(answer)) {
          if (answer.headers) reply.headers(answer.headers);
          reply.code(answer.status);
          return answer.body === undefined ? reply.send() : reply.send(answer.body);
        }
        return reply.code(route.status ?? 200).send(answer);
      },
    });

  for (const route of PEOPLE_ROUTES) if (!route.raw) register(app, route);
  // file uploads: the body is handed to the handler as a stream, whatever its type; the handler
  // bounds its size (route.raw.bodyLimit), the JSON routes keep the server's body limit
  await app.register(async (uploads) => {
    uploads.removeAllContentTypeParsers();
    uploads.addContentTypeParser('*', (_req, payload, done) => done(null, payload));
    for (const route of PEOPLE_ROUTES) if (route.raw) register(uploads, route);
  });
}
