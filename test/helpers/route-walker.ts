/**
 * The one security walk over every /v1 route (STYLE principle 12), enumerated from the routes'
 * table (PEOPLE_ROUTES, each with its permission), so that a new route is walked without anyone
 * adding it here: without credentials and with a Mate's token (401), with each role (403 exactly
 * where the permission table says, and nothing else refused), and as a person of another tenant
 * naming ids that exist in the first (404 with the body a missing id gets, never 403). Each walk
 * checks that nothing stored changed.
 *
 * A route with a path parameter needs an id of its kind (the path segment before it: `tasks`,
 * `rules`, ...) in the fixture: the walk fails naming the missing kind. A route whose body `{}`
 * does not pass its schema needs a sample body below, so that the walk reaches the lookup rather
 * than the validation: without one, the other-tenant walk fails on the route's 400.
 */
import assert from 'node:assert/strict';
import type { FastifyInstance, InjectOptions } from 'fastify';
import type { Kysely } from 'kysely';
import { PEOPLE_ROUTES } from '../../src/people-api/plugin.js';
import type { PeopleRoute } from '../../src/people-api/route.js';
import { allows, isPublic } from '../../src/people-api/permissions.js';
import { ROLES, type Role } from '../../src/accounts/service.js';
import { asPerson, type TestPerson } from './people.js';
import { snapshot } from './snapshot.js';

/** An id of each kind that exists in the walked tenant, keyed by the path segment before the parameter. */
export type RouteIds = Record<string, number | string>;

/** An id of each kind that exists nowhere. */
const MISSING: RouteIds = new Proxy({} as RouteIds, {
  get: (_t, kind) => (kind === 'jobs' ? '00000000-0000-4000-8000-00000000dead' : 987_654_321),
});

/** Bodies that pass each route's schema; routes not listed send `{}` when they take a body. */
export const SAMPLE_BODIES: Record<string, unknown> = {
  'PATCH /users/:id': { name: 'Renamed' },
  'POST /users/:id/password': { password: 'another-long-password' },
  'PATCH /mates/:id': { name: 'Renamed' },
  'POST /mates/:id/password': { password: 'another-long-password' },
  'PATCH /processes/:id': { name: 'Renamed' },
  'PATCH /processes/:id/settings': { tasksEnabled: true },
  'POST /processes/:id/gate': { open: false },
  'PUT /processes/:id/fields': { fields: [{ name: 'n', type: 'text' }] },
  'POST /processes/:id/rules': { name: 'another', type: 'text' },
  'PATCH /processes/:id/rules/:ruleId': { name: 'renamed' },
  'PUT /processes/:id/rules/:ruleId/value': { value: 'x' },
  'POST /processes/:id/tasks': { n: 'x' },
  'PATCH /tasks/:id': { urgent: true },
  'POST /tasks/:id/move': { queue: 'Manual' },
  'POST /tasks/:id/comments': { text: 'hello' },
  'POST /tasks/:id/reopen': { queue: 'Ready' },
  'POST /processes/:id/tasks/bulk/count': { action: 'urgent', urgent: true, filter: {} },
  'POST /processes/:id/tasks/bulk': { action: 'urgent', urgent: true, filter: {} },
  'POST /notifications/:id/read': { read: true },
  'PATCH /webhooks/:id': { enabled: false },
};

/** Query strings the routes require. */
export const SAMPLE_QUERIES: Record<string, string> = {
  'GET /kpis': 'from=2026-01-01&to=2026-01-31',
  'GET /kpis/export': 'from=2026-01-01&to=2026-01-31',
};

const key = (r: PeopleRoute) => `${r.method} ${r.url}`;

/** The kind of each path parameter: the segment before it (`/processes/:id/rules/:ruleId` → processes, rules). */
export function paramKinds(url: string): { name: string; kind: string }[] {
  const parts = url.split('/').filter(Boolean);
  return parts.flatMap((p, i) => (p.startsWith(':') ? [{ name: p.slice(1), kind: parts[i - 1] }] : []));
}

/** The request of a route with the ids of `ids` in its path. */
export function requestOf(route: PeopleRoute, ids: RouteIds): InjectOptions {
  let url: string = `/v1${route.url}`;
  for (const { name, kind } of paramKinds(route.url)) {
    const id = ids[kind];
    assert.ok(id !== undefined, `${key(route)}: the walk has no id of kind "${kind}"; add one to the fixture`);
    url = url.replace(`:${name}`, String(id));
  }
  const query = SAMPLE_QUERIES[key(route)];
  if (query) url += `?${query}`;
  if (route.raw) return { method: route.method, url: `${url}?dryRun=true`, headers: { 'content-type': 'text/csv' }, payload: 'n\nx\n' };
  const body = route.body ? (SAMPLE_BODIES[key(route)] ?? {}) : undefined;
  return { method: route.method, url, ...(body === undefined ? {} : { payload: body as Record<string, unknown> }) };
}

