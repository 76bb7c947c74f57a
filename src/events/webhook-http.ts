/**
 * One webhook delivery attempt over HTTP: a signed POST (Standard Webhooks), a hard timeout, the
 * address guard at connect time, and what the delivery log keeps (status, duration, a short
 * excerpt of the answer).
 */
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { Webhook } from 'standardwebhooks';
import { AddressRefusedError, guardedLookup, isNonPublicAddress } from '../lib/address-guard.js';

/** The answer excerpt kept in the delivery log: enough to see an error page's gist. */
const EXCERPT_BYTES = 1024;

export interface AttemptResult {
  ok: boolean;
  status: number | null;
  error: string | null;
  durationMs: number;
  excerpt: string | null;
  /** the target's address was refused (not public); the request never left */
  refused: boolean;
}

export interface SignedMessage {
  id: string;
  timestamp: Date;
  body: string;
}

/** The three Standard Webhooks headers for a message. */
export function signatureHeaders(secret: string, msg: SignedMessage): Record<string, string> {
  return {
    'webhook-id': msg.id,
    'webhook-timestamp': String(Math.floor(msg.timestamp.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(msg.id, msg.timestamp, msg.body),
  };
}

export async function postSigned(
  url: string,
  secret: string,
  msg: SignedMessage,
  opts: { timeoutMs: number; allowNonPublic: boolean },
): Promise<AttemptResult> {
  const started = performance.now();
  const done = (r: Omit<AttemptResult, 'durationMs'>): AttemptResult => ({ ...r, durationMs: Math.round(performance.now() - started) });
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return done({ ok: false, status: null, error: 'invalid URL', excerpt: null, refused: false });
  }
  // a literal address is connected to without a lookup: check it here
  const host = target.hostname.replace(/^\[|\]$/g, '');
  if (net.isIP(host) && !opts.allowNonPublic && isNonPublicAddress(host)) {
    return done({ ok: false, status: null, error: `${host} is not a public address`, excerpt: null, refused: true });
  }
  const client = target.protocol === 'https:' ? https : http;
  return new Promise<AttemptResult>((resolve) => {
    let settled = false;
    const finish = (r: Omit<AttemptResult, 'durationMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(done(r));
    };
    const req = client.request(
      target,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Queuemate-Webhooks/1',
          'content-length': Buffer.byteLength(msg.body),
          ...signatureHeaders(secret, msg),
        },
        lookup: guardedLookup(opts.allowNonPublic),
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          if (size < EXCERPT_BYTES) chunks.push(c);
          size += c.length;
        });
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          const excerpt = Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString('utf8');
          const ok = status >= 200 && status < 300;
          finish({ ok, status, error: ok ? null : `HTTP ${status}`, excerpt: excerpt || null, refused: false });
        });
        res.on('error', (err) => finish({ ok: false, status: res.statusCode ?? null, error: err.message, excerpt: null, refused: false }));
      },
    );
    // the whole attempt (connect, send, answer) is bounded: a slow endpoint holds no worker longer
    const timer = setTimeout(() => {
      req.destroy();
      finish({ ok: false, status: null, error: `no answer within ${opts.timeoutMs} ms`, excerpt: null, refused: false });
    }, opts.timeoutMs);
    req.on('error', (err) =>
      finish({ ok: false, status: null, error: err.message, excerpt: null, refused: err instanceof AddressRefusedError }),
    );
    req.end(msg.body);
  });
}
