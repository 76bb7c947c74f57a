/** The shape of a people's API route: method, path, permission, schemas (validation and OpenAPI) and handler. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type, type TSchema } from 'typebox';
import type { Caller } from '../lib/caller.js';
import type { Person } from '../accounts/sessions.js';
import type { Services } from '../services.js';
import type { Permission } from './permissions.js';

export type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

export interface Ctx {
  req: FastifyRequest;
  reply: FastifyReply;
  services: Services;
  /** the signed-in person (every route but the public sign-in) */
  person: Person;
  caller: Caller;
  params: Record<string, any>;
  query: Record<string, any>;
  body: any;
}

const ANSWER = Symbol('answer');

/** An explicit status, body and headers (a handler may also return a bare body, or null for 204). */
export interface Answer {
  [ANSWER]: true;
  status: number;
  body?: unknown;
  headers?: Record<string, string | string[]>;
}

export function answer(status: number, body?: unknown, headers?: Record<string, string | string[]>): Answer {
  return { [ANSWER]: true, status, body, headers };
}

export function isAnswer(a: unknown): a is Answer {
  return typeof a === 'object' && a !== null && ANSWER in a;
}

export interface PeopleRoute {
  method: Method;
  /** below /v1, Fastify syntax (`/processes/:id`) */
  url: string;
  permission: Permission;
  summary: string;
  tag: string;
  /** an example curl command for docs/people-api.md (with $QM, $TOKEN placeholders) */
  curl: string;
  params?: TSchema;
  querystring?: TSchema;
  body?: TSchema;
  response?: Record<number, TSchema>;
  /** a route whose body is a file read as a stream (any content type), with its own size limit */
  raw?: { bodyLimit: number };
  /** the status of a success when the handler returns a bare body (default 200) */
  status?: number;
  handler(ctx: Ctx): Promise<Answer | object | null>;
}

// Schemas shared by the routes.
export const Id = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });
export const IdParams = Type.Object({ id: Id });
export const IsoDate = Type.String({ format: 'date-time' });
export const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
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
