/** The shape of a Mate API route: its wire name, its refusal shape, its handler and its OpenAPI description. */
import type { FastifyRequest } from 'fastify';
import type { Caller } from '../lib/caller.js';
import type { Refusal } from '../lib/errors.js';
import type { ProcessDef } from '../processes/store.js';
import type { MateContext } from '../auth/authenticate.js';
import type { Services } from '../services.js';
import type { Answer } from './answers.js';
import type { Body } from './readers.js';

/** The top-level JSON type of a POST body, checked before the handler runs (readers.ts checkTopLevel). */
export type BodyType = 'object' | 'array';
/** The body a handler gets: an object, an array, or none (GET). Its keys are read leniently by readers.ts. */
export type BodyOf<T extends BodyType | undefined> = T extends 'object' ? Body : T extends 'array' ? unknown[] : undefined;

export interface Ctx<B = unknown> {
  req: FastifyRequest;
  services: Services;
  mate: MateContext;
  caller: Caller;
  /** the ProcessKey path segment, percent-decoded */
  processKey: string;
  /** the ProcessKey for a refusal's keys: as defined once the process is known, else as sent */
  refusalKey(): string;
  body: B;
  /** the process named by the path (or by `key`), or refused with process_not_found */
  process(key?: string): Promise<ProcessDef>;
  /** the answer to a refusal, in the endpoint's shape: the same a thrown one gets */
  refused(refusal: Refusal): Answer;
}

export interface MateRoute<T extends BodyType | undefined = BodyType | undefined> {
  method: 'GET' | 'POST';
  name: string;
  withProcess: boolean;
  summary: string;
  /** expected top-level JSON type of a POST body */
  bodyType?: T;
  /**
   * An object endpoint that also takes a bare positive integer as its body, read as `{ [bareId]: n }`:
   * the .NET client's id-only overloads (`Solved(taskId)`, `FinishRun(runId)`) send one.
   */
  bareId?: 'taskId' | 'runId';
  /** the endpoint's normal keys, kept on every refusal (docs/mate-api.md §5) */
  refusal: (processKey: string) => Record<string, unknown>;
  handler(ctx: Ctx<BodyOf<T>>): Promise<Answer>;
  /** OpenAPI: the request body and the 200 answer (documentation only: input is read leniently) */
  doc: { body?: unknown; response: unknown };
}

/** Declares a route: its handler's body is typed by its bodyType (an object, an array, or none). */
export function mateRoute<T extends BodyType | undefined = undefined>(route: MateRoute<T>): MateRoute {
  return route;
}

/** Endpoints whose refusals add nothing to the Response keys. */
export const NO_EXTRA_KEYS = () => ({});

// OpenAPI pieces shared by the routes.
export const S = {
  response: {
    type: 'object',
    properties: {
      succeeded: { type: 'boolean' },
      message: { type: 'string' },
      code: { type: 'string', description: 'present when succeeded is false' },
      requestId: { type: 'string' },
    },
    additionalProperties: true,
  },
  task: {
    type: 'object',
    description: 'A task (taskId > 0) with one key per field of the process, or the dummy task (taskId -1, with message and code)',
    properties: {
      taskId: { type: 'integer' },
      reason: { type: ['string', 'null'] },
      runId: { type: 'integer' },
      processKey: { type: 'string' },
      activationDate: { type: 'string', format: 'date-time' },
      deadline: { type: ['string', 'null'] },
      urgent: { type: 'boolean' },
      retryCount: { type: 'integer' },
      message: { type: 'string' },
      code: { type: 'string' },
    },
    additionalProperties: true,
  },
  taskData: {
    type: 'object',
    description: 'Field values by field name (case-insensitive) plus comment/newNote, activationDate, deadline, urgent',
    additionalProperties: true,
  },
  taskAction: {
    type: 'object',
    properties: {
      taskId: { type: 'integer' },
      reason: { type: 'string' },
      comment: { type: 'string' },
      overwriteSecondsSaved: { type: ['integer', 'null'] },
      overwriteEntries: { type: ['integer', 'null'] },
      activationDate: { type: 'string', description: 'Retry only' },
    },
    required: ['taskId'],
  },
};

export function withProperties(schema: { properties: Record<string, unknown> }, more: Record<string, unknown>): Record<string, unknown> {
  return { ...schema, properties: { ...schema.properties, ...more } };
}
