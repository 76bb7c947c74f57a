/**
 * The one way the app talks to the server: JSON in and out, the CSRF header on every write, a
 * refusal turned into an ApiError whose message is words (never raw JSON), and a 401 on any call
 * but the session's own telling the app the session has ended.
 */
import type { ApiErrorBody } from './api-types';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly fieldErrors: NonNullable<ApiErrorBody['errors']> = [],
    readonly retryAfterSeconds: number | null = null,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

let csrfToken: string | null = null;
let sessionEnded: (() => void) | null = null;

export function setCsrfToken(token: string | null): void {
  csrfToken = token;
}

/** Called when a request answers 401: the session expired or was signed out elsewhere. */
export function onSessionEnded(handler: (() => void) | null): void {
  sessionEnded = handler;
}

const FALLBACK: Record<number, string> = {
  400: 'The request was not accepted.',
  401: 'You are signed out. Sign in again.',
  403: 'You are not allowed to do that.',
  404: 'That was not found. It may have been deleted.',
  409: 'That conflicts with a change someone else made. Reload and try again.',
  413: 'That is too large to send.',
  429: 'Too many attempts. Wait a moment and try again.',
  500: 'The server had a problem. Try again; if it persists, tell your administrator.',
  503: 'The service is unavailable right now. Try again shortly.',
};

/** Words for an error, whatever it is. */
export function errorMessage(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  if (err instanceof Error && err.name === 'AbortError') return 'The request was cancelled.';
  return 'Something went wrong. Try again.';
}

export interface RequestOptions {
  method?: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  body?: unknown;
  signal?: AbortSignal;
}

export async function api<T>(path: string, opts: RequestOptions = {}): Promise<T> {
  const method = opts.method ?? 'GET';
  const headers: Record<string, string> = { accept: 'application/json' };
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrfToken) headers['x-csrf-token'] = csrfToken;
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      credentials: 'same-origin',
      signal: opts.signal,
    });
  } catch (err) {
    if (err instanceof Error && err.name === 'AbortError') throw err;
    throw new ApiError(0, 'network', 'The server cannot be reached. Check your connection and try again.');
  }
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  if (res.ok) return parseBody(text) as T;
  throw refusal(path, res.status, text, res.headers.get('retry-after'));
}

function parseBody(text: string): unknown {
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return null;
  }
}

/** A refusal answer as an ApiError (words, never raw JSON); a 401 off the session endpoint ends the session. */
function refusal(path: string, status: number, text: string, retryAfter: string | null): ApiError {
  const body = parseBody(text);
  const e = (body && typeof body === 'object' ? body : {}) as Partial<ApiErrorBody>;
  const retry = Number(retryAfter);
  let message = typeof e.message === 'string' && e.message ? e.message : (FALLBACK[status] ?? `The server answered ${status}.`);
  if (status === 429 && retry > 0) message = `Too many attempts. Try again in ${retry} seconds.`;
  const err = new ApiError(
    status,
    typeof e.code === 'string' ? e.code : `http_${status}`,
    message,
    Array.isArray(e.errors) ? e.errors : [],
    retry > 0 ? retry : null,
  );
  // a wrong password given to confirm a change (POST /v1/me/password) is a 401 too, but the session goes on
  if (status === 401 && path !== '/v1/session' && err.code !== 'invalid_credentials') sessionEnded?.();
  return err;
}

/**
 * POSTs a file as the body with upload progress (fetch reports none for uploads), with the CSRF
 * header; answers the JSON body or throws an ApiError as api() does.
 */
export function upload<T>(
  path: string,
  file: Blob,
  opts: { contentType: string; onProgress?: (sent: number, total: number) => void; signal?: AbortSignal },
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', path);
    xhr.setRequestHeader('accept', 'application/json');
    xhr.setRequestHeader('content-type', opts.contentType);
    if (csrfToken) xhr.setRequestHeader('x-csrf-token', csrfToken);
    xhr.withCredentials = true;
    xhr.upload.onprogress = (e) => opts.onProgress?.(e.loaded, e.lengthComputable ? e.total : file.size);
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) resolve(parseBody(xhr.responseText) as T);
      else reject(refusal(path, xhr.status, xhr.responseText, xhr.getResponseHeader('retry-after')));
    };
    xhr.onerror = () => reject(new ApiError(0, 'network', 'The server cannot be reached. Check your connection and try again.'));
    xhr.onabort = () => reject(new DOMException('The upload was cancelled.', 'AbortError'));
    opts.signal?.addEventListener('abort', () => xhr.abort());
    xhr.send(file);
  });
}
