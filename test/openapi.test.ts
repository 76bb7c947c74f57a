import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { testApp, type TestApp } from './helpers/app.js';

let t: TestApp;
before(async () => {
  t = await testApp();
});
after(() => t.close());

const ENDPOINTS = [
  'OkToRun',
  'StartOrGetRun',
  'StartRun',
  'FinishRun',
  'Failure',
  'GetRules',
  'TakeNext',
  'TakeMany',
  'CreateTask',
  'CreateTasks',
  'CreateAndTakeTask',
  'UpdateTask',
  'Solved',
  'Manual',
  'Error',
  'Retry',
  'SolvedAsync',
  'ManualAsync',
  'ErrorAsync',
  'RetryAsync',
  'Return',
  'ExtendLock',
];

test('/docs/json documents every Mate endpoint once (the /apimate alias hidden) and the token endpoint', async () => {
  const r = await t.app.inject({ method: 'GET', url: '/docs/json' });
  assert.equal(r.statusCode, 200);
  const spec = r.json();
  assert.match(spec.openapi, /^3\./);
  const paths = Object.keys(spec.paths);
  for (const name of ENDPOINTS) {
    const p = paths.find((x) => x === `/api/${name}` || x === `/api/${name}/{processKey}`);
    assert.ok(p, `${name} is documented`);
    const op = Object.values(spec.paths[p!])[0] as any;
    assert.deepEqual(op.security, [{ bearer: [] }], `${name} needs a bearer token`);
    assert.ok(op.responses['200'], `${name} documents its answer`);
  }
  assert.ok(paths.includes('/connect/token'));
  assert.ok(!paths.some((p) => p.toLowerCase().startsWith('/apimate')), 'the legacy alias is not listed twice');
  assert.equal(spec.components.securitySchemes.bearer.scheme, 'bearer');
});

test('/docs serves the Swagger UI', async () => {
  const r = await t.app.inject({ method: 'GET', url: '/docs/' });
  assert.equal(r.statusCode, 200);
  assert.match(r.body, /swagger/i);
});
