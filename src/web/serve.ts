/**
 * Serves the built web app (web/dist) at `/` from the same server process.
 *
 * - `/assets/*` are Vite's content-hashed files: cached for a year and marked immutable.
 * - Any other GET/HEAD that is not an API path and does not name a file answers `index.html`
 *   (client-side routes such as /processes/3/queue), never cached, with a fresh CSP nonce.
 * - API paths (/api, /v1, /connect, /docs, /metrics, /healthz…) keep their own 404 answers.
 *
 * Content-Security-Policy: `script-src 'self'` (no inline script at all). Mantine writes its CSS
 * variables and responsive styles into `<style>` elements at run time, so styles need more than
 * 'self'; instead of `'unsafe-inline'` each index.html answer carries a random nonce: Vite's
 * `html.cspNonce` puts a placeholder into index.html (on its tags and a `<meta property="csp-nonce">`),
 * this file replaces it per answer, and the app hands it to Mantine (`getStyleNonce`). Style
 * *attributes* need no allowance: React sets them through the CSSOM, which CSP does not govern.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fastifyStatic from '@fastify/static';

/** The placeholder web/vite.config.ts gives Vite's html.cspNonce. */
export const NONCE_PLACEHOLDER = '__QM_CSP_NONCE__';

/** Paths that belong to the server's APIs: an unknown one there is a 404, never the web app. */
export const API_PREFIXES = ['/api', '/apimate', '/v1', '/connect', '/docs', '/metrics', '/healthz', '/readyz', '/assets'];

export interface WebOptions {
  /** the built app: web/dist */
  distDir: string;
  /** send Strict-Transport-Security (the public URL is https) */
  hsts?: boolean;
}

export function isApiPath(urlPath: string): boolean {
  const p = urlPath.toLowerCase();
  return API_PREFIXES.some((prefix) => p === prefix || p.startsWith(prefix + '/'));
}

export function contentSecurityPolicy(nonce: string): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    `style-src 'self' 'nonce-${nonce}'`,
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

const TOP_LEVEL_TYPES: Record<string, string> = {
  '.svg': 'image/svg+xml',
  '.ico': 'image/x-icon',
  '.png': 'image/png',
  '.txt': 'text/plain; charset=utf-8',
  '.webmanifest': 'application/manifest+json',
  '.json': 'application/json',
};

function pageHeaders(reply: FastifyReply, opts: WebOptions, nonce: string): void {
  reply.header('content-security-policy', contentSecurityPolicy(nonce));
  reply.header('cross-origin-opener-policy', 'same-origin');
  reply.header('cross-origin-resource-policy', 'same-origin');
  reply.header('permissions-policy', 'camera=(), microphone=(), geolocation=(), payment=()');
  if (opts.hsts) reply.header('strict-transport-security', 'max-age=31536000');
}

/** Registers the web app on the root instance (its not-found handler is the root one). */
export async function serveWebApp(app: FastifyInstance, opts: WebOptions): Promise<void> {
  const distDir = path.resolve(opts.distDir);
  const indexFile = path.join(distDir, 'index.html');

  await app.register(async (scope) => {
    await scope.register(fastifyStatic, {
      root: path.join(distDir, 'assets'),
      prefix: '/assets/',
      decorateReply: false,
      index: false,
      cacheControl: true,
      maxAge: '365d',
      immutable: true,
    });
    scope.addHook('onSend', async (_req, reply) => {
      reply.header('cross-origin-resource-policy', 'same-origin');
    });
  });

  const notFound = (req: FastifyRequest, reply: FastifyReply) =>
    reply.code(404).send({ message: `Route ${req.method}:${req.url} not found`, error: 'Not Found', statusCode: 404 });

  app.setNotFoundHandler(async (req, reply) => {
    const urlPath = req.url.split('?')[0];
    if ((req.method !== 'GET' && req.method !== 'HEAD') || isApiPath(urlPath)) return notFound(req, reply);
    const last = urlPath.slice(urlPath.lastIndexOf('/') + 1);
    if (last.includes('.')) {
      // a file at the top of dist (favicon.svg, robots.txt); index.html only through the fallback
      const type = TOP_LEVEL_TYPES[path.extname(last).toLowerCase()];
      const isTopLevel = urlPath === '/' + last && /^[\w.-]+$/.test(last) && last !== 'index.html';
      if (!type || !isTopLevel) return notFound(req, reply);
      const file = path.join(distDir, last);
      const info = await stat(file).catch(() => null);
      if (!info?.isFile()) return notFound(req, reply);
      return reply.type(type).header('cache-control', 'public, max-age=3600').send(createReadStream(file));
    }
    let html: string;
    try {
      html = await readFile(indexFile, 'utf8');
    } catch {
      return reply
        .code(503)
        .type('text/plain; charset=utf-8')
        .header('cache-control', 'no-store')
        .send('The web app is not built. Run "npm run build -w web" or restart with "npm start", which builds it.\n');
    }
    const nonce = randomBytes(16).toString('base64');
    pageHeaders(reply, opts, nonce);
    return reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').send(html.replaceAll(NONCE_PLACEHOLDER, nonce));
  });
}
