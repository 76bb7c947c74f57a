/**
 * One HTTP exchange with retries: a timeout and the caller's AbortSignal on every attempt,
 * exponential back-off with jitter between attempts, Retry-After honoured. What may be repeated is
 * the caller's to say (`safe`): a read or a create sent with an Idempotency-Key may be sent again
 * after a lost answer; anything else only when the server surely did nothing.
 */
import { QueuemateError, type Problem } from './errors.js';

export interface RetryPolicy {
  /** attempts in all, the first included */
  attempts: number;
  /** the first back-off; each next one doubles, up to maxDelayMs */
  baseDelayMs: number;
  maxDelayMs: number;
}

// 5 attempts over 0.2 + 0.4 + 0.8 + 1.6 s (halved at worst by the jitter): rides out a server
// restart or a PostgreSQL fail-over of a few seconds without holding a robot for long.
export const DEFAULT_RETRY: RetryPolicy = { attempts: 5, baseDelayMs: 200, maxDelayMs: 10_000 };

// A Retry-After longer than this is not waited for: the call fails and says how long the server asked.
const MAX_RETRY_AFTER_MS = 60_000;

/** Connection errors raised before any byte of the request could reach the server. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL']);

export interface Exchange {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  headers: Record<string, string>;
  body?: string;
  /** true: may be sent again after a lost answer, a timeout or a 5xx (reads, creates with an Idempotency-Key) */
  safe: boolean;
  /** statuses answered at once even where they would be asked again */
  finalStatuses?: number[];
}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  requestId: string | null;
}

export interface TransportOptions {
  fetch: typeof fetch;
  timeoutMs: number;
  retry: RetryPolicy;
}

export interface CallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}

/** Waits `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The back-off before attempt `attempt + 1`: exponential, with half of it random so that robots started together spread out. */
export function backoffMs(attempt: number, policy: RetryPolicy, random = Math.random): number {
  const full = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt);
  return full / 2 + random() * (full / 2);
}

/** Retry-After in milliseconds (seconds or an HTTP date), null when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | null {
  if (value === null || value.trim() === '') return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

function errorCode(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

/** Whether an answer may be asked for again. */
function retryable(status: number, text: string, safe: boolean): boolean {
  // 429 is a refusal before any work. A hand-back answered task_busy did nothing for its task
  // (docs/mate-api.md §5: another transaction held the row), so any call may be repeated then.
  if (status === 429) return true;
  if (status === 409 && /"code"\s*:\s*"task_busy"/.test(text)) return true;
  // idempotency_in_progress: the first request with this key is still running; its answer will be replayed
  if (status === 409 && safe && /"code"\s*:\s*"idempotency_in_progress"/.test(text)) return true;
  return safe && status >= 500;
}

export class Transport {
  constructor(private readonly opts: TransportOptions) {}

  /** Sends the exchange, again when the rules above allow, and returns the last answer whatever its status. */
  async send(x: Exchange, call: CallOptions = {}): Promise<Answer> {
    const { retry } = this.opts;
    const timeoutMs = call.timeoutMs ?? this.opts.timeoutMs;
    for (let attempt = 0; ; attempt++) {
      const last = attempt + 1 >= retry.attempts;
      let answer: Answer;
      try {
        answer = await this.once(x, timeoutMs, call.signal);
      } catch (err) {
        if (call.signal?.aborted) throw call.signal.reason;
        const fault = err instanceof QueuemateError ? err : null;
        const notSent = NOT_SENT.has(errorCode(err) ?? '');
        if (last || !(x.safe || notSent)) {
          throw (
            fault ??
            new QueuemateError({
              status: 0,
              code: 'network_error',
              message: `${x.method} ${pathOf(x.url)}: ${describe(err)}`,
              cause: err,
            })
          );
        }
        await sleep(backoffMs(attempt, retry), call.signal);
        continue;
      }
      if (last || x.finalStatuses?.includes(answer.status) || !retryable(answer.status, answer.text, x.safe)) return answer;
      const asked = retryAfterMs(answer.headers.get('retry-after'));
      if (asked !== null && asked > MAX_RETRY_AFTER_MS) return answer;
      // what the server asked, plus up to a fifth more so that the callers it turned away do not all come back at once
      const wait = asked !== null ? asked + Math.random() * asked * 0.2 : backoffMs(attempt, retry);
      await sleep(wait, call.signal);
    }
  }

  private async once(x: Exchange, timeoutMs: number, signal?: AbortSignal): Promise<Answer> {
    if (signal?.aborted) throw signal.reason;
    const ctl = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      ctl.abort();
    }, timeoutMs);
    const onAbort = () => ctl.abort(signal!.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const res = await this.opts.fetch(x.url, { method: x.method, headers: x.headers, body: x.body, signal: ctl.signal });
      // the body too is read within the timeout: an answer cut off half-way is a lost answer
      const text = await res.text();
      return { status: res.status, headers: res.headers, text, requestId: res.headers.get('x-request-id') };
    } catch (err) {
      if (timedOut && !signal?.aborted) {
        throw new QueuemateError({
          status: 0,
          code: 'timeout',
          message: `${x.method} ${pathOf(x.url)}: no answer within ${timeoutMs} ms`,
          cause: err,
        });
      }
      throw err;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }
}

/** The path of a URL, for messages: never the query, which could carry something private. */
function pathOf(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return '(bad URL)';
  }
}

function describe(err: unknown): string {
  const code = errorCode(err);
  const message = err instanceof Error ? err.message : String(err);
  return code && !message.includes(code) ? `${message} (${code})` : message;
}

/** Parses an answer's JSON body; an answer that is not JSON becomes a QueuemateError. */
export function parseJson(a: Answer, what: string): unknown {
  if (a.text === '') return undefined;
  try {
    return JSON.parse(a.text);
  } catch (err) {
    throw new QueuemateError({
      status: a.status,
      code: a.status === 200 ? 'invalid_response' : `http_${a.status}`,
      message: `${what}: the answer (${a.status}) is not JSON: ${a.text.slice(0, 200)}`,
      requestId: a.requestId,
      cause: err,
    });
  }
}

/** The error of an answer that is not a success: the server's code, message and problems, with the request id. */
export function answerError(a: Answer, body: unknown, what: string): QueuemateError {
  const b = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
  const code = typeof b.code === 'string' ? b.code : typeof b.error === 'string' ? b.error : `http_${a.status}`;
  const message =
    typeof b.message === 'string'
      ? b.message
      : typeof b.error_description === 'string'
        ? b.error_description
        : `${what} answered ${a.status}`;
  const requestId = a.requestId ?? (typeof b.requestId === 'string' ? b.requestId : null);
  const asked = retryAfterMs(a.headers.get('retry-after'));
  return new QueuemateError({
    status: a.status,
    code,
    message,
    requestId,
    errors: Array.isArray(b.errors) ? (b.errors as Problem[]) : [],
    body,
    retryAfterSeconds: asked === null ? null : Math.ceil(asked / 1000),
  });
}
