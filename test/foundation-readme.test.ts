/** The README's configuration table and quick start stay true to the code. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { SETTINGS } from '../src/config.js';
import { ROOT } from './foundation-support.js';

const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');

function cell(s: string): string {
  return s.trim().replace(/^`|`$/g, '').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/\\\|/g, '|');
}

test('the configuration table lists every setting with its flag, default and meaning, in order', () => {
  const block = readme.match(/<!-- settings:start[^>]*-->\n([\s\S]*?)<!-- settings:end -->/);
  assert.ok(block, 'the README has the settings table markers');
  const rows = block[1]
    .trim()
    .split('\n')
    .slice(2)
    .map((line) =>
      line
        .replace(/^\||\|$/g, '')
        .split(/(?<!\\)\|/)
        .map(cell),
    );
  assert.deepEqual(
    rows,
    SETTINGS.map((s) => [s.env, s.flag, s.default === null ? '(unset)' : String(s.default), s.description]),
    'regenerate the table from SETTINGS in src/config.ts',
  );
});

test('the quick start is two commands: install-and-start, then the tests', () => {
  const quick = readme.split('## Quick start')[1]?.match(/```sh\n([\s\S]*?)```/);
  assert.ok(quick, 'a quick start code block');
  const commands = quick[1]
    .trim()
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim());
  assert.deepEqual(commands, ['npm install && npm start', 'npm test']);
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  // the quick start runs the `queuemate` command, as the package and the container do (compiled)
  assert.equal(pkg.scripts.start, `node ${pkg.bin.queuemate} start`);
  assert.ok(pkg.scripts.test);
});
