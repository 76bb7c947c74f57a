/**
 * The Kysely table types (src/db/types.ts) against the migrated schema, in both directions: every
 * table and column on each side, nullability, insert defaults, type categories, CHECKed values.
 * The last two tests alter the types and the schema on purpose, to show the comparison notices.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { testStore, type TestStore } from './helpers/db.js';
import { compareSchema, readDbSchema, readTableTypes, TYPES_FILE, type DbSchema } from './helpers/schema-drift.js';

let store: TestStore;
let schema: DbSchema;

before(async () => {
  store = await testStore({ poolSize: 2 });
  schema = await readDbSchema(store.pool);
});
after(() => store.close());

/** Every expected message appears, and no other: a false alarm would fail as surely as a miss. */
function assertProblems(problems: string[], expected: string[]): void {
  const report = `reported:\n  ${problems.join('\n  ')}`;
  for (const e of expected)
    assert.ok(
      problems.some((p) => p.startsWith(e)),
      `expected a problem starting "${e}"; ${report}`,
    );
  for (const p of problems)
    assert.ok(
      expected.some((e) => p.startsWith(e)),
      `unexpected problem "${p}"; ${report}`,
    );
}

test('src/db/types.ts types every table and column of the migrated schema, and nothing else', () => {
  const problems = compareSchema(schema, readTableTypes());
  assert.deepEqual(problems, [], `the types and the migrations disagree:\n  ${problems.join('\n  ')}`);
});

test('the schema reader sees the tables, defaults, arrays and CHECKed values of the migrations', () => {
  // the comparison above is only as good as what it reads; check a few columns of each kind
  assert.ok(schema.size >= 21, `tables read: ${[...schema.keys()].join(', ')}`);
  assert.ok(!schema.has('schema_migrations'), "the migrator's bookkeeping table has no Kysely type");
  const tasks = schema.get('tasks')!;
  assert.deepEqual(tasks.get('queue')!.allowed, ['Ready', 'NeedsData', 'NeedsApproval', 'Manual', 'Solved']);
  assert.equal(tasks.get('id')!.hasDefault, true, 'identity');
  assert.equal(tasks.get('created_at')!.hasDefault, false);
  assert.equal(tasks.get('deleted_at')!.nullable, true);
  assert.deepEqual(
    { type: schema.get('runs')!.get('mate_ids')!.elementType, default: schema.get('runs')!.get('mate_ids')!.hasDefault },
    { type: 'int8', default: true },
  );
  assert.equal(schema.get('webhook_subscriptions')!.get('event_types')!.elementType, 'text');
  // a CHECK that is not a list of values gives none
  assert.equal(schema.get('processes')!.get('process_key')!.allowed, null);
});

/** Replaces `from` by `to` inside `interface <name> { … }` of the types source. */
function inInterface(source: string, name: string, from: string, to: string): string {
  const start = source.indexOf(`export interface ${name} {`);
  assert.ok(start >= 0, `no interface ${name}`);
  const end = source.indexOf('\n}', start) + 1;
  const body = source.slice(start, end);
  assert.ok(body.includes(from), `${name} has no "${from}"`);
  return source.slice(0, start) + body.replace(from, to) + source.slice(end);
}

