import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { webBuildState, ensureWebBuild, findWebDir } from '../src/web/build.js';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'qm-web-build-'));
after(() => fs.rmSync(root, { recursive: true, force: true }));

function touch(file: string, secondsAgo: number, content = 'x'): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  if (!fs.existsSync(file)) fs.writeFileSync(file, content);
  const t = new Date(Date.now() - secondsAgo * 1000);
  fs.utimesSync(file, t, t);
}

test('the build is missing, fresh, or stale when any source (nested, public, config, client types) is newer', async () => {
  const web = path.join(root, 'web');
  const dist = path.join(web, 'dist');
  touch(path.join(web, 'index.html'), 100);
  touch(path.join(web, 'src', 'pages', 'Overview.tsx'), 100);
  touch(path.join(web, 'vite.config.ts'), 100);
  assert.deepEqual(await webBuildState(web, dist), { state: 'missing' });

  touch(path.join(dist, 'index.html'), 50);
  assert.deepEqual(await webBuildState(web, dist), { state: 'fresh' });

  touch(path.join(web, 'src', 'pages', 'Overview.tsx'), 10);
  assert.deepEqual(await webBuildState(web, dist), { state: 'stale', changed: path.join('src', 'pages', 'Overview.tsx') });
  touch(path.join(dist, 'index.html'), 5);
  assert.deepEqual(await webBuildState(web, dist), { state: 'fresh' });

  touch(path.join(web, 'public', 'favicon.svg'), 1);
  assert.equal((await webBuildState(web, dist)).state, 'stale');
  touch(path.join(dist, 'index.html'), 0);

  touch(path.join(root, 'client', 'src', 'schema.ts'), -5);
  assert.deepEqual(await webBuildState(web, dist), { state: 'stale', changed: path.join('..', 'client', 'src', 'schema.ts') });
  touch(path.join(root, 'client', 'src', 'schema.ts'), 10);

  // what the build writes, or a node_modules folder, is not a source
  touch(path.join(web, 'node_modules', 'x', 'index.js'), -10);
  assert.deepEqual(await webBuildState(web, dist), { state: 'fresh' });
});

test('a fresh build is left alone and nothing is logged', async () => {
  const logged: string[] = [];
  const web = path.join(root, 'web');
  const out = await ensureWebBuild({ webDir: web, log: { info: (m) => logged.push(m), warn: (m) => logged.push(m) } });
  assert.equal(out, path.join(web, 'dist'));
  assert.deepEqual(logged, []);
});

test("the repository's web folder is found from src/web", () => {
  const found = findWebDir();
  assert.ok(found && fs.existsSync(path.join(found, 'vite.config.ts')), String(found));
});
