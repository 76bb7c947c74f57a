import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { createApp } from '../src/app.js';
import { testConfig } from '../src/config.js';
import { testStore, type TestStore } from './helpers/db.js';
import { NONCE_PLACEHOLDER } from '../src/web/serve.js';

let store: TestStore;
let app: FastifyInstance;
let plain: FastifyInstance;
let dist: string;

before(async () => {
  dist = fs.mkdtempSync(path.join(os.tmpdir(), 'qm-web-dist-'));
  fs.mkdirSync(path.join(dist, 'assets'));
  fs.writeFileSync(
    path.join(dist, 'index.html'),
    `<!doctype html><html><head><meta property="csp-nonce" nonce="${NONCE_PLACEHOLDER}"><script type="module" nonce="${NONCE_PLACEHOLDER}" src="/assets/index-AbC123.js"></script></head><body><div id="root"></div></body></html>`,
  );
  fs.writeFileSync(path.join(dist, 'assets', 'index-AbC123.js'), 'console.log("app")');
  fs.writeFileSync(path.join(dist, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  store = await testStore();
  app = await createApp(testConfig(), { store, sweeper: false, webDist: dist });
  plain = await createApp(testConfig(), { store, sweeper: false });
  await Promise.all([app.ready(), plain.ready()]);
});
after(async () => {
  await app.close();
  await plain.close();
  await store.close();
  fs.rmSync(dist, { recursive: true, force: true });
});

test('/ answers index.html with a fresh nonce in a strict CSP, the security headers and no caching', async () => {
  const a = await app.inject({ method: 'GET', url: '/' });
  const b = await app.inject({ method: 'GET', url: '/' });
  assert.equal(a.statusCode, 200);
  assert.match(a.headers['content-type'] as string, /^text\/html/);
  const csp = a.headers['content-security-policy'] as string;
  const nonce = /'nonce-([^']+)'/.exec(csp)?.[1];
  assert.ok(nonce && nonce.length >= 16, csp);
  assert.ok(!a.body.includes(NONCE_PLACEHOLDER), 'the placeholder is replaced');
  assert.ok(a.body.includes(`nonce="${nonce}"`), 'the page carries the header nonce');
  assert.notEqual(b.headers['content-security-policy'], csp, 'a new nonce on every answer');
  const directives = Object.fromEntries(csp.split(/;\s*/).map((d) => [d.split(' ')[0], d.split(' ').slice(1)]));
  assert.deepEqual(directives['script-src'], ["'self'"]);
  assert.ok(!csp.includes('unsafe-inline') && !csp.includes('unsafe-eval'), csp);
  assert.deepEqual(directives['frame-ancestors'], ["'none'"]);
  assert.deepEqual(directives['object-src'], ["'none'"]);
  assert.equal(a.headers['cache-control'], 'no-store');
  assert.equal(a.headers['x-content-type-options'], 'nosniff');
  assert.equal(a.headers['x-frame-options'], 'DENY');
  assert.equal(a.headers['referrer-policy'], 'no-referrer');
  assert.equal(a.headers['cross-origin-opener-policy'], 'same-origin');
  assert.equal(a.headers['strict-transport-security'], undefined, 'no HSTS on an http public URL');
});

test('client-side routes fall back to index.html; HEAD too', async () => {
  for (const url of ['/processes/3/queue?queue=Manual&q=x', '/tasks/12', '/sign-in']) {
    const r = await app.inject({ method: 'GET', url });
    assert.equal(r.statusCode, 200, url);
    assert.ok(r.body.includes('<div id="root">'), url);
  }
  const head = await app.inject({ method: 'HEAD', url: '/overview' });
  assert.equal(head.statusCode, 200);
  assert.match(head.headers['content-type'] as string, /^text\/html/);
});

test('hashed assets are cached for a year as immutable; a missing asset is a 404, not the page', async () => {
  const r = await app.inject({ method: 'GET', url: '/assets/index-AbC123.js' });
  assert.equal(r.statusCode, 200);
  assert.equal(r.body, 'console.log("app")');
  assert.match(r.headers['content-type'] as string, /javascript/);
  assert.match(r.headers['cache-control'] as string, /max-age=31536000/);
  assert.match(r.headers['cache-control'] as string, /immutable/);
  const missing = await app.inject({ method: 'GET', url: '/assets/index-Gone.js' });
  assert.equal(missing.statusCode, 404);
  assert.ok(!missing.body.includes('<div id="root">'));
  const traversal = await app.inject({ method: 'GET', url: '/assets/..%2f..%2fetc%2fpasswd' });
  assert.ok([403, 404].includes(traversal.statusCode), `traversal answered ${traversal.statusCode}`);
  assert.ok(!traversal.body.includes('root:'));
});

test('top-level files are served; a missing file or /index.html itself is not the fallback', async () => {
  const icon = await app.inject({ method: 'GET', url: '/favicon.svg' });
  assert.equal(icon.statusCode, 200);
  assert.match(icon.headers['content-type'] as string, /image\/svg\+xml/);
  assert.equal((await app.inject({ method: 'GET', url: '/robots.txt' })).statusCode, 404);
  assert.equal((await app.inject({ method: 'GET', url: '/index.html' })).statusCode, 404);
  assert.equal((await app.inject({ method: 'GET', url: '/script.js' })).statusCode, 404);
});

test('API paths keep their own 404 answers, exactly as without the web app', async () => {
  const cases: [string, string][] = [
    ['GET', '/v1/nothing-here'],
    ['GET', '/V1/No-Such-Resource'],
    ['GET', '/connect/nope'],
    ['GET', '/metrics/x'],
    ['GET', '/healthz/x'],
    ['POST', '/somewhere'],
    ['GET', '/api/NoSuchEndpoint'],
    ['GET', '/apimate/NoSuchEndpoint'],
  ];
  for (const [method, url] of cases) {
    const withWeb = await app.inject({ method: method as 'GET', url });
    const without = await plain.inject({ method: method as 'GET', url });
    assert.equal(withWeb.statusCode, 404, `${method} ${url}`);
    assert.equal(withWeb.statusCode, without.statusCode, `${method} ${url}`);
    assert.match(withWeb.headers['content-type'] as string, /application\/json/, `${method} ${url}`);
    const strip = (body: string) => body.replace(/"requestId":"[^"]*"/, '');
    assert.equal(strip(withWeb.body), strip(without.body), `${method} ${url}`);
    assert.equal(withWeb.headers['content-security-policy'], undefined);
  }
  assert.equal((await app.inject({ method: 'GET', url: '/healthz' })).json().status, 'ok');
  assert.equal((await app.inject({ method: 'GET', url: '/docs/json' })).statusCode, 200);
});

test('without a build the app answers 503 saying how to build it, and the APIs still work', async () => {
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'qm-web-empty-'));
  const bare = await createApp(testConfig({ publicUrl: 'https://queue.example.com' }), { store, sweeper: false, webDist: empty });
  try {
    const r = await bare.inject({ method: 'GET', url: '/' });
    assert.equal(r.statusCode, 503);
    assert.match(r.body, /npm run build -w web/);
    assert.equal((await bare.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
  } finally {
    await bare.close();
    fs.rmSync(empty, { recursive: true, force: true });
  }
});

test('HSTS is sent when the public URL is https', async () => {
  const secure = await createApp(testConfig({ publicUrl: 'https://queue.example.com' }), { store, sweeper: false, webDist: dist });
  try {
    const r = await secure.inject({ method: 'GET', url: '/' });
    assert.match(r.headers['strict-transport-security'] as string, /max-age=\d+/);
  } finally {
    await secure.close();
  }
});
