/**
 * Where Queuemate's own files are, and which version it is: the folder of the package.json named
 * "queuemate" above this file. That folder is the checkout (this file runs as src/lib/package.ts
 * through tsx, or compiled as dist/src/lib/package.js) or the installed package
 * (node_modules/queuemate/dist/src/lib/package.js); it holds web/ and, in a checkout, the sources.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findPackage(from: string): { root: string; version: string } {
  for (let dir = from; ; dir = path.dirname(dir)) {
    try {
      const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (manifest.name === 'queuemate' && manifest.version) return { root: dir, version: manifest.version };
    } catch {
      // no package.json here, or not one that parses: keep looking upward
    }
    if (path.dirname(dir) === dir) throw new Error(`no package.json of queuemate above ${from}`);
  }
}

const found = findPackage(path.dirname(fileURLToPath(import.meta.url)));

/** The folder holding Queuemate's package.json. */
export const PACKAGE_ROOT = found.root;

/** The version in that package.json: `queuemate --version` and /healthz report it. */
export const VERSION = found.version;