/** The walked routes: every /v1 route but sign-in (public) and the live stream (it never ends; its own tests cover it). */
export function walkedRoutes(): PeopleRoute[] {
  return PEOPLE_ROUTES.filter((r) => !isPublic(r.permission));
}

/**
 * The stored state, for "nothing changed": every tenant's rows. Personal tokens record their last
 * use on every request, refused or not: that column alone is left out.
 */
export async function storedState(db: Kysely<any>): Promise<Record<string, string[]>> {
  const s = await snapshot(db);
  s.user_tokens = (s.user_tokens ?? []).map((j) => {
    const { last_used_at: _, ...rest } = JSON.parse(j);
    return JSON.stringify(rest);
  });
  return s;
}

/** No credentials, and a Mate's token: 401 on every route; nothing changes. */
export async function walkWithoutPerson(app: FastifyInstance, db: Kysely<any>, ids: RouteIds, mateToken: string): Promise<number> {
  const before = await storedState(db);
  let n = 0;
  for (const route of walkedRoutes()) {
    const req = requestOf(route, ids);
    const none = await app.inject(req);
    assert.equal(none.statusCode, 401, `no credentials: ${key(route)} → ${none.statusCode} ${none.body}`);
    assert.equal(none.json().code, 'unauthenticated', key(route));
    const mate = await app.inject({ ...req, headers: { ...(req.headers ?? {}), authorization: `Bearer ${mateToken}` } });
    assert.equal(mate.statusCode, 401, `a Mate token: ${key(route)} → ${mate.statusCode} ${mate.body}`);
    n += 2;
  }
  assert.deepEqual(await storedState(db), before, 'a refused request changed something');
  return n;
}

/**
 * Each role on each route, with ids that exist: 403 `forbidden` exactly where the permission table
 * refuses the role, before anything is read or changed. Where it allows the role, reads are tried
 * (a write would happen) and answer 200, showing that the ids exist. Nothing changes.
 */
export async function walkRoles(app: FastifyInstance, db: Kysely<any>, ids: RouteIds, people: Record<Role, TestPerson>): Promise<number> {
  const before = await storedState(db);
  let refused = 0;
  for (const route of walkedRoutes()) {
    for (const role of ROLES) {
      const allowed = allows(route.permission, role);
      if (allowed && (route.method !== 'GET' || route.stream)) continue;
      const res = await asPerson(app, people[role], requestOf(route, ids));
      const label = `${role} ${key(route)} → ${res.statusCode} ${res.body.slice(0, 300)}`;
      if (allowed) {
        assert.equal(res.statusCode, 200, label);
      } else {
        assert.equal(res.statusCode, 403, label);
        assert.equal(res.json().code, 'forbidden', label);
        refused++;
      }
    }
  }
  assert.deepEqual(await storedState(db), before, 'a refused request changed something');
  return refused;
}

/** A body without its request id, and the id the caller named replaced by `<id>`. */
function normalised(body: string, namedIds: (number | string)[]): unknown {
  const { requestId: _, ...rest } = JSON.parse(body) as Record<string, unknown>;
  let text = JSON.stringify(rest);
  for (const id of namedIds) text = text.replace(new RegExp(`(?<![\\w-])${String(id)}(?![\\w-])`, 'g'), '<id>');
  return JSON.parse(text);
}

/**
 * A person of another tenant (whose role allows every route) naming the walked tenant's ids: 404,
 * with the body an id that exists nowhere gets (the named id and the request id aside), on every
 * route with an id in its path; nothing of either tenant changes.
 */
export async function walkOtherTenant(app: FastifyInstance, db: Kysely<any>, ids: RouteIds, stranger: TestPerson): Promise<number> {
  const before = await storedState(db);
  let n = 0;
  for (const route of walkedRoutes()) {
    const kinds = paramKinds(route.url);
    if (kinds.length === 0 || route.stream) continue;
    const theirs = await asPerson(app, stranger, requestOf(route, ids));
    const missing = await asPerson(app, stranger, requestOf(route, MISSING));
    const label = `${key(route)} → ${theirs.statusCode} ${theirs.body.slice(0, 300)}`;
    assert.equal(theirs.statusCode, 404, label);
    assert.equal(missing.statusCode, 404, `missing id: ${key(route)} → ${missing.statusCode} ${missing.body.slice(0, 300)}`);
    assert.deepEqual(
      normalised(
        theirs.body,
        kinds.map(({ kind }) => ids[kind]),
      ),
      normalised(
        missing.body,
        kinds.map(({ kind }) => MISSING[kind]),
      ),
      `${key(route)}: another tenant's id is answered unlike a missing one`,
    );
    n++;
  }
  assert.deepEqual(await storedState(db), before, "another tenant's request changed something");
  return n;
}
