/**
 * The client's generated files follow the server: `npm run client` (client/generate.ts) is run again
 * into a temporary folder, and what it writes must equal the committed client/src/schema.ts and
 * client/src/permissions.ts. A route schema or a permission changed without regenerating fails here,
 * where `tsc -p web` alone would still pass against the old types.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { generateClient } from '../client/generate.js';

const FILES = ['schema.ts', 'permissions.ts'] as const;

/** Where two texts first differ, as a line number and both lines. */
function firstDifference(committed: string, generated: string): string {
  const a = committed.split('\n');
  const b = generated.split('\n');
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (a[i] !== b[i]) return `line ${i + 1}\n  committed: ${a[i] ?? '(end of file)'}\n  generated: ${b[i] ?? '(end of file)'}`;
  }
  return 'no line differs';
}

test('client/src/schema.ts and permissions.ts are what `npm run client` generates from the server now', async () => {
  // the same function `npm run client` runs, in this process: what it would write, not written
  const { files } = await generateClient();
  for (const name of FILES) {
    const committed = fs.readFileSync(path.join('client', 'src', name), 'utf8');
    const generated = files[name];
    assert.ok(
      committed === generated,
      `client/src/${name} differs from what the server describes (${firstDifference(committed, generated)}).\n` +
        'Run `npm run client` and commit the result.',
    );
  }
});
