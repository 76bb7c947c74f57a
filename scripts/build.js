// @ts-check
/**
 * Builds what Queuemate runs: the server compiled by tsc (src/ → dist/src/, with the SQL migrations
 * copied beside the compiled migrator) and the web app built by Vite (web/ → web/dist/).
 *
 *   node scripts/build.js             both, from scratch (`npm run build`)
 *   node scripts/build.js --if-stale  only what is missing or older than its sources (`npm pack`)
 *
 * bin/queuemate.js calls ensureServerBuild() before it runs a command in a checkout, so the quick
 * start (`npm install && npm start`) runs the same compiled JavaScript as production; the start then
 * builds the web app when it needs it (src/web/build.ts). Plain JavaScript, because it runs before
 * anything is compiled and the compiled start loads no TypeScript loader.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * @typedef {{ info(msg: string): void; warn(msg: string): void }} BuildLog
 * @typedef {{ state: 'missing' } | { state: 'stale'; changed: string } | { state: 'fresh' }} BuildState
 */

/** The checkout this script belongs to. */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** What the compiled server depends on, relative to the root; a change to any of them makes a new build necessary. */
const SERVER_SOURCES = ['src', 'tsconfig.json', 'tsconfig.build.json'];

/** Written after a whole build succeeded: a build stopped halfway leaves none, so the next start builds again. */
const STAMP = path.join('dist', 'server-build.stamp');

/** @type {BuildLog} */
const consoleLog = {
  info: (msg) => process.stdout.write(msg + '\n'),
  warn: (msg) => process.stderr.write(`queuemate: ${msg}\n`),
};

/**
 * The newest modification under `entry`, directories included: removing or renaming a source file
 * changes only its folder's time, and the build must drop the file's compiled copy.
 * @param {string} entry
 * @returns {{ file: string; mtimeMs: number } | null}
 */
function newest(entry) {
  if (!existsSync(entry)) return null;
  const info = statSync(entry);
  /** @type {{ file: string; mtimeMs: number }} */
  let best = { file: entry, mtimeMs: info.mtimeMs };
  if (info.isDirectory()) {
    for (const name of readdirSync(entry)) {
      const found = newest(path.join(entry, name));
      if (found && found.mtimeMs > best.mtimeMs) best = found;
    }
  }
  return best;
}

/**
 * Whether dist/ holds a whole build at least as new as every source of the server.
 * @param {string} root
 * @returns {BuildState}
 */
export function serverBuildState(root = ROOT) {
  const stamp = path.join(root, STAMP);
  if (!existsSync(stamp) || !existsSync(path.join(root, 'dist', 'src', 'main.js'))) return { state: 'missing' };
  const built = statSync(stamp).mtimeMs;
  for (const entry of SERVER_SOURCES) {
    const found = newest(path.join(root, entry));
    if (found && found.mtimeMs > built) return { state: 'stale', changed: path.relative(root, found.file) };
  }
  return { state: 'fresh' };
}

/**
 * Compiles src/ into dist/src/ from scratch (so a removed source leaves no compiled copy behind)
 * and copies the migrations next to the compiled migrator, which reads them from its own folder.
 * @param {string} root
 */
export function buildServer(root = ROOT) {
  const tsc = createRequire(path.join(root, 'package.json')).resolve('typescript/bin/tsc');
  rmSync(path.join(root, STAMP), { force: true });
  rmSync(path.join(root, 'dist', 'src'), { recursive: true, force: true });
  const r = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`the server did not compile (tsc exited with ${r.status ?? r.signal}); see the errors above`);
  cpSync(path.join(root, 'src', 'db', 'migrations'), path.join(root, 'dist', 'src', 'db', 'migrations'), { recursive: true });
  writeFileSync(path.join(root, STAMP), `${new Date().toISOString()}\n`);
}

/** @param {string} root */
function hasTypeScript(root) {
  try {
    createRequire(path.join(root, 'package.json')).resolve('typescript/bin/tsc');
    return true;
  } catch {
    return false;
  }
}

/**
 * Compiles the server when dist/ is missing or older than its sources, and says so. Without
 * TypeScript (an install with --omit=dev) a stale build is run as it is, with a warning.
 * @param {{ root?: string; log?: BuildLog }} [opts]
 */
export function ensureServerBuild({ root = ROOT, log = consoleLog } = {}) {
  const state = serverBuildState(root);
  if (state.state === 'fresh') return;
  const why = state.state === 'missing' ? 'dist/src is missing' : `${state.changed} is newer than the build`;
  if (!hasTypeScript(root)) {
    if (state.state === 'missing')
      throw new Error(`the server is not built (${why}) and TypeScript is not installed: run "npm install", then "npm run build"`);
    log.warn(`the server's build is older than its sources (${why}) and TypeScript is not installed: running the build as it is`);
    return;
  }
  log.info(`Building the server (${why}); this takes about half a minute…`);
  const started = Date.now();
  buildServer(root);
  log.info(`Built the server in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/**
 * The web app through the compiled src/web/build.ts, so `npm run build` and the start build it alike.
 * @param {{ root: string; force: boolean; log: BuildLog }} opts
 */
async function buildWebApp({ root, force, log }) {
  /** @type {typeof import('../src/web/build.js')} */
  const web = await import(pathToFileURL(path.join(root, 'dist', 'src', 'web', 'build.js')).href);
  const webDir = web.findWebDir(root);
  if (!webDir) throw new Error(`no web app in ${root}`);
  await web.ensureWebBuild({ webDir, log, force });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const ifStale = process.argv.includes('--if-stale');
  try {
    if (ifStale) ensureServerBuild();
    else {
      const started = Date.now();
      buildServer();
      consoleLog.info(`Built the server in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    }
    await buildWebApp({ root: ROOT, force: !ifStale, log: consoleLog });
  } catch (err) {
    process.stderr.write(`build: ${/** @type {Error} */ (err).message}\n`);
    process.exit(1);
  }
}
