/**
 * PeopleClient: the people's API (`/v1`, docs/people-api.md) for scripts, typed end to end from
 * the server's OpenAPI (`paths` in schema.ts): the path, its parameters, the body and the answer
 * of every route are checked by the compiler.
 *
 *   const people = new PeopleClient({ baseUrl, token: process.env.QUEUEMATE_TOKEN });   // qmp_…
 *   const { items } = await people.get('/v1/processes/{id}/tasks', { path: { id: 3 }, query: { queue: 'Manual' } });
 *
 * It signs in with a personal access token (docs/people-api.md §1). Answers other than 2xx throw a
 * QueuemateError with the server's code, message, problems and request id. GETs are repeated after
 * a lost answer or a 5xx; other methods only when the server surely did nothing.
 */
import type { paths } from './schema.js';
import { answerError, DEFAULT_RETRY, parseJson, Transport, type CallOptions, type RetryPolicy } from './http.js';
import { toJson } from './types.js';

type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** The paths that have `method`. */
export type PathsWith<M extends HttpMethod> = {
  [P in keyof paths]: paths[P] extends { [K in M]: infer Op } ? ([Op] extends [undefined] ? never : P) : never;
}[keyof paths];

type Op<P extends keyof paths, M extends HttpMethod> = paths[P] extends { [K in M]: infer O } ? O : never;

type PathPart<O> = O extends { parameters: { path: infer X } } ? ([X] extends [undefined] ? unknown : { path: X }) : unknown;
type QueryPart<O> = O extends { parameters: { query: infer X } }
  ? { query: X }
  : O extends { parameters: { query?: infer X } }
    ? [NonNullable<X>] extends [never]
      ? unknown
      : { query?: NonNullable<X> }
    : unknown;
type BodyPart<O> = O extends { requestBody: { content: { 'application/json': infer B } } }
  ? { body: B }
  : O extends { requestBody?: { content: { 'application/json': infer B } } }
    ? { body?: B }
    : unknown;

/** What a call of `method` on `P` takes: `path`, `query` and `body` as the route declares them, and call options. */
export type PeopleRequest<P extends keyof paths, M extends HttpMethod> = PathPart<Op<P, M>> &
  QueryPart<Op<P, M>> &
  BodyPart<Op<P, M>> &
  CallOptions & { headers?: Record<string, string> };

type Success = 200 | 201 | 202 | 204;
/** What a call answers when it succeeds: the JSON of its 2xx answer (undefined for 204, text for text/csv and the like). */
export type ResponseOf<P extends keyof paths, M extends HttpMethod> =
  Op<P, M> extends { responses: infer R }
    ? {
        [S in keyof R & Success]: R[S] extends { content: { 'application/json': infer J } }
          ? J
          : R[S] extends { content: Record<string, unknown> }
            ? string
            : undefined;
      }[keyof R & Success]
    : never;

type Args<P extends keyof paths, M extends HttpMethod> =
  {} extends PeopleRequest<P, M> ? [init?: PeopleRequest<P, M>] : [init: PeopleRequest<P, M>];

export interface PeopleClientOptions {
  baseUrl: string;
  /** a personal access token (qmp_…) */
  token: string;
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  fetch?: typeof fetch;
}

export class PeopleClient {
  readonly baseUrl: string;
  readonly #token: string;
  readonly #transport: Transport;

  constructor(options: PeopleClientOptions) {
    if (typeof options.token !== 'string' || options.token === '') throw new TypeError('PeopleClient: token is required');
    this.baseUrl = options.baseUrl.trim().replace(/\/$/, '');
    this.#token = options.token;
    const f = options.fetch ?? globalThis.fetch;
    this.#transport = new Transport({ fetch: f, timeoutMs: options.timeoutMs ?? 30_000, retry: { ...DEFAULT_RETRY, ...options.retry } });
  }

  get<P extends PathsWith<'get'>>(path: P, ...init: Args<P, 'get'>): Promise<ResponseOf<P, 'get'>> {
    return this.#request('GET', path, init[0]);
  }
  post<P extends PathsWith<'post'>>(path: P, ...init: Args<P, 'post'>): Promise<ResponseOf<P, 'post'>> {
    return this.#request('POST', path, init[0]);
  }
  put<P extends PathsWith<'put'>>(path: P, ...init: Args<P, 'put'>): Promise<ResponseOf<P, 'put'>> {
    return this.#request('PUT', path, init[0]);
  }
  patch<P extends PathsWith<'patch'>>(path: P, ...init: Args<P, 'patch'>): Promise<ResponseOf<P, 'patch'>> {
    return this.#request('PATCH', path, init[0]);
  }
  delete<P extends PathsWith<'delete'>>(path: P, ...init: Args<P, 'delete'>): Promise<ResponseOf<P, 'delete'>> {
    return this.#request('DELETE', path, init[0]);
  }

  async #request<T>(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', template: string, init: unknown): Promise<T> {
    const i = (init ?? {}) as {
      path?: Record<string, unknown>;
      query?: Record<string, unknown>;
      body?: unknown;
      headers?: Record<string, string>;
    } & CallOptions;
    const url = this.baseUrl + fillPath(template, i.path) + queryString(i.query);
    const payload = i.body === undefined ? undefined : toJson(i.body);
    const answer = await this.#transport.send(
      {
        method,
        url,
        headers: {
          authorization: `Bearer ${this.#token}`,
          accept: 'application/json',
          ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
          ...i.headers,
        },
        body: payload,
        safe: method === 'GET',
      },
      { signal: i.signal, timeoutMs: i.timeoutMs },
    );
    const what = `${method} ${template}`;
    const type = answer.headers.get('content-type') ?? '';
    const json = type.includes('json');
    const body = json ? parseJson(answer, what) : answer.text;
    if (answer.status < 200 || answer.status > 299) throw answerError(answer, json ? body : undefined, what);
    return (answer.status === 204 ? undefined : body) as T;
  }
}

function fillPath(template: string, params: Record<string, unknown> = {}): string {
  return template.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const v = params[name];
    if (v === undefined || v === null) throw new TypeError(`${template}: the path parameter ${name} is missing`);
    return encodeURIComponent(String(v));
  });
}

function queryString(query: Record<string, unknown> = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null) continue;
    for (const x of Array.isArray(v) ? v : [v]) q.append(k, x instanceof Date ? x.toISOString() : String(x));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}
