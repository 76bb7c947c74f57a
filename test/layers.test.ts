/** The layering and unused-dependency checks of scripts/check-layers.ts (the server's src and the web app's web/src), on synthetic trees and on this repository. */
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

test('the web app: a clean tree passes; pages read their route by id, the router imports the pages', (t) => {
  const root = tree(t, {
    'web/src/main.tsx': "import { router } from './router';\nimport { ApiError } from './lib/http';\n",
    'web/src/router.tsx': [
      "import { createRouter } from '@tanstack/react-router';",
      "import { OverviewPage } from './pages/Overview';",
      "const QueuePage = () => import('./pages/queue/QueuePage');",
      "import { parseQueueSearch } from './lib/queue-search';",
    ].join('\n'),
    'web/src/pages/Overview.tsx': "import classes from './Overview.module.css';\nimport { processesQuery } from '../api/queries';\n",
    'web/src/pages/Overview.module.css': '.count { padding: 4px; }\n',
    'web/src/pages/queue/QueuePage.tsx': [
      "import { getRouteApi } from '@tanstack/react-router';",
      "import { QueueTable } from './QueueTable';",
      "import { DataTable } from '../../components/DataTable';",
      "import type { QueueSearch } from '../../lib/queue-search';",
    ].join('\n'),
    'web/src/pages/queue/QueueTable.tsx': "import { clickRow } from '../../lib/selection';\n",
    'web/src/pages/queue/QueueTable.test.tsx': "import { QueueTable } from './QueueTable';\n",
    'web/src/components/DataTable.tsx': "import { Table } from '@mantine/core';\n",
    'web/src/api/queries.ts': "import { api } from '../lib/http';\nimport { taskListQuery } from '../lib/queue-search';\n",
    'web/src/lib/http.ts': "import type { ApiErrorBody } from './api-types';\n",
    'web/src/lib/api-types.ts': "import type { paths } from '@queuemate/client';\n",
    'web/src/lib/queue-search.ts': "import type { QueueName } from './api-types';\n",
    'web/src/lib/selection.ts': 'export const emptySelection = {};\n',
  });
  assert.deepEqual(checkLayers(root), []);
});

test('the web app: a page importing the router, and files importing each other, are reported as cycles', (t) => {
  const root = tree(t, {
    'web/src/router.tsx': "const TaskPage = () => import('./pages/Task');\nimport { SignInPage } from './pages/SignIn';\n",
    'web/src/pages/Task.tsx': "import { taskRoute } from '../router';\n",
    'web/src/pages/SignIn.tsx': "import { signInRoute } from '../router';\n",
    'web/src/api/live.tsx': "import { staleKeys } from './live-events';\n",
    'web/src/api/live-events.ts': "import { POLL_MS } from './live';\n",
  });
  const problems = checkLayers(root);
  assert.ok(problems.includes('import cycle between folders: web/src/pages → web/src/router.tsx → web/src/pages'), problems.join('\n'));
  assert.ok(
    problems.includes('import cycle between files: web/src/pages/SignIn.tsx → web/src/router.tsx → web/src/pages/SignIn.tsx'),
    problems.join('\n'),
  );
  assert.ok(
    problems.includes('import cycle between files: web/src/api/live-events.ts → web/src/api/live.tsx → web/src/api/live-events.ts'),
    problems.join('\n'),
  );
  assert.equal(problems.length, 3, problems.join('\n'));
});

test('the web app: web/src/lib importing the rest of the app, and a relative import out of web/src, are reported', (t) => {
  const root = tree(t, {
    'web/src/lib/roles.ts': "import { PERMISSIONS } from '../../../client/src/permissions';\nimport type { Role } from '../api/types';\n",
    'web/src/api/types.ts': "import type { paths } from '../../../client/src/schema';\nimport { createApp } from '../../../src/app.js';\n",
    'client/src/permissions.ts': 'export const PERMISSIONS = {};\n',
    'client/src/schema.ts': 'export interface paths {}\n',
    'src/app.ts': 'export const createApp = 1;\n',
  });
  const problems = checkLayers(root);
  const expected = [
    'web/src/lib/roles.ts: imports client/src/permissions.ts, outside web/src',
    'web/src/lib/roles.ts: web/src/lib imports web/src/api/types.ts',
    'web/src/api/types.ts: imports client/src/schema.ts, outside web/src',
    'web/src/api/types.ts: imports src/app.ts, outside web/src',
  ];
  for (const e of expected)
    assert.ok(
      problems.some((p) => p.startsWith(e)),
      `missing "${e}" in\n${problems.join('\n')}`,
    );
  assert.equal(problems.length, expected.length, problems.join('\n'));
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
