/**
 * Bulk actions, their jobs, and imports (docs/people-api.md §5), over src/bulk/jobs.ts and
 * src/bulk/import.ts.
 */
import { Transform, type Readable } from 'node:stream';
import { Type } from 'typebox';
import { Refusal } from '../../lib/errors.js';
import { bulkRequestFrom, countMatching, BULK_ACTIONS, MAX_IDS, type BulkAction } from '../../bulk/jobs.js';
import type { Role } from '../../accounts/service.js';
import { checkImport, commitImport, importFormat, parseImportFile, previewImport, type ColumnMapping } from '../../bulk/import.js';
import { parseJsonStrict } from '../../lib/json.js';
import { allows, rolesOf } from '../permissions.js';
import { answer, defineRoute, ErrorBody, FreeObject, IdParams, IsoDate, Nullable, OneOf, processFor, type PeopleRoute } from '../route.js';

/**
 * An import file may be this large: 100k rows of a dozen fields are about 20 MB of CSV; 128 MiB
 * leaves room for wide rows and XLSX overhead. Only the import route reads bodies this large.
 */
export const IMPORT_BODY_LIMIT = 128 * 1024 * 1024;

const BulkBody = Type.Object(
  {
    action: OneOf(BULK_ACTIONS),
    queue: Type.Optional(Type.String({ description: 'move: the target queue' })),
    error: Type.Optional(Type.Boolean({ description: 'move to Manual: set the Error flag' })),
    urgent: Type.Optional(Type.Boolean({ description: 'urgent: the value to set' })),
    comment: Type.Optional(Type.String()),
    ids: Type.Optional(Type.Array(Type.Integer({ minimum: 1 }), { maxItems: MAX_IDS })),
    filter: Type.Optional(FreeObject({ additionalProperties: true, description: 'the keys of the task list query, f.<field> included' })),
  },
  { additionalProperties: false },
);

/** Deleting in bulk needs the delete permission as deleting one task does. */
function checkDelete(action: BulkAction, role: Role): void {
  if (action === 'delete' && !allows('tasks.delete', role)) {
    throw new Refusal('forbidden', `The ${role} role may not delete tasks (needs ${rolesOf('tasks.delete')})`);
  }
}

/** The upload, refused as payload_too_large past `limit` bytes. */
function limited(stream: Readable, limit: number): Readable {
  let seen = 0;
  return stream.pipe(
    new Transform({
      transform(chunk: Buffer, _enc, cb) {
        seen += chunk.length;
        if (seen > limit) cb(new Refusal('payload_too_large', `The file is larger than ${limit} bytes`));
        else cb(null, chunk);
      },
    }),
  );
}

