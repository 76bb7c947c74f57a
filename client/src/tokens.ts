/**
 * The Mate's access token (docs/mate-api.md §2): fetched when first needed, shared by every call
 * made while it is being fetched (fifty calls at once make one token request), renewed before it
 * expires and once when the server answers 401. It is kept in a private field and never written
 * to a message, an error or a log.
 */
import { answerError, parseJson, type CallOptions, type Transport } from './http.js';

export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

export interface Credentials {
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  username: string;
  password: string;
}

interface Held {
  token: string;
  /** ms since the epoch, on the client's clock, from which a new token is fetched before a call */
  renewAt: number;
}

// Renew with 5 minutes left, as the official Python client does: a call started just before
// renewal still has minutes of validity left when it reaches a busy server. A token that lives less
// than 10 minutes is renewed at half its life.
const RENEW_BEFORE_MS = 5 * 60_000;

export class TokenSource {
  readonly #transport: Transport;
  readonly #credentials: Credentials;
  readonly #clock: Clock;
  #held: Held | null = null;
  #pending: Promise<Held> | null = null;

  constructor(transport: Transport, credentials: Credentials, clock: Clock) {
    this.#transport = transport;
    this.#credentials = credentials;
    this.#clock = clock;
  }

  /** A token valid for a while yet: the one held, or a new one (one request however many callers wait). */
  async get(call: CallOptions = {}): Promise<string> {
    const held = this.#held;
    if (held && this.#clock.now().getTime() < held.renewAt) return held.token;
    this.#pending ??= this.#fetch().finally(() => {
      this.#pending = null;
    });
    return (await untilAborted(this.#pending, call.signal)).token;
  }

  /** Forgets `token` after the server refused it (401), so the next get() fetches another. */
  invalidate(token: string): void {
    if (this.#held?.token === token) this.#held = null;
  }

  async #fetch(): Promise<Held> {
    const c = this.#credentials;
    const startedAt = this.#clock.now().getTime();
    const form = new URLSearchParams({
      grant_type: 'password',
      client_id: c.clientId,
      client_secret: c.clientSecret,
      username: c.username,
      password: c.password,
    });
    // a sign-in may be repeated: each issues a token of its own and changes nothing else
    const answer = await this.#transport.send(
      {
        method: 'POST',
        url: c.tokenUrl,
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: form.toString(),
        safe: true,
        // 429 here is the throttle on failed sign-ins (minutes long): asking again would not help
        finalStatuses: [429],
      },
      // neither the signal nor the timeout of the call that started the request: others wait for the same token
    );
    const body = parseJson(answer, 'POST /connect/token') as { access_token?: unknown; expires_in?: unknown } | undefined;
    if (answer.status !== 200 || typeof body?.access_token !== 'string') throw answerError(answer, body, 'POST /connect/token');
    const lifetimeMs = (typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in : 3600) * 1000;
    // measured from before the request was sent, on the client's own clock: no clock skew with the server counts
    const held = { token: body.access_token, renewAt: startedAt + lifetimeMs - Math.min(RENEW_BEFORE_MS, lifetimeMs / 2) };
    this.#held = held;
    return held;
  }
}

/** `p`, or the signal's reason as soon as it aborts (p itself goes on for the other callers). */
function untilAborted<T>(p: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
