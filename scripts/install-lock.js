// @ts-check
/**
 * Prepares an empty directory to install the packed Queuemate (`npm pack`) at the versions this
 * checkout's package-lock.json locks, rather than whatever is newest within package.json's ranges
 * on the day: it writes a package.json and a package-lock.json holding the locked packages outside
 * the workspaces and the development tree. `npm install <tarball>` there keeps every locked
 * version the package's ranges accept and leaves out the packages nothing needs.
 *
 *   node scripts/install-lock.js DIR
 *
 * The container image installs its package this way (Containerfile), and so does the package test
 * (test/serial/package.test.ts).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * @param {string} dir the directory to install into
 * @param {string} [root] the checkout whose lockfile to follow
 */
export function writeInstallLock(dir, root = ROOT) {
  /** @type {{ packages: Record<string, { dev?: boolean; link?: boolean }> }} */
  const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8'));
  const name = 'queuemate-install';
  /** @type {Record<string, unknown>} */
  const packages = { '': { name } };
  for (const [where, entry] of Object.entries(lock.packages)) {
    // the workspaces (web/, client/) are links; their own dependencies are the web app's build tools and libraries
    if (where.startsWith('node_modules/') && !where.startsWith('node_modules/@queuemate/') && !entry.dev && !entry.link) {
      packages[where] = entry;
    }
  }
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name, private: true }, null, 2) + '\n');
  writeFileSync(
    path.join(dir, 'package-lock.json'),
    JSON.stringify({ name, lockfileVersion: 3, requires: true, packages }, null, 2) + '\n',
  );
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dir = process.argv[2];
  if (!dir) {
    process.stderr.write('usage: node scripts/install-lock.js DIR\n');
    process.exit(2);
  }
  writeInstallLock(dir);
}