export const BULK_ROUTES: PeopleRoute[] = [
  defineRoute({
    method: 'POST',
    url: '/processes/:id/tasks/bulk/count',
    permission: 'tasks.work',
    tag: 'Tasks',
    summary: 'How many tasks a bulk action would touch now (same body as the bulk action)',
    curl: `curl -s -X POST $QM/v1/processes/1/tasks/bulk/count -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"action":"move","queue":"Ready","filter":{"queue":"Manual","error":"true"}}'`,
    params: IdParams,
    body: BulkBody,
    response: { 200: Type.Object({ total: Type.Integer() }), 400: ErrorBody, 404: ErrorBody },
    async handler({ services, caller, params, body, person }) {
      const proc = await processFor(services, caller, params.id);
      const req = bulkRequestFrom(body, proc, caller.timeZone);
      checkDelete(req.action, person.user.role);
      return { total: await countMatching(services.db, caller, proc, req.target) };
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/processes/:id/tasks/bulk',
    permission: 'tasks.work',
    tag: 'Tasks',
    summary:
      'Start a bulk action (move, clearError, urgent, approve, reject, delete) on a list of ids or on every task matching a filter: 202 with the job id and total; the job runs in chunks, skipping tasks a Mate holds',
    curl: `curl -s -X POST $QM/v1/processes/1/tasks/bulk -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"action":"clearError","filter":{"error":"true"}}'`,
    params: IdParams,
    body: BulkBody,
    status: 202,
    response: { 202: Type.Object({ jobId: Type.String(), total: Type.Integer() }), 400: ErrorBody, 403: ErrorBody, 404: ErrorBody },
    async handler({ services, caller, params, body, person }) {
      const proc = await processFor(services, caller, params.id);
      const req = bulkRequestFrom(body, proc, caller.timeZone);
      checkDelete(req.action, person.user.role);
      return answer(202, await services.bulkJobs.start(caller, proc, req));
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/jobs/:id',
    permission: 'tasks.read',
    tag: 'Tasks',
    summary:
      "A bulk job's progress (a bulk action's, or a large import's: action import): status, total, done, failed, skipped, errors, who started it and when (kept in the database 7 days after it ends; a restart resumes it)",
    curl: `curl -s $QM/v1/jobs/5c1f0e6a-3d1b-4bb9-9d43-2f7f3c3f2a10 -H "Authorization: Bearer $TOKEN"`,
    params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) }),
    response: {
      200: Type.Object({
        id: Type.String(),
        status: Type.Union([Type.Literal('running'), Type.Literal('done'), Type.Literal('failed')]),
        action: Type.String(),
        processId: Type.Integer(),
        total: Type.Integer(),
        done: Type.Integer(),
        failed: Type.Integer(),
        skipped: Type.Integer(),
        errors: Type.Array(
          Type.Object({
            taskId: Type.Optional(Type.Integer({ description: 'a bulk action: the task not changed' })),
            row: Type.Optional(Type.Integer({ description: 'an import: the row of the file not created (the header is row 1)' })),
            code: Type.String(),
            message: Type.String(),
          }),
        ),
        createdBy: Type.Object({ type: Type.String(), id: Nullable(Type.Integer()), name: Type.String() }),
        createdAt: IsoDate,
        finishedAt: Nullable(IsoDate),
        message: Nullable(Type.String()),
      }),
      404: ErrorBody,
    },
    async handler({ services, caller, params }) {
      const job = await services.bulkJobs.get(caller.tenantId, params.id);
      if (!job) throw new Refusal('not_found', `No bulk job ${params.id}`);
      return job;
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/processes/:id/tasks/import',
    permission: 'tasks.work',
    tag: 'Tasks',
    summary:
      'Import tasks from a CSV or XLSX file (the body; header row = field names, or ?mapping={"column":"field"}): dryRun=true answers per-row errors and creates nothing; a file with any bad row is refused and creates nothing; a file of at most one chunk is created in one transaction (200 with the ids), a larger one by a job (202 with the job id and total; progress at GET /v1/jobs/{id})',
    curl: `curl -s -X POST "$QM/v1/processes/1/tasks/import?dryRun=true" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: text/csv' --data-binary @invoices.csv`,
    params: IdParams,
    querystring: Type.Object(
      {
        dryRun: Type.Optional(Type.Boolean()),
        format: Type.Optional(
          Type.Union([Type.Literal('csv'), Type.Literal('xlsx')], { description: 'when the Content-Type does not say' }),
        ),
        mapping: Type.Optional(Type.String({ description: 'JSON object: column header → field name, reserved key or null (ignored)' })),
      },
      { additionalProperties: false },
    ),
    raw: { bodyLimit: IMPORT_BODY_LIMIT },
    response: {
      200: Type.Object({}, { additionalProperties: true, description: 'dryRun: the preview; else the created ids and counts' }),
      202: Type.Object(
        {
          dryRun: Type.Literal(false),
          jobId: Type.String({ description: 'the import job: its progress at GET /v1/jobs/{jobId}' }),
          total: Type.Integer({ description: 'the rows the job creates' }),
          queues: Type.Record(Type.String(), Type.Integer(), { description: 'where the rows land, per queue' }),
        },
        { description: 'a file larger than one chunk: the job creating its rows' },
      ),
      400: ErrorBody,
      413: ErrorBody,
    },
    async handler({ services, caller, params, query, req }) {
      const proc = await processFor(services, caller, params.id);
      const format = query.format ?? importFormat(null, req.headers['content-type'] ?? null);
      if (!format)
        throw new Refusal('unsupported_media_type', 'Send the file as text/csv or as an XLSX spreadsheet (or say ?format=csv|xlsx)');
      let mapping: ColumnMapping | null = null;
      // JSON inside a query value: no schema of the query string reads it
      if (query.mapping !== undefined) {
        const parsed = (() => {
          try {
            return parseJsonStrict(query.mapping);
          } catch {
            return undefined;
          }
        })();
        if (
          typeof parsed !== 'object' ||
          parsed === null ||
          Array.isArray(parsed) ||
          Object.values(parsed).some((v) => v !== null && typeof v !== 'string')
        ) {
          throw new Refusal('invalid_field', 'mapping must be a JSON object of column header → field name (or null)', [
            { field: 'mapping', code: 'invalid_field', message: 'mapping must be a JSON object of column header → field name (or null)' },
          ]);
        }
        mapping = parsed as ColumnMapping;
      }
      if (!req.body) throw new Refusal('invalid_body', 'The body must be the CSV or XLSX file');
      const table = await parseImportFile(limited(req.body as Readable, IMPORT_BODY_LIMIT), format);
      if (query.dryRun) return { dryRun: true, ...(await previewImport(services.db, caller, proc, table, mapping)) };
      // one chunk's worth: one transaction, as short as one chunk of a job
      if (table.rows.length <= services.bulkJobs.chunkSize) {
        const result = await services.units.transaction((tx) => commitImport(tx, caller, proc, table, mapping));
        return { dryRun: false, ...result };
      }
      // larger: checked here outside any transaction, then created by a job chunk by chunk
      const { preview, rows } = await checkImport(services.db, caller, proc, table, mapping);
      const request = { format, mapping, rows: preview.rows };
      const job = await services.bulkJobs.startImport(caller, proc, rows, request);
      return answer(202, { dryRun: false as const, ...job, queues: preview.queues });
    },
  }),
];
