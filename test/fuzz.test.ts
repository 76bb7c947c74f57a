/**
 * Property-based fuzzing (issue 7): the value readers, the date parser, the JSON reader and the
 * task-data reader never throw anything but a Refusal and never accept what PostgreSQL would
 * refuse or change; Mate API routes given arbitrary bodies and path segments never answer 500,
 * and a refused request changes nothing. Fixed seed: a failure replays exactly.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Refusal } from '../src/lib/errors.js';
import { parseJsonStrict } from '../src/lib/json.js';
import {
  isStorableText,
  readBoolean,
  readDecimal,
  readInteger,
  readText,
  toBoolean,
  toDecimal,
  toInteger,
  toText,
} from '../src/lib/values.js';
import { parseDateOnlyInput, parseDateTimeInput } from '../src/lib/time.js';
import { validateTaskData, type TaskField } from '../src/processes/task-data.js';
import { testApp, type TestApp } from './helpers/app.js';
import { seedTenant, type SeededTenant } from './helpers/seed.js';
import { Mate } from './helpers/mate.js';
import { snapshot } from './helpers/snapshot.js';

const SEED = 20261125;
/** Inputs tried by each property, for the closing figures. */
const tried: Record<string, number> = {};

/** Strings that go wrong: U+0000, lone surrogates, huge, control characters, any code unit. */
const nasty = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.constantFrom(
    '\u0000',
    '\ud800',
    '\udfff',
    'a\ud800b',
    '\ud83d\ude00',
    '',
    ' ',
    '1e309',
    '-0',
    '9007199254740993',
    'TRUE',
    '0001-01-01T00:00+14:00',
  ),
  fc.string({ unit: fc.constantFrom('\u0000', '\ud800', '\udc00', 'a', '"', '\\', '\n', '{', '[') }),
  fc.constant('x'.repeat(20_000)),
);
const numbers = fc.oneof(fc.double(), fc.integer(), fc.constantFrom(Infinity, -Infinity, NaN, -0, 2 ** 53, 2 ** 53 + 2, 1e309, 5e-324));
const leaf = fc.oneof(nasty, numbers, fc.boolean(), fc.constant(null));
const value = fc.letrec((tie) => ({
  any: fc.oneof({ depthSize: 'small' }, leaf, tie('arr'), tie('obj')),
  arr: fc.array(tie('any'), { maxLength: 5 }),
  obj: fc.dictionary(nasty, tie('any'), { maxKeys: 5 }),
})).any;

function run<T>(name: string, arb: fc.Arbitrary<T>, check: (v: T) => void, numRuns = 1500): void {
  let n = 0;
  fc.assert(
    fc.property(arb, (v) => {
      n++;
      check(v);
    }),
    { seed: SEED, numRuns },
  );
  tried[name] = n;
}

/** Percent-encodes a string for a path, a lone surrogate as the bytes a careless client sends. */
function pathSegment(s: string): string {
  try {
    return encodeURIComponent(s);
  } catch {
    return encodeURIComponent(s.replace(/[\ud800-\udfff]/g, '')) + '%ED%A0%80';
  }
}

/** Calls fn; anything thrown must be a Refusal. */
function onlyRefusals(fn: () => unknown): void {
  try {
    fn();
  } catch (e) {
    if (!(e instanceof Refusal)) throw e;
  }
}

/** A value PostgreSQL's jsonb stores and gives back unchanged. */
function storable(v: unknown): boolean {
  if (typeof v === 'string') return isStorableText(v);
  if (typeof v === 'number') return Number.isFinite(v) && (!Number.isInteger(v) || Number.isSafeInteger(v));
  if (Array.isArray(v)) return v.every(storable);
  if (v !== null && typeof v === 'object') return Object.entries(v).every(([k, x]) => isStorableText(k) && storable(x));
  return true;
}

test('the value readers return a value or undefined and throw only Refusals', () => {
  run('value readers', value, (v) => {
    const i = toInteger(v);
    assert.ok(i === undefined || Number.isSafeInteger(i));
    const d = toDecimal(v);
    assert.ok(d === undefined || Number.isFinite(d));
    const s = toText(v);
    assert.ok(s === undefined || isStorableText(s), 'a text is storable');
    const b = toBoolean(v);
    assert.ok(b === undefined || typeof b === 'boolean');
    for (const read of [readInteger, readDecimal, readText, readBoolean]) onlyRefusals(() => read(v, 'k'));
  });
});

test('the date parser gives a date of years 1-9999 or null, in any zone', () => {
  const zones = fc.constantFrom('UTC', 'Pacific/Kiritimati', 'Etc/GMT+12', 'Europe/Copenhagen', 'America/St_Johns');
  const dateLike = fc.oneof(
    nasty,
    fc
      .tuple(
        fc.integer({ min: 0, max: 10000 }),
        fc.integer({ min: 0, max: 13 }),
        fc.integer({ min: 0, max: 32 }),
        fc.integer({ min: 0, max: 24 }),
        fc.constantFrom('', 'Z', '+14:00', '-12:00', '+0530'),
      )
      .map(
        ([y, m, d, h, z]) =>
          `${String(y).padStart(4, '0')}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}T${String(h).padStart(2, '0')}:00${z}`,
      ),
  );
  run('date parser', fc.tuple(dateLike, zones), ([text, zone]) => {
    const dt = parseDateTimeInput(text, zone);
    if (dt) {
      const y = dt.getUTCFullYear();
      assert.ok(y >= 1 && y <= 9999, `${text} in ${zone} → ${dt.toISOString()}`);
    }
    const day = parseDateOnlyInput(text, zone);
    if (day) assert.match(day, /^(?!0000)\d{4}-\d\d-\d\d$/, `${text} in ${zone} → ${day}`);
  });
});

