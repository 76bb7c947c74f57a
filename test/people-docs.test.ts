/** docs/people-api.md shows the permission table, the status map and every route with its permission and a curl example, as the code has them. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { PEOPLE_ROUTES } from '../src/people-api/plugin.js';
import { DOC_PATH, regenerate } from '../src/people-api/reference.js';
import { PERMISSIONS, allows, isPublic, type Permission } from '../src/people-api/permissions.js';

const doc = fs.readFileSync(DOC_PATH, 'utf8');

test('the generated sections of docs/people-api.md are current (regenerate: node --import tsx src/people-api/reference.ts)', () => {
  assert.equal(doc, regenerate(doc, PEOPLE_ROUTES));
});

test('every route is listed with its permission and has a curl example of its own path', () => {
  for (const r of PEOPLE_ROUTES) {
    assert.ok(doc.includes(`| \`${r.method} /v1${r.url}\` | \`${r.permission}\` |`), `${r.method} ${r.url}`);
    const concrete = new RegExp(`\\$QM/v1${r.url.replace(/:[A-Za-z]+/g, '[0-9a-f-]+').replace(/\//g, '\\/')}(["?' ]|$)`);
    assert.match(r.curl, /^curl /, `${r.method} ${r.url}`);
    assert.match(r.curl, concrete, `the example of ${r.method} ${r.url} calls its path`);
    if (r.method !== 'GET') assert.match(r.curl, new RegExp(`-X ${r.method}`), `${r.method} ${r.url}`);
  }
});

test('admin holds every permission but sign-in; viewer only reads', () => {
  for (const p of Object.keys(PERMISSIONS) as Permission[]) {
    if (isPublic(p)) continue;
    assert.ok(allows(p, 'admin'), p);
  }
  for (const r of PEOPLE_ROUTES) {
    if (r.method !== 'GET' && r.permission !== 'self' && !isPublic(r.permission))
      assert.ok(!allows(r.permission, 'viewer'), `${r.method} ${r.url}`);
  }
});