test('the comparison names each kind of drift in the types', () => {
  const edits: [table: string, from: string, to: string, expected: string][] = [
    ['Database', '  audit_log: AuditLogTable;\n', '', 'audit_log: a table in the database, but Database has no property'],
    [
      'Database',
      '  tasks: TasksTable;\n',
      '  tasks: TasksTable;\n  task_labels: TaskCommentsTable;\n',
      'task_labels: Database types it, but',
    ],
    ['TasksTable', '  unique_key: string | null;\n', '', 'tasks.unique_key: a column in the database, but missing'],
    ['NotificationsTable', '  message: string;', '  message: string;\n  title: string;', "notifications.title: in the table's type, but"],
    ['TasksTable', '  reason: string | null;', '  reason: string;', 'tasks.reason: nullable in the database'],
    ['KpiEventsTable', '  entries: number;', '  entries: number | null;', 'kpi_events.entries: NOT NULL in the database'],
    [
      'WebhookSubscriptionsTable',
      'enabled: ColumnType<boolean, boolean | undefined, boolean>',
      'enabled: boolean',
      'webhook_subscriptions.enabled: has a default',
    ],
    ['OutboxEventsTable', 'id: Generated<number>', 'id: number', 'outbox_events.id: has a default or identity'],
    ['TasksTable', '  created_at: Timestamp;', '  created_at: DefaultTimestamp;', 'tasks.created_at: NOT NULL without a default'],
    [
      'TaskCommentsTable',
      '  author_id: number | null;',
      '  author_id: ColumnType<number | null, number, number>;',
      'task_comments.author_id: nullable in the database, but its insert type',
    ],
    ['NotificationsTable', '  message: string;', '  message: number;', 'notifications.message: text in the database'],
    [
      'WebhookDeliveriesTable',
      'attempts: ColumnType<number, number | undefined, number>',
      'attempts: ColumnType<string, string | undefined, string>',
      'webhook_deliveries.attempts: integer',
    ],
    [
      'TasksTable',
      'urgent: ColumnType<boolean, boolean | undefined, boolean>',
      'urgent: ColumnType<number, number | undefined, number>',
      'tasks.urgent: boolean',
    ],
    ['RunsTable', '  started_at: Timestamp;', '  started_at: string;', 'runs.started_at: timestamp with time zone'],
    ['KpiEventsTable', '  seconds_saved: number;', '  seconds_saved: bigint;', 'kpi_events.seconds_saved: bigint in the database'],
    [
      'RunsTable',
      'mate_ids: ColumnType<number[], number[] | undefined, number[]>',
      'mate_ids: ColumnType<string[], string[] | undefined, string[]>',
      'runs.mate_ids: int8[]',
    ],
    [
      'WebhookSubscriptionsTable',
      'event_types: ColumnType<string[], string[] | undefined, string[]>',
      'event_types: ColumnType<string, string | undefined, string>',
      'webhook_subscriptions.event_types: text[]',
    ],
    ['NotificationsTable', '  kind: NotificationKind;', '  kind: string;', 'notifications.kind: the database allows only'],
    ['TaskHistoryTable', '  action: string;', "  action: 'create' | 'take';", 'task_history.action: typed as the literals'],
    ['IdempotencyKeysTable', '  response: string | null;', '  response?: string | null;', 'idempotency_keys.response: declared optional'],
    [
      'OutboxEventsTable',
      'payload: Json<Record<string, unknown>>',
      'payload: Json',
      'outbox_events.payload: NOT NULL in the database, but typed unknown',
    ],
  ];
  let source = fs.readFileSync(TYPES_FILE, 'utf8');
  for (const [table, from, to] of edits) source = inInterface(source, table, from, to);
  // a queue name dropped from the union: the CHECK allows one more value than the type
  source = source.replace(
    "export type QueueName = 'Ready' | 'NeedsData' | 'NeedsApproval' | 'Manual' | 'Solved';",
    "export type QueueName = 'Ready' | 'NeedsData' | 'NeedsApproval' | 'Manual';",
  );
  assert.ok(!source.includes("'Manual' | 'Solved';"), 'QueueName edited');

  const problems = compareSchema(schema, readTableTypes(TYPES_FILE, source));
  assertProblems(problems, [
    ...edits.map((e) => e[3]),
    'tasks.queue: the database allows Manual, NeedsApproval, NeedsData, Ready, Solved, but the select type allows Manual, NeedsApproval, NeedsData, Ready',
  ]);
});

test('the comparison names each schema change the types do not follow', async () => {
  const client = await store.pool.connect();
  let problems: string[];
  try {
    // DDL is transactional in PostgreSQL: the rollback leaves the test database as migrated
    await client.query('BEGIN');
    await client.query(`
      CREATE TABLE extra_table (id integer);
      ALTER TABLE tasks ADD COLUMN priority integer;
      ALTER TABLE tasks DROP COLUMN deleted_at;
      ALTER TABLE notifications ALTER COLUMN read_at SET NOT NULL;
      ALTER TABLE task_comments ALTER COLUMN body DROP NOT NULL;
      ALTER TABLE kpi_events ALTER COLUMN entries SET DEFAULT 1;
      ALTER TABLE runs ALTER COLUMN mate_ids DROP DEFAULT;
      ALTER TABLE outbox_events ALTER COLUMN "type" TYPE integer USING 0;
      ALTER TABLE webhook_deliveries ALTER COLUMN created_at TYPE date;
      ALTER TABLE tasks DROP CONSTRAINT tasks_queue_check,
        ADD CONSTRAINT tasks_queue_check CHECK (queue IN ('Ready', 'NeedsData', 'NeedsApproval', 'Manual', 'Solved', 'Archived'));
      ALTER TABLE users DROP CONSTRAINT users_role_check;
    `);
    problems = compareSchema(await readDbSchema(client), readTableTypes());
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
  assertProblems(problems, [
    'extra_table: a table in the database, but Database has no property',
    'tasks.priority: a column in the database, but missing',
    "tasks.deleted_at: in the table's type, but the database has no such column",
    'notifications.read_at: NOT NULL in the database, but its select type admits null',
    'notifications.read_at: NOT NULL in the database, but its insert type admits null',
    'task_comments.body: nullable in the database, but its select type does not admit null',
    'task_comments.body: nullable in the database, but its insert type does not admit null',
    'kpi_events.entries: has a default or identity in the database, but its insert type requires a value',
    'runs.mate_ids: NOT NULL without a default in the database',
    'outbox_events.type: integer in the database reads as number, but the select type has string',
    'outbox_events.type: integer in the database takes number on insert, but the insert type has string',
    'webhook_deliveries.created_at: date in the database reads as string, but the select type has Date',
    'webhook_deliveries.created_at: date in the database takes string on insert, but the insert type has Date',
    'tasks.queue: the database allows Archived, Manual, NeedsApproval, NeedsData, Ready, Solved, but the select type allows Manual, NeedsApproval, NeedsData, Ready, Solved',
    'users.role: typed as the literals admin, agent, developer, viewer, but the database accepts any text',
  ]);
});
