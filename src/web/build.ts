/**
 * `npm start` on a fresh clone must serve the web app: ensureWebBuild() builds web/dist with Vite's
 * JS API when it is missing or older than the app's sources, and says so. A production install
 * without Vite (npm install --omit=dev) and an already built dist simply serve what is there, as
 * does the installed package, which holds web/dist and none of its sources.
 */
import { existsSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { PACKAGE_ROOT } from '../lib/package.js';

export interface WebBuildLog {
  info(msg: string): void;
  warn(msg: string): void;
}

export type WebBuildState = { state: 'missing' } | { state: 'stale'; changed: string } | { state: 'fresh' };

/** The files whose change makes a new build necessary (relative to webDir), plus the client types. */
const SOURCE_ENTRIES = ['src', 'public', 'index.html', 'vite.config.ts', 'package.json', 'tsconfig.json', '../client/src'];

/**
 * Queuemate's web/ folder (beside its package.json, whether this runs from src/ or the compiled
 * dist/src/): the app's sources and build in a checkout, only the build in the installed package.
 */
export function findWebDir(root = PACKAGE_ROOT): string | null {
  const web = path.join(root, 'web');
  const sources = existsSync(path.join(web, 'package.json')) && existsSync(path.join(web, 'index.html'));
  return sources || existsSync(path.join(web, 'dist', 'index.html')) ? web : null;
}

async function newestFile(entry: string): Promise<{ file: string; mtimeMs: number } | null> {
  const info = await stat(entry).catch(() => null);
  if (!info) return null;
  if (!info.isDirectory()) return { file: entry, mtimeMs: info.mtimeMs };
  let best: { file: string; mtimeMs: number } | null = null;
  for (const name of await readdir(entry)) {
    if (name === 'node_modules' || name.startsWith('.')) continue;
    const found = await newestFile(path.join(entry, name));
    if (found && (!best || found.mtimeMs > best.mtimeMs)) best = found;
  }
  return best;
}

/** Whether distDir holds a build at least as new as every source of webDir. */
export async function webBuildState(webDir: string, distDir: string): Promise<WebBuildState> {
  const built = await stat(path.join(distDir, 'index.html')).catch(() => null);
  if (!built) return { state: 'missing' };
  for (const entry of SOURCE_ENTRIES) {
    const newest = await newestFile(path.join(webDir, entry));
    if (newest && newest.mtimeMs > built.mtimeMs) return { state: 'stale', changed: path.relative(webDir, newest.file) };
  }
  return { state: 'fresh' };
}

/** Builds web/dist when it is missing or stale (always with `force`); answers the dist folder to serve. */
export async function ensureWebBuild(opts: { webDir: string; distDir?: string; log: WebBuildLog; force?: boolean }): Promise<string> {
  const distDir = opts.distDir ?? path.join(opts.webDir, 'dist');
  const state = await webBuildState(opts.webDir, distDir);
  if (state.state === 'fresh' && !opts.force) return distDir;
  const why =
    state.state === 'missing'
      ? `${distDir} is missing`
      : state.state === 'stale'
        ? `${state.changed} is newer than the build`
        : 'npm run build';
  let vite: typeof import('vite');
  try {
    vite = await import('vite');
  } catch {
    opts.log.warn(`The web app needs a build (${why}) but Vite is not installed; run "npm install" then "npm run build -w web".`);
    return distDir;
  }
  opts.log.info(`Building the web app (${why}); this takes a minute the first time…`);
  const started = Date.now();
  await vite.build({
    root: opts.webDir,
    configFile: path.join(opts.webDir, 'vite.config.ts'),
    logLevel: 'warn',
    build: { outDir: distDir, emptyOutDir: true },
  });
  opts.log.info(`Built the web app in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return distDir;
}
