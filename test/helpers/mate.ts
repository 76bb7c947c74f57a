/** A Mate talking to the app through app.inject, with a real token from /connect/token. */
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { SeededTenant } from './seed.js';
import { recordBodySecrets, recordSecret } from './log-sink.js';

export interface MateResponse {
  status: number;
  headers: Record<string, unknown>;
  body: any;
  raw: LightMyRequestResponse;
}

export async function getToken(
  app: FastifyInstance,
  t: SeededTenant,
  username = t.mateUsername,
  password = t.matePassword,
): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/connect/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      grant_type: 'password',
      client_id: t.clientId,
      client_secret: t.apiSecret,
      username,
      password,
    }).toString(),
  });
  if (res.statusCode !== 200) throw new Error(`token request failed: ${res.statusCode} ${res.body}`);
  recordSecret(t.apiSecret, password, res.json().access_token);
  return res.json().access_token;
}

export class Mate {
  /** Set by signIn: how to get a new token when a test's clock has moved past the old one's expiry. */
  private renew: (() => Promise<string>) | null = null;

  constructor(
    readonly app: FastifyInstance,
    public token: string,
  ) {}

  static async signIn(app: FastifyInstance, t: SeededTenant, username?: string, password?: string): Promise<Mate> {
    const mate = new Mate(app, await getToken(app, t, username, password));
    mate.renew = () => getToken(app, t, username, password);
    return mate;
  }

  async request(method: 'GET' | 'POST', url: string, body?: unknown, headers: Record<string, string> = {}): Promise<MateResponse> {
    const res = await this.send(method, url, body, headers);
    // like the official clients, sign in again when the token has expired
    if (res.status === 401 && this.renew && /expired/.test(res.body?.message ?? '') && !headers.authorization) {
      this.token = await this.renew();
      return this.send(method, url, body, headers);
    }
    return res;
  }

  private async send(method: 'GET' | 'POST', url: string, body?: unknown, headers: Record<string, string> = {}): Promise<MateResponse> {
    const payload = body === undefined ? undefined : typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
    recordBodySecrets(body);
    const raw = await this.app.inject({
      method,
      url,
      headers: {
        authorization: `Bearer ${this.token}`,
        ...(payload !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      payload,
    });
    let parsed: unknown = undefined;
    try {
      parsed = raw.body ? JSON.parse(raw.body) : undefined;
    } catch {
      parsed = raw.body;
    }
    return { status: raw.statusCode, headers: raw.headers, body: parsed, raw };
  }

  get(url: string, headers?: Record<string, string>) {
    return this.request('GET', url, undefined, headers);
  }

  post(url: string, body: unknown, headers?: Record<string, string>) {
    return this.request('POST', url, body, headers);
  }

  /** Creates a task and returns its id (asserting success). */
  async create(processKey: string, data: Record<string, unknown>): Promise<number> {
    const r = await this.post(`/api/CreateTask/${processKey}`, data);
    if (r.status !== 200 || !r.body.succeeded) throw new Error(`create failed: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.taskId;
  }

  async takeNext(processKey: string): Promise<any> {
    const r = await this.get(`/api/TakeNext/${processKey}`);
    if (r.status !== 200) throw new Error(`TakeNext failed: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  }
}
