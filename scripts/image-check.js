// @ts-check
/**
 * The part of scripts/image-check.sh that runs inside the built image, as the image's user and with
 * its environment (no curl there: Node's fetch). It starts `queuemate start` as the image's command
 * does, waits for /readyz, runs the image's HEALTHCHECK command (HEALTHCHECK_SCRIPT, its `node -e`
 * argument), checks that the server process is not root, gets a Mate token with the demo
 * credentials the first start prints, creates, takes and solves a task, and stops the server with
 * SIGTERM, which must drain and exit 0. Exits non-zero with the reason on the first failure.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const base = `http://127.0.0.1:${process.env.PORT}`;
const healthcheck = process.env.HEALTHCHECK_SCRIPT;
const started = Date.now();

/** @param {string} msg */
const say = (msg) => process.stdout.write(`image-check: ${msg} (${((Date.now() - started) / 1000).toFixed(1)} s)\n`);

/** @param {string} msg */
function fail(msg) {
  process.stderr.write(
    `image-check: FAILED: ${msg}\n${out ? `--- server output\n${out}\n` : ''}${err ? `--- server errors\n${err}\n` : ''}`,
  );
  server.kill('SIGKILL');
  process.exit(1);
}

/** @param {number} ms */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const server = spawn('queuemate', ['start'], { stdio: ['ignore', 'pipe', 'pipe'] });
let out = '';
let err = '';
server.stdout.setEncoding('utf8').on('data', (d) => (out += d));
server.stderr.setEncoding('utf8').on('data', (d) => (err += d));
/** @type {Promise<number | null>} */
const exited = new Promise((resolve) => server.on('close', (code) => resolve(code)));

// a first start creates the embedded store: 25-45 s measured on 2 busy cores, longer when busier
for (;;) {
  if (server.exitCode !== null) fail(`the server exited with ${server.exitCode}`);
  if (Date.now() - started > 180_000) fail('/readyz did not answer 200 within 180 s');
  const ready = await fetch(`${base}/readyz`).then(
    (r) => r.status,
    () => 0,
  );
  if (ready === 200) break;
  await sleep(250);
}
say(`/readyz answers 200 at ${base}`);

if (!healthcheck) fail('HEALTHCHECK_SCRIPT is not set: the image has no HEALTHCHECK');
else {
  const probe = spawnSync(process.execPath, ['-e', healthcheck], { timeout: 10_000 });
  if (probe.status !== 0) fail(`the HEALTHCHECK command exited with ${probe.status}: ${probe.stderr}`);
  say('the HEALTHCHECK command exits 0');
}

const uid = readFileSync(`/proc/${server.pid}/status`, 'utf8').match(/^Uid:\s+(\d+)/m)?.[1];
const user = readFileSync('/etc/passwd', 'utf8')
  .split('\n')
  .find((l) => l.split(':')[2] === uid)
  ?.split(':')[0];
if (uid === undefined || uid === '0') fail(`the server runs as uid ${uid}`);
say(`the server (PID ${server.pid}) runs as uid ${uid} (${user ?? 'no name'}), not root`);

const secret = out.match(/^ {2}API secret: +(\S+)$/m)?.[1];
const password = out.match(/^ {2}Mate: +demo-mate \/ (\S+)$/m)?.[1];
if (!secret || !password) fail('the first start printed no demo credentials');
const tokenAnswer = await fetch(`${base}/connect/token`, {
  method: 'POST',
  body: new URLSearchParams({
    grant_type: 'password',
    client_id: 'demo',
    client_secret: `${secret}`,
    username: 'demo-mate',
    password: `${password}`,
  }),
});
if (tokenAnswer.status !== 200) fail(`POST /connect/token answered ${tokenAnswer.status}`);
const token = (await tokenAnswer.json()).access_token;
say('a Mate token');

/**
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body]
 * @returns {Promise<Record<string, unknown>>}
 */
async function mate(method, path, body) {
  const r = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const answer = await r.json();
  if (r.status !== 200) fail(`${method} ${path} answered ${r.status}: ${JSON.stringify(answer)}`);
  return answer;
}

const created = await mate('POST', '/api/CreateTask/demo', { coreSystemKey: 'IMG-1', numberField: '12.5', dropdownField: 'option 1' });
if (created.succeeded !== true) fail(`CreateTask: ${JSON.stringify(created)}`);
const taken = await mate('GET', '/api/TakeNext/demo');
if (taken.taskId !== created.taskId) fail(`TakeNext handed out ${taken.taskId}, not ${created.taskId}`);
const solved = await mate('POST', '/api/Solved', { taskId: taken.taskId, reason: 'Checked' });
if (solved.queue !== 'Solved') fail(`Solved: ${JSON.stringify(solved)}`);
say(`task ${created.taskId} created, taken and solved`);

const index = await fetch(`${base}/`);
if (index.status !== 200 || !(await index.text()).includes('<script')) fail(`GET / answered ${index.status} without the web app`);
const health = await (await fetch(`${base}/healthz`)).json();
say(`the web app is served; /healthz: ${JSON.stringify(health)}`);

server.kill('SIGTERM');
const code = await Promise.race([exited, sleep(15_000).then(() => 'timeout')]);
if (code !== 0) fail(`after SIGTERM the server ended with ${code}`);
say('SIGTERM: the server drained and exited 0');
