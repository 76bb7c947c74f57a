/**
 * The package people install: `npm pack` at the root makes a tarball that installs into an empty
 * directory and runs there, with no access to this checkout. The test packs (prepack builds what
 * is missing or stale), checks what the tarball holds, installs it with `npm install --prefix`
 * from the registry, runs `npx queuemate version`, starts `queuemate start` on the embedded store
 * (the package's default), gets a Mate token, runs a task's life cycle, loads the web app and stops
 * the server with SIGTERM.
 *
 * The install starts from a lockfile made of this checkout's package-lock.json
 * (scripts/install-lock.js), so npm installs the versions the rest of the suite ran rather than
 * whatever is newest that day, as the container image does.
 *
 * It runs alone (test/serial) because npm wants the machine for about a minute, and only on the
 * embedded pass: the package is the same on both, and its default store is the embedded one.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { DATABASE_URL } from '../helpers/db.js';
import { recordSecret, writeLogLines } from '../helpers/log-sink.js';
import { ROOT, childEnv, tempDir } from '../foundation-support.js';
import { writeInstallLock } from '../../scripts/install-lock.js';

const live = new Set<ChildProcess>();
after(() => {
  for (const c of live) c.kill('SIGKILL');
});

/**
 * The environment of npm and of the installed server: no Queuemate settings, no NODE_PATH, and none
 * of the npm_* variables `npm test` set, which name this checkout (npm_package_json, the prefix).
 */
function isolatedEnv(): NodeJS.ProcessEnv {
  const env = childEnv();
  for (const k of Object.keys(env)) if (k.startsWith('npm_') || k === 'NODE_PATH' || k === 'INIT_CWD') delete env[k];
  return env;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[], cwd: string, timeoutMs: number): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env: isolatedEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    live.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      live.delete(child);
      resolve({ code, stdout, stderr });
    });
  });
}

const skip = DATABASE_URL ? 'the package is the same on both stores; it runs on the embedded pass, the default of the package' : false;