test('the JSON reader parses or throws a Refusal (invalid_body), for any text', () => {
  const text = fc.oneof(
    nasty,
    value.map((v) => JSON.stringify(v) ?? 'null'),
    fc.constantFrom('{"a":1,"A":2}', '['.repeat(2000), '{"__proto__":1}', '\ufeff{}', '{"a":1e999}'),
  );
  run('JSON reader', text, (t) => {
    try {
      parseJsonStrict(t);
    } catch (e) {
      assert.ok(e instanceof Refusal && e.code === 'invalid_body', String(e));
    }
  });
});

test('the task-data reader never throws, and what it accepts PostgreSQL keeps exactly', () => {
  const typed: TaskField[] = ['text', 'number', 'integer', 'boolean', 'date', 'datetime', 'dropdown', 'email'].map((type) => ({
    name: `f_${type}`,
    type: type as TaskField['type'],
    required: false,
    isKey: type === 'text',
    isUnique: type === 'text',
    options: ['A', 'b'],
    defaultValue: null,
  }));
  const body = fc.oneof(
    fc.dictionary(nasty, value, { maxKeys: 6 }),
    fc.record(Object.fromEntries(typed.map((f) => [f.name, value])), { requiredKeys: [] }),
    fc.record({ comment: value, activationDate: value, deadline: value, urgent: value }, { requiredKeys: [] }),
  );
  run('task-data reader', fc.tuple(body, fc.boolean(), fc.constantFrom('create', 'update')), ([b, free, mode]) => {
    const r = validateTaskData({
      fields: free ? [] : typed,
      body: b as Record<string, unknown>,
      mode: mode as 'create',
      timeZone: 'Pacific/Kiritimati',
    });
    if (!r.ok) {
      assert.ok(r.problems.length > 0);
      return;
    }
    assert.ok(storable(r.values), `accepted but not storable: ${JSON.stringify(r.values)?.slice(0, 200)}`);
    if (r.reserved.comment) assert.ok(isStorableText(r.reserved.comment));
    for (const d of [r.reserved.activationDate, r.reserved.deadline]) {
      if (d) assert.ok(d.getUTCFullYear() >= 1 && d.getUTCFullYear() <= 9999);
    }
  });
});

describeRoutes();

function describeRoutes(): void {
  let t: TestApp;
  let tenant: SeededTenant;
  let mate: Mate;
  let taskId: number;
  let status500 = 0;
  before(async () => {
    t = await testApp();
    tenant = await seedTenant(t.store, 'fuzz', {
      processes: [
        {
          processKey: 'Typed',
          fields: [
            { name: 'ref', type: 'text', isKey: true, unique: true },
            { name: 'n', type: 'integer' },
            { name: 'at', type: 'datetime' },
          ],
        },
        { processKey: 'Free' },
      ],
    });
    mate = await Mate.signIn(t.app, tenant);
    taskId = await mate.create('Typed', { ref: 'held' });
    await mate.takeNext('Typed');
  });
  after(() => t.close());

  test('Mate API routes: arbitrary bodies and path segments never answer 500, and a refusal changes nothing', async () => {
    const routes = fc.constantFrom(
      ['POST', '/api/CreateTask/Free'],
      ['POST', '/api/CreateTask/Typed'],
      ['POST', '/api/CreateTasks/Free'],
      ['POST', '/api/CreateAndTakeTask/Typed'],
      ['POST', '/api/UpdateTask'],
      ['POST', '/api/Failure'],
      ['POST', '/api/Retry'],
      ['POST', '/api/Return'],
    );
    const bodyText = fc.oneof(
      value.map((v) => JSON.stringify(v) ?? 'null'),
      fc.dictionary(nasty, value, { maxKeys: 4 }).map((o) => JSON.stringify({ taskId: 'TASK', ...o })),
      fc.dictionary(nasty, value, { maxKeys: 4 }).map((o) => JSON.stringify([o])),
      nasty,
    );
    const segment = fc.oneof(
      nasty.map((s) => pathSegment(s.slice(0, 300))),
      fc.constantFrom('%C3', '%00', '%zz', '%ED%A0%80', '..', 'a'.repeat(3000), 'Free%2F..'),
    );
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.tuple(routes, bodyText), segment), async (input) => {
        n++;
        const before = await snapshot(t.store.db, tenant.tenantId);
        const r = Array.isArray(input)
          ? await mate.post(input[0][1], input[1].replace('"TASK"', String(taskId)))
          : await mate.get(`/api/TakeNext/${input}`);
        if (r.status >= 500) status500++;
        assert.ok(r.status < 500, `${JSON.stringify(input).slice(0, 300)} → ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
        const refusedAnswer = r.status !== 200 || r.body?.succeeded === false || (r.body?.code !== undefined && r.body?.taskId === -1);
        if (refusedAnswer && r.body?.code !== 'items_failed') {
          assert.deepEqual(
            await snapshot(t.store.db, tenant.tenantId),
            before,
            `refused, yet changed: ${JSON.stringify(input).slice(0, 300)}`,
          );
        }
      }),
      { seed: SEED, numRuns: 400 },
    );
    tried['Mate API routes'] = n;
    assert.equal(status500, 0);
    // the figures for the closing note
    process.stdout.write(`# fuzz inputs tried: ${JSON.stringify(tried)}\n`);
  });
}
