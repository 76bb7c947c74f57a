#!/usr/bin/env node
// @ts-check
// The `queuemate` command runs the compiled server (dist/src/main.js) with plain Node.js. In a
// checkout (src/ beside dist/) it first compiles the server when the build is missing or older
// than its sources (scripts/build.js), so `npm start` runs what production runs; the installed
// package holds only the compiled server and goes straight to it.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

if (existsSync(path.join(root, 'src', 'main.ts')) && existsSync(path.join(root, 'scripts', 'build.js'))) {
  const { ensureServerBuild } = await import('../scripts/build.js');
  try {
    ensureServerBuild({ root });
  } catch (err) {
    process.stderr.write(`queuemate: ${/** @type {Error} */ (err).message}\n`);
    process.exit(1);
  }
}

await import(pathToFileURL(path.join(root, 'dist', 'src', 'main.js')).href);