test('npm pack makes a tarball that installs into an empty directory and runs a task life cycle', { skip, timeout: 300_000 }, async () => {
  const started = Date.now();
  const lap = (what: string) => process.stderr.write(`# package: ${what} after ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  const tmp = tempDir('qm-package-');
  const { version } = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };

  const pack = await run('npm', ['pack', '--json', '--pack-destination', tmp], ROOT, 240_000);
  assert.equal(pack.code, 0, `npm pack failed:\n${pack.stderr}`);
  lap('packed');
  const [packed] = JSON.parse(pack.stdout.slice(pack.stdout.indexOf('['))) as Array<{ filename: string; files: Array<{ path: string }> }>;
  const files = packed.files.map((f) => f.path);
  for (const f of [
    'package.json',
    'README.md',
    'LICENSE',
    'CHANGELOG.md',
    'bin/queuemate.js',
    'dist/src/main.js',
    'dist/src/db/migrations/0001_schema.sql',
    'web/dist/index.html',
  ]) {
    assert.ok(files.includes(f), `the tarball holds ${f}`);
  }
  const unwanted = files.filter(
    (f) => /^(src|test|bench|scripts|client|web\/src|node_modules)\//.test(f) || f.endsWith('.ts') || f.endsWith('.map'),
  );
  assert.deepEqual(unwanted, [], 'no tests, sources or source maps');

  // an empty directory outside the checkout: nothing above it holds a node_modules to resolve from
  const prefix = path.join(tmp, 'install');
  fs.mkdirSync(prefix);
  assert.ok(path.relative(ROOT, prefix).startsWith('..'), 'the install is outside the checkout');
  for (let dir = path.dirname(prefix); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    assert.ok(!fs.existsSync(path.join(dir, 'node_modules')), `${dir} holds no node_modules`);
  }
  writeInstallLock(prefix);
  const install = await run(
    'npm',
    ['install', '--prefix', prefix, '--no-audit', '--no-fund', '--prefer-offline', path.join(tmp, packed.filename)],
    prefix,
    240_000,
  );
  assert.equal(install.code, 0, `npm install failed:\n${install.stderr}`);
  assert.doesNotMatch(install.stderr, /npm warn/i, 'no warning (engines, blocked install scripts, …)');
  lap('installed');
  const installed = path.join(prefix, 'node_modules', 'queuemate');
  assert.ok(!fs.existsSync(path.join(installed, 'src')) && fs.existsSync(path.join(installed, 'dist', 'src', 'main.js')));
  assert.ok(!fs.existsSync(path.join(prefix, 'node_modules', 'tsx')), 'tsx is a development dependency');

  // npx finds the command the package installed; `queuemate --version` is the same command
  const bin = path.join(prefix, 'node_modules', '.bin', 'queuemate');
  for (const [cmd, args] of [
    ['npx', ['--no', 'queuemate', 'version']],
    [bin, ['--version']],
  ] as const) {
    const v = await run(cmd, [...args], prefix, 30_000);
    assert.deepEqual([v.code, v.stdout, v.stderr], [0, `${version}\n`, ''], `${cmd} ${args.join(' ')}`);
  }

  const server = spawn(bin, ['start', '--port', '0'], {
    cwd: prefix,
    env: isolatedEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(server);
  let out = '';
  let err = '';
  server.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  server.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<number | null>((resolve) => server.on('close', (code) => resolve(code)));
  try {
    const deadline = Date.now() + 90_000;
    while (!/Queuemate is listening on/.test(out)) {
      if (server.exitCode !== null || Date.now() > deadline) assert.fail(`the server did not start:\n${out}\n${err}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    lap('started');
    const [, base, store] = out.match(/Queuemate is listening on (http:\/\/127\.0\.0\.1:\d+) \(store: ([^)]*)\)/)!;
    assert.equal(store, `embedded, ${path.join(prefix, 'data')}`, 'the embedded store in ./data by default');
    const secret = out.match(/^ {2}API secret: +(\S+)$/m)![1];
    const matePassword = out.match(/^ {2}Mate: +demo-mate \/ (\S+)$/m)![1];
    recordSecret(secret, matePassword, out.match(/^ {2}Admin: +admin \/ (\S+)$/m)?.[1]);

    assert.deepEqual(await (await fetch(`${base}/healthz`)).json(), { status: 'ok', version });
    const tokenAnswer = await fetch(`${base}/connect/token`, {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'password',
        client_id: 'demo',
        client_secret: secret,
        username: 'demo-mate',
        password: matePassword,
      }),
    });
    assert.equal(tokenAnswer.status, 200);
    const token = ((await tokenAnswer.json()) as { access_token: string }).access_token;
    recordSecret(token);
    const mate = async (method: string, route: string, body?: unknown) => {
      const r = await fetch(`${base}${route}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      assert.equal(r.status, 200, `${method} ${route}`);
      return (await r.json()) as Record<string, unknown>;
    };
    const created = await mate('POST', '/api/CreateTask/demo', { coreSystemKey: 'PKG-1', numberField: '12.5', dropdownField: 'option 1' });
    assert.equal(created.succeeded, true, JSON.stringify(created));
    const taken = await mate('GET', '/api/TakeNext/demo');
    assert.equal(taken.taskId, created.taskId);
    const solved = await mate('POST', '/api/Solved', { taskId: taken.taskId, reason: 'Paid' });
    assert.deepEqual([solved.succeeded, solved.queue], [true, 'Solved']);

    const index = await fetch(`${base}/`);
    assert.equal(index.status, 200);
    const html = await index.text();
    const script = html.match(/<script[^>]+src="(\/assets\/[^"]+\.js)"/)?.[1];
    assert.ok(script, `the web app's index names its script:\n${html}`);
    const asset = await fetch(`${base}${script}`);
    assert.equal(asset.status, 200, `${script} is served`);
    await asset.arrayBuffer();

    server.kill('SIGTERM');
    assert.equal(await exited, 0, `SIGTERM drains and exits 0:\n${err}`);
    assert.equal(err, '');
    lap('stopped');
  } finally {
    server.kill('SIGKILL');
    await exited;
    writeLogLines(
      out
        .split('\n')
        .filter((l) => l.startsWith('{"level":'))
        .join('\n'),
    );
  }
});
