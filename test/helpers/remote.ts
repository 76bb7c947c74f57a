/** Talking to a real server process over HTTP (fetch): a Mate's token and calls, people's calls. */
import type { SeededTenant } from './seed.js';
import { recordSecret } from './log-sink.js';

/** A Mate's access token from POST /connect/token at `base`. */
export async function remoteToken(base: string, t: SeededTenant): Promise<string> {
  const form = new URLSearchParams({
    grant_type: 'password',
    client_id: t.clientId,
    client_secret: t.apiSecret,
    username: t.mateUsername,
    password: t.matePassword,
  });
  const res = await fetch(`${base}/connect/token`, { method: 'POST', body: form });
  if (res.status !== 200) throw new Error(`token request failed: ${res.status} ${await res.text()}`);
  const token = ((await res.json()) as { access_token: string }).access_token;
  recordSecret(token);
  return token;
}

export interface RemoteAnswer {
  status: number;
  body: any;
}

/** One call with a bearer token: GET without a body, POST with a JSON one. */
export async function remoteCall(
  base: string,
  token: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<RemoteAnswer> {
  const res = await fetch(`${base}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: kept as text
  }
  return { status: res.status, body: parsed };
}
