/**
 * The shape of a people's API route: method, path, permission, schemas (validation and OpenAPI) and
 * handler. `defineRoute` types the handler from the route's schemas: its `params`, `query` and `body`
 * are the `Static` of the schemas the plugin validated them against, and what it returns is checked
 * against the route's success answer schema.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type, type Static, type TLiteral, type TSchema, type TObjectOptions, type TUnion } from 'typebox';
import type { Readable } from 'node:stream';
import type { Caller } from '../lib/caller.js';
import { Refusal } from '../lib/errors.js';
import type { Person } from '../accounts/sessions.js';
import { loadProcessById, type ProcessDef } from '../processes/store.js';
import type { Services } from '../services.js';
import type { Permission } from './permissions.js';

export type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

/** What a handler is given: the request as its route's schemas parsed it. */
export interface Ctx<Params = unknown, Query = unknown, Body = unknown> {
  req: FastifyRequest;
  reply: FastifyReply;
  services: Services;
  /** the signed-in person (every route but the public sign-in) */
  person: Person;
  caller: Caller;
  params: Params;
  query: Query;
  body: Body;
}

const ANSWER = Symbol('answer');

/** An explicit status, body and headers (a handler may also return a bare body, or null for 204). */
export interface Answer<Body = unknown> {
  [ANSWER]: true;
  status: number;
  body?: Body;
  headers?: Record<string, string | string[]>;
}

export function answer<Body = undefined>(status: number, body?: Body, headers?: Record<string, string | string[]>): Answer<Body> {
  return { [ANSWER]: true, status, body, headers };
}

export function isAnswer(a: unknown): a is Answer {
  return typeof a === 'object' && a !== null && ANSWER in a;
}

/** The answer schemas of a route by status. */
export type Responses = Record<number, TSchema>;
type SuccessStatus = 200 | 201 | 202 | 204;
/** No keys: what a handler may read of a part its route states no schema for. */
type Nothing = Record<never, never>;
/** The Static of a schema the route gives, else `Otherwise`. */
type StaticOr<S, Otherwise> = S extends TSchema ? Static<S> : Otherwise;
/** A body the route's success schemas (2xx) describe; anything when it states none. */
type SuccessBody<R> = R extends Responses
  ? [keyof R & SuccessStatus] extends [never]
    ? never
    : Static<R[keyof R & SuccessStatus]>
  : unknown;
/** What a handler returns: a success body, an Answer carrying one (or none), or null for 204. */
export type Reply<Body> = Body | Answer<Body> | Answer<undefined> | null;

/** The parts of a route the plugin, the docs (reference.ts) and the tests read. */
interface RouteInfo {
  method: Method;
  /** below /v1, Fastify syntax (`/processes/:id`) */
  url: string;
  permission: Permission;
  summary: string;
  tag: string;
  /** an example curl command for docs/people-api.md (with $QM, $TOKEN placeholders) */
  curl: string;
  /** the handler writes a long-lived answer itself (server-sent events): the plugin sends nothing after it */
  stream?: true;
  /** a route whose body is a file read as a stream (any content type), with its own size limit: `req.body` */
  raw?: { bodyLimit: number };
  /** the status of a success when the handler returns a bare body (default 200) */
  status?: number;
}

/** A route as declared: its schemas type its handler. */
export interface RouteDef<
  P extends TSchema | undefined,
  Q extends TSchema | undefined,
  B extends TSchema | undefined,
  R extends Responses | undefined,
> extends RouteInfo {
  params?: P;
  querystring?: Q;
  body?: B;
  response?: R;
  handler(ctx: Ctx<StaticOr<P, Nothing>, StaticOr<Q, Nothing>, StaticOr<B, undefined>>): Promise<Reply<SuccessBody<R>>>;
}

/** A route of the table: its handler takes the request the plugin validated against its schemas. */
export interface PeopleRoute extends RouteInfo {
  params?: TSchema;
  querystring?: TSchema;
  body?: TSchema;
  response?: Responses;
  handler(ctx: Ctx): Promise<unknown>;
}

/** Declares a route: `params`, `query` and `body` of its handler are the Static of its schemas, its answer that of its success schema. */
export function defineRoute<
  P extends TSchema | undefined = undefined,
  Q extends TSchema | undefined = undefined,
  B extends TSchema | undefined = undefined,
  R extends Responses | undefined = undefined,
>(route: RouteDef<P, Q, B, R>): PeopleRoute {
  // sound because the plugin checks params, query and body against these very schemas before the
  // handler runs (validatorFor, plugin.ts): a request that does not fit never reaches it
  return route;
}

/** The process with this id, or refused with process_not_found (another tenant's is answered the same). */
export async function processFor(services: Services, caller: Caller, id: number): Promise<ProcessDef> {
  const proc = await loadProcessById(services.db, caller.tenantId, id);
  if (!proc) throw new Refusal('process_not_found', `No process ${id}`);
  return proc;
}

// Schemas shared by the routes.
export const Id = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });
export const IdParams = Type.Object({ id: Id });
/** A date-time in an answer: a Date is written as its ISO 8601 text (JSON.stringify). */
export const IsoDate = Type.Unsafe<string | Date>(Type.String({ format: 'date-time' }));
/** A CSV answer: the handler streams it. */
export const CsvStream = Type.Unsafe<Readable>(Type.String({ description: 'text/csv' }));
export const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
/** An object of any keys (`additionalProperties: true` in `options`), typed as one (TypeBox types an empty Object as `object`). */
export const FreeObject = (options: TObjectOptions) => Type.Unsafe<Record<string, unknown>>(Type.Object({}, options));
/** One of these texts (`anyOf` of `const`s), typed as their union (a mapped array alone would be typed never). */
export const OneOf = <T extends string>(values: readonly T[]) => Type.Union(values.map((v) => Type.Literal(v))) as TUnion<[TLiteral<T>]>;
export const ErrorBody = Type.Object(
  {
    code: Type.String(),
    message: Type.String(),
    requestId: Type.String(),
    errors: Type.Optional(
      Type.Array(
        Type.Object({
          field: Type.Optional(Type.String()),
          index: Type.Optional(Type.Integer()),
          code: Type.String(),
          message: Type.String(),
        }),
      ),
    ),
  },
  { additionalProperties: true },
);
export const NoContent = Type.Null({ description: 'No content' });
