/** The layering and unused-dependency checks of scripts/check-layers.ts, on synthetic trees and on this repository. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkDependencies, checkLayers } from '../scripts/check-layers.js';

/** A temporary tree of the given files, removed when the test ends. */
function tree(t: { after: (fn: () => void) => void }, files: Record<string, string>): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'queuemate-layers-'));
  t.after(() => fs.rmSync(root, { recursive: true, force: true }));
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    fs.writeFileSync(path.join(root, name), text);
  }
  return root;
}

test('a clean tree passes: surfaces import the domain, the domain imports lib and db', (t) => {
  const root = tree(t, {
    'src/app.ts': "import Fastify from 'fastify';\nimport { routes } from './mate-api/plugin.js';\n",
    'src/mate-api/plugin.ts': "import type { FastifyInstance } from 'fastify';\nimport { take } from '../tasks/take.js';\n",
    'src/tasks/take.ts': "import { sql } from 'kysely';\nimport { now } from '../lib/clock.js';\nimport { q } from '../db/store.js';\n",
    'src/db/store.ts': "import { now } from '../lib/clock.js';\n",
    'src/lib/clock.ts': "import fs from 'node:fs';\nimport { x } from './other.js';\n",
    'src/lib/other.ts': 'export const x = 1;\n',
  });
  assert.deepEqual(checkLayers(root), []);
});

test('a domain folder importing Fastify or an HTTP surface, and src/lib importing the domain, are reported', (t) => {
  const root = tree(t, {
    'src/tasks/take.ts': [
      "import type { FastifyReply } from 'fastify';",
      "import swagger from '@fastify/swagger';",
      "import { send } from '../mate-api/answers.js';",
      "import { base } from '../http/errors.js';",
      "import type { Services } from '../services.js';",
      '// a comment naming "../people-api/x.js" is no import',
    ].join('\n'),
    'src/mate-api/answers.ts': 'export const send = 1;\n',
    'src/http/errors.ts': 'export const base = 1;\n',
    'src/services.ts': 'export type Services = object;\n',
    'src/lib/values.ts': "export { take } from '../tasks/take.js';\n",
  });
  const problems = checkLayers(root);
  const expected = [
    "src/tasks/take.ts: domain code imports 'fastify'",
    "src/tasks/take.ts: domain code imports '@fastify/swagger'",
    'src/tasks/take.ts: domain code imports src/mate-api/answers.ts',
    'src/tasks/take.ts: domain code imports src/http/errors.ts',
    'src/tasks/take.ts: domain code imports src/services.ts',
    'src/lib/values.ts: src/lib imports src/tasks/take.ts',
  ];
  for (const e of expected)
    assert.ok(
      problems.some((p) => p.startsWith(e)),
      `missing "${e}" in\n${problems.join('\n')}`,
    );
  assert.equal(problems.length, expected.length, problems.join('\n'));
});

test('an import cycle between folders and one between files are reported with their path', (t) => {
  const root = tree(t, {
    'src/runs/service.ts': "import { take } from '../tasks/take.js';\n",
    'src/tasks/take.ts': "import { gate } from '../processes/gate.js';\n",
    'src/processes/gate.ts': "import type { Run } from '../runs/service.js';\n",
    'src/processes/cache.ts': "import { load } from './store.js';\n",
    'src/processes/store.ts': "import { cached } from './cache.js';\n",
  });
  const problems = checkLayers(root);
  assert.ok(problems.includes('import cycle between folders: src/processes → src/runs → src/tasks → src/processes'), problems.join('\n'));
  assert.ok(
    problems.includes('import cycle between files: src/processes/cache.ts → src/processes/store.ts → src/processes/cache.ts'),
    problems.join('\n'),
  );
  assert.ok(
    problems.includes(
      'import cycle between files: src/processes/gate.ts → src/runs/service.ts → src/tasks/take.ts → src/processes/gate.ts',
    ),
    problems.join('\n'),
  );
  assert.equal(problems.length, 3, problems.join('\n'));
});

test('a dependency used nowhere is reported; imports, scripts, bins, @types and declared exceptions count as uses', (t) => {
  const root = tree(t, {
    'package.json': JSON.stringify({
      dependencies: { kysely: '1', '@scope/lib': '1', leftover: '1', planned: '1', tsx: '1' },
      devDependencies: { '@types/node': '1', '@types/pg': '1', pg: '1', prettier: '1', 'some-cli': '1', '@types/leftover2': '1' },
      scripts: { lint: 'prettier --check .', test: 'node --import tsx --test', gen: 'thecli generate' },
    }),
    'node_modules/some-cli/package.json': JSON.stringify({ name: 'some-cli', bin: { thecli: 'bin.js' } }),
    'src/a.ts': "import { sql } from 'kysely';\nimport fs from 'node:fs';\n",
    'bench/b.ts': "const m = await import('@scope/lib/sub');\nimport pg from 'pg';\n",
  });
  const problems = checkDependencies(root, { planned: 'lands with the next issue', gone: 'no longer declared' });
  assert.deepEqual(problems.sort(), [
    '@types/leftover2 is declared in package.json but used nowhere (drop it, or list it in UNUSED_ALLOWED with the reason)',
    'gone is listed in UNUSED_ALLOWED but not declared in package.json',
    'leftover is declared in package.json but used nowhere (drop it, or list it in UNUSED_ALLOWED with the reason)',
  ]);
  // an exception whose package is now imported must be removed from the list
  assert.deepEqual(checkDependencies(root, { kysely: 'old reason', planned: 'x', leftover: 'x', '@types/leftover2': 'x' }), [
    'kysely is used now: remove it from the exceptions in scripts/check-layers.ts',
  ]);
});

test('this repository passes both checks', () => {
  assert.deepEqual(checkLayers(process.cwd()), []);
  assert.deepEqual(checkDependencies(process.cwd()), []);
});
