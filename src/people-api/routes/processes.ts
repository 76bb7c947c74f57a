/** Processes: overview, detail, create, rename/archive, settings, gate, fields, rules, developer view (docs/people-api.md §4). */
import { editFields } from '../../tasks/fields.js';
import { Type } from 'typebox';
import type { Caller } from '../../lib/caller.js';
import type { Services } from '../../services.js';
import { audit } from '../../audit/store.js';
import { createProcess, FIELD_TYPES, RULE_TYPES } from '../../processes/service.js';
import { getProcessSummary, listProcessSummaries, listRules, loadFields, loadSettings } from '../../processes/summary.js';
import { createRule, deleteRule, requireProcess, setGate, updateProcess, updateRule, updateSettings } from '../../processes/editing.js';
import { developerView } from '../../processes/developer.js';
import { Refusal } from '../../lib/errors.js';
import { answer, defineRoute, ErrorBody, Id, IdParams, IsoDate, Nullable, OneOf, type PeopleRoute } from '../route.js';

const Count = Type.Integer({ minimum: 0 });
export const ProcessSummarySchema = Type.Object({
  id: Type.Integer(),
  key: Type.String(),
  name: Type.String(),
  archived: Type.Boolean(),
  description: Type.String(),
  tasksEnabled: Type.Boolean(),
  state: Type.Object({
    gateOpen: Type.Boolean(),
    blockedToday: Type.Boolean(),
    stoppedByErrors: Type.Boolean(),
    okToRun: Type.Boolean(),
    failure: Nullable(Type.Object({ message: Type.String(), at: IsoDate })),
  }),
  counts: Type.Object(
    {
      ready: Count,
      needsData: Count,
      needsApproval: Count,
      manual: Count,
      error: Count,
      solved: Type.Integer({ minimum: 0, description: 'solved since midnight in the tenant time zone' }),
      locked: Count,
      urgent: Count,
      overdue: Count,
      notActiveYet: Count,
    },
    {
      description:
        'ready = Ready and active; notActiveYet = Ready with a future activation date; manual = Manual without Error; error = Manual with Error',
    },
  ),
  openRun: Nullable(Type.Object({ id: Type.Integer(), startedAt: IsoDate, lastActivityAt: IsoDate })),
  lastMateContactAt: Nullable(IsoDate),
});

const FieldType = OneOf(FIELD_TYPES);
const RuleType = OneOf(RULE_TYPES);
const FieldSchema = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 64 }),
    label: Type.Optional(Type.String({ maxLength: 200 })),
    type: FieldType,
    required: Type.Optional(Type.Boolean()),
    isKey: Type.Optional(Type.Boolean()),
    unique: Type.Optional(Type.Boolean()),
    options: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: 1000 })),
    default: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: false },
);
const Seconds = (min: number, max: number, description?: string) =>
  Type.Integer({ minimum: min, maximum: max, ...(description ? { description } : {}) });
const KpiSchema = Type.Object(
  {
    secondsSavedPerTask: Type.Optional(Seconds(0, 2 ** 31 - 1)),
    entriesPerTask: Type.Optional(Seconds(0, 2 ** 31 - 1)),
    secondsSavedPerEntry: Type.Optional(Nullable(Seconds(0, 2 ** 31 - 1))),
    secondsSavedManual: Type.Optional(Seconds(0, 2 ** 31 - 1)),
    secondsSavedError: Type.Optional(Seconds(0, 2 ** 31 - 1)),
    secondsSavedRetry: Type.Optional(Seconds(0, 2 ** 31 - 1)),
  },
  { additionalProperties: false },
);
const CalendarSchema = Type.Object(
  {
    blockedDates: Type.Array(Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$' }), { maxItems: 3660 }),
    blockedWeekdays: Type.Array(Type.Integer({ minimum: 0, maximum: 6, description: '0 = Sunday' }), { maxItems: 7 }),
  },
  { additionalProperties: false },
);
const RequireApproval = Type.Union([Type.Literal('none'), Type.Literal('mateCreated'), Type.Literal('all')]);
const SettingsPatch = Type.Object(
  {
    description: Type.Optional(Type.String({ maxLength: 20000 })),
    tasksEnabled: Type.Optional(Type.Boolean()),
    calendar: Type.Optional(CalendarSchema),
    deadlinesEnabled: Type.Optional(Type.Boolean()),
    defaultDeadlineSeconds: Type.Optional(Nullable(Seconds(1, 2 ** 31 - 1))),
    defaultActivationOffsetSeconds: Type.Optional(Seconds(0, 2 ** 31 - 1)),
    retryAllowed: Type.Optional(Type.Boolean()),
    maxRetries: Type.Optional(Seconds(0, 1000)),
    stopOnErrors: Type.Optional(Type.Boolean()),
    errorLimit: Type.Optional(Seconds(0, 1_000_000)),
    lockTimeoutSeconds: Type.Optional(Seconds(1, 604800, 'between 1 second and 7 days')),
    requireApproval: Type.Optional(RequireApproval),
    kpi: Type.Optional(KpiSchema),
    runTimeoutSeconds: Type.Optional(Seconds(1, 2 ** 31 - 1)),
  },
  { additionalProperties: false },
);
const FieldView = Type.Object({
  name: Type.String(),
  label: Type.String(),
  type: FieldType,
  required: Type.Boolean(),
  isKey: Type.Boolean(),
  unique: Type.Boolean(),
  options: Type.Array(Type.String()),
  default: Type.Unknown(),
});
const SettingsView = Type.Object({
  description: Type.String(),
  tasksEnabled: Type.Boolean(),
  gateOpen: Type.Boolean(),
  calendar: CalendarSchema,
  deadlinesEnabled: Type.Boolean(),
  defaultDeadlineSeconds: Nullable(Type.Integer()),
  defaultActivationOffsetSeconds: Type.Integer(),
  retryAllowed: Type.Boolean(),
  maxRetries: Type.Integer(),
  stopOnErrors: Type.Boolean(),
  errorLimit: Type.Integer(),
  lockTimeoutSeconds: Type.Integer(),
  requireApproval: RequireApproval,
  kpi: Type.Object({}, { additionalProperties: true }),
  runTimeoutSeconds: Type.Integer(),
});
const ProcessDetail = Type.Intersect([ProcessSummarySchema, Type.Object({ fields: Type.Array(FieldView), settings: SettingsView })]);
const RuleView = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  type: RuleType,
  value: Type.Unknown(),
  description: Type.String(),
  updatedAt: IsoDate,
});
const RuleParams = Type.Object({ id: Id, ruleId: Id });

async function detail(services: Services, caller: Caller, id: number) {
  const [summary, fields, settings] = await Promise.all([
    getProcessSummary(services.db, caller.tenantId, id, caller.timeZone, caller.now),
    loadFields(services.db, caller.tenantId, id),
    loadSettings(services.db, caller.tenantId, id),
  ]);
  return { ...summary, fields, settings };
}

async function findRule(services: Services, caller: Caller, processId: number, ruleId: number) {
  const rule = (await listRules(services.db, caller.tenantId, processId)).find((r) => r.id === ruleId);
  if (!rule) throw new Refusal('not_found', `No rule ${ruleId} in process ${processId}`);
  return rule;
}

export const PROCESS_ROUTES: PeopleRoute[] = [
  defineRoute({
    method: 'GET',
    url: '/processes',
    permission: 'processes.read',
    tag: 'Processes',
    summary: 'The overview: every process with its state, queue counts, open run and last Mate contact (archived ones with ?archived=true)',
    curl: `curl -s $QM/v1/processes -H "Authorization: Bearer $TOKEN"`,
    querystring: Type.Object(
      { archived: Type.Optional(Type.Boolean({ description: 'include archived processes' })) },
      { additionalProperties: false },
    ),
    response: { 200: Type.Object({ items: Type.Array(ProcessSummarySchema) }) },
    async handler({ services, caller, query }) {
      return {
        items: await listProcessSummaries(services.db, caller.tenantId, caller.timeZone, caller.now, {
          includeArchived: query.archived === true,
        }),
      };
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/processes',
    permission: 'processes.manage',
    tag: 'Processes',
    summary: 'Create a process with its ProcessKey, name, description and fields',
    curl: `curl -s -X POST $QM/v1/processes -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"processKey":"invoices","name":"Invoices","fields":[{"name":"invoiceNo","type":"text","isKey":true,"unique":true}]}'`,
    body: Type.Object(
      {
        processKey: Type.String({ minLength: 1, maxLength: 100 }),
        name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
        description: Type.Optional(Type.String({ maxLength: 20000 })),
        tasksEnabled: Type.Optional(Type.Boolean()),
        fields: Type.Optional(Type.Array(FieldSchema, { maxItems: 200 })),
      },
      { additionalProperties: false },
    ),
    status: 201,
    response: { 201: ProcessDetail, 400: ErrorBody, 409: ErrorBody },
    async handler({ services, caller, body }) {
      const created = await services.units.transaction(async (tx) => {
        const p = await createProcess(tx.db, caller.tenantId, body);
        await audit(tx, caller, { action: 'process.create', targetType: 'process', targetId: p.id, details: { after: body } });
        tx.publish({ kind: 'process', tenantId: caller.tenantId, processId: p.id });
        return p;
      });
      return answer(201, await detail(services, caller, created.id));
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/processes/:id',
    permission: 'processes.read',
    tag: 'Processes',
    summary: 'One process: its summary, fields and every setting',
    curl: `curl -s $QM/v1/processes/1 -H "Authorization: Bearer $TOKEN"`,
    params: IdParams,
    response: { 200: ProcessDetail, 404: ErrorBody },
    async handler({ services, caller, params }) {
      return detail(services, caller, params.id);
    },
  }),
  defineRoute({
    method: 'PATCH',
    url: '/processes/:id',
    permission: 'processes.manage',
    tag: 'Processes',
    summary: 'Rename, archive (Mates then get process_not_found) or unarchive a process',
    curl: `curl -s -X PATCH $QM/v1/processes/1 -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"name":"Supplier invoices"}'`,
    params: IdParams,
    body: Type.Object(
      { name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })), archived: Type.Optional(Type.Boolean()) },
      { additionalProperties: false },
    ),
    response: { 200: ProcessDetail, 404: ErrorBody },
    async handler({ services, caller, params, body }) {
      await services.units.transaction(async (tx) => {
        const before = await requireProcess(tx.db, caller.tenantId, params.id);
        await updateProcess(tx, caller.tenantId, params.id, body, caller.now);
        await audit(tx, caller, {
          action: 'process.update',
          targetType: 'process',
          targetId: params.id,
          details: { before: { name: before.name }, after: body },
        });
      });
      return detail(services, caller, params.id);
    },
  }),
  defineRoute({
    method: 'PATCH',
    url: '/processes/:id/settings',
    permission: 'processes.manage',
    tag: 'Processes',
    summary:
      'Change settings of docs/product.md §2 (error handling, Stop on Errors, lock timeout, deadlines, activation offset, approval, KPI defaults, calendar, run timeout, description)',
    curl: `curl -s -X PATCH $QM/v1/processes/1/settings -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"stopOnErrors":true,"errorLimit":5,"calendar":{"blockedDates":["2026-12-24"],"blockedWeekdays":[0,6]}}'`,
    params: IdParams,
    body: SettingsPatch,
    response: { 200: ProcessDetail, 400: ErrorBody, 404: ErrorBody },
    async handler({ services, caller, params, body }) {
      await services.units.transaction(async (tx) => {
        const before = await loadSettings(tx.db, caller.tenantId, params.id);
        await updateSettings(tx, caller.tenantId, params.id, body);
        const after = await loadSettings(tx.db, caller.tenantId, params.id);
        const changed = Object.keys(body) as (keyof typeof before)[];
        await audit(tx, caller, {
          action: 'process.settings',
          targetType: 'process',
          targetId: params.id,
          details: {
            before: Object.fromEntries(changed.map((k) => [k, before[k]])),
            after: Object.fromEntries(changed.map((k) => [k, after[k]])),
          },
        });
      });
      return detail(services, caller, params.id);
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/processes/:id/gate',
    permission: 'processes.gate',
    tag: 'Processes',
    summary: 'Stop (open: false) or Start (open: true) the process for Mates; people are not restricted',
    curl: `curl -s -X POST $QM/v1/processes/1/gate -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"open":false}'`,
    params: IdParams,
    body: Type.Object({ open: Type.Boolean() }, { additionalProperties: false }),
    response: { 200: ProcessSummarySchema, 404: ErrorBody },
    async handler({ services, caller, params, body }) {
      await services.units.transaction(async (tx) => {
        await setGate(tx, caller.tenantId, params.id, body.open);
        await audit(tx, caller, {
          action: body.open ? 'process.start' : 'process.stop',
          targetType: 'process',
          targetId: params.id,
          details: { after: { gateOpen: body.open } },
        });
      });
      return getProcessSummary(services.db, caller.tenantId, params.id, caller.timeZone, caller.now);
    },
  }),
  defineRoute({
    method: 'PUT',
    url: '/processes/:id/fields',
    permission: 'processes.manage',
    tag: 'Processes',
    summary:
      'The fields editor: replace the fields (in order); renamedFrom renames a field and its values follow. Refused with 409 conflict, naming each field and the number of tasks not Solved, when existing tasks would violate the change. NeedsData tasks the change makes complete move to Ready',
    curl: `curl -s -X PUT $QM/v1/processes/1/fields -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"fields":[{"name":"invoiceNo","type":"text","isKey":true,"unique":true},{"name":"total","renamedFrom":"amount","type":"number","required":true}]}'`,
    params: IdParams,
    body: Type.Object(
      {
        fields: Type.Array(
          Type.Object(
            {
              ...FieldSchema.properties,
              renamedFrom: Type.Optional(
                Type.String({ minLength: 1, maxLength: 64, description: 'the existing field this one renames: its values follow' }),
              ),
            },
            { additionalProperties: false },
          ),
          { maxItems: 200 },
        ),
      },
      { additionalProperties: false },
    ),
    response: {
      200: Type.Object({
        fields: Type.Array(FieldView),
        renamed: Type.Array(Type.Object({ from: Type.String(), to: Type.String(), tasks: Type.Integer() })),
        movedToReady: Type.Integer({ description: 'NeedsData tasks the change made complete, moved to Ready' }),
      }),
      400: ErrorBody,
      409: ErrorBody,
    },
    async handler({ services, caller, params, body }) {
      return services.units.transaction(async (tx) => {
        const before = await loadFields(tx.db, caller.tenantId, params.id);
        const edited = await editFields(tx, caller, params.id, body.fields);
        await audit(tx, caller, {
          action: 'process.fields',
          targetType: 'process',
          targetId: params.id,
          details: { before, after: edited.fields, renamed: edited.renamed, movedToReady: edited.movedToReady },
        });
        return edited;
      });
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/processes/:id/rules',
    permission: 'processes.read',
    tag: 'Processes',
    summary: "The process's rules with their typed values",
    curl: `curl -s $QM/v1/processes/1/rules -H "Authorization: Bearer $TOKEN"`,
    params: IdParams,
    response: { 200: Type.Object({ items: Type.Array(RuleView) }), 404: ErrorBody },
    async handler({ services, caller, params }) {
      await requireProcess(services.db, caller.tenantId, params.id);
      return { items: await listRules(services.db, caller.tenantId, params.id) };
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/processes/:id/rules',
    permission: 'processes.manage',
    tag: 'Processes',
    summary: 'Add a rule: name, type (text, number, boolean, list, table, richText), value of that type, description',
    curl: `curl -s -X POST $QM/v1/processes/1/rules -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"name":"maxAmount","type":"number","value":5000}'`,
    params: IdParams,
    body: Type.Object(
      {
        name: Type.String({ minLength: 1, maxLength: 64 }),
        type: RuleType,
        value: Type.Optional(Type.Unknown()),
        description: Type.Optional(Type.String({ maxLength: 5000 })),
      },
      { additionalProperties: false },
    ),
    status: 201,
    response: { 201: RuleView, 400: ErrorBody, 404: ErrorBody, 409: ErrorBody },
    async handler({ services, caller, params, body }) {
      const id = await services.units.transaction(async (tx) => {
        const ruleId = await createRule(tx, caller.tenantId, params.id, body, caller.now);
        await audit(tx, caller, {
          action: 'rule.create',
          targetType: 'rule',
          targetId: ruleId,
          details: { processId: params.id, after: body },
        });
        return ruleId;
      });
      return answer(201, await findRule(services, caller, params.id, id));
    },
  }),
  defineRoute({
    method: 'PATCH',
    url: '/processes/:id/rules/:ruleId',
    permission: 'processes.manage',
    tag: 'Processes',
    summary:
      "Change a rule's name, type or description (and value); a type change needs a value of the new type unless the current one fits",
    curl: `curl -s -X PATCH $QM/v1/processes/1/rules/4 -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"type":"list","value":["DK","SE"]}'`,
    params: RuleParams,
    body: Type.Object(
      {
        name: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
        type: Type.Optional(RuleType),
        value: Type.Optional(Type.Unknown()),
        description: Type.Optional(Type.String({ maxLength: 5000 })),
      },
      { additionalProperties: false },
    ),
    response: { 200: RuleView, 400: ErrorBody, 404: ErrorBody, 409: ErrorBody },
    async handler({ services, caller, params, body }) {
      await services.units.transaction(async (tx) => {
        const { before } = await updateRule(tx, caller.tenantId, params.id, params.ruleId, body, caller.now);
        await audit(tx, caller, {
          action: 'rule.update',
          targetType: 'rule',
          targetId: params.ruleId,
          details: { processId: params.id, before, after: body },
        });
      });
      return findRule(services, caller, params.id, params.ruleId);
    },
  }),
  defineRoute({
    method: 'PUT',
    url: '/processes/:id/rules/:ruleId/value',
    permission: 'rules.values',
    tag: 'Processes',
    summary: "Set a rule's value (of its type; null = unset): what agents may change",
    curl: `curl -s -X PUT $QM/v1/processes/1/rules/4/value -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"value":7500}'`,
    params: RuleParams,
    body: Type.Object({ value: Type.Unknown() }, { additionalProperties: false }),
    response: { 200: RuleView, 400: ErrorBody, 404: ErrorBody },
    async handler({ services, caller, params, body }) {
      await services.units.transaction(async (tx) => {
        const { before } = await updateRule(tx, caller.tenantId, params.id, params.ruleId, { value: body.value }, caller.now);
        await audit(tx, caller, {
          action: 'rule.value',
          targetType: 'rule',
          targetId: params.ruleId,
          details: { processId: params.id, before: { value: before.value }, after: { value: body.value } },
        });
      });
      return findRule(services, caller, params.id, params.ruleId);
    },
  }),
  defineRoute({
    method: 'DELETE',
    url: '/processes/:id/rules/:ruleId',
    permission: 'processes.manage',
    tag: 'Processes',
    summary: 'Delete a rule',
    curl: `curl -s -X DELETE $QM/v1/processes/1/rules/4 -H "Authorization: Bearer $TOKEN"`,
    params: RuleParams,
    response: { 404: ErrorBody },
    async handler({ services, caller, params }) {
      await services.units.transaction(async (tx) => {
        await deleteRule(tx, caller.tenantId, params.id, params.ruleId);
        await audit(tx, caller, { action: 'rule.delete', targetType: 'rule', targetId: params.ruleId, details: { processId: params.id } });
      });
      return null;
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/processes/:id/developer',
    permission: 'processes.develop',
    tag: 'Processes',
    summary:
      "The developer view: the ProcessKey and ready-to-paste requests for this process's fields (curl, the Python client, the .NET client)",
    curl: `curl -s $QM/v1/processes/1/developer -H "Authorization: Bearer $TOKEN"`,
    params: IdParams,
    response: {
      200: Type.Object({
        processKey: Type.String(),
        baseUrl: Type.String(),
        clientId: Type.String(),
        sampleTask: Type.Object({}, { additionalProperties: true }),
        examples: Type.Object({ curl: Type.String(), python: Type.String(), dotnet: Type.String() }),
      }),
      404: ErrorBody,
    },
    async handler({ services, caller, person, params, req }) {
      const p = await requireProcess(services.db, caller.tenantId, params.id);
      const fields = await loadFields(services.db, caller.tenantId, params.id);
      const baseUrl = services.config.publicUrl ?? `${req.protocol}://${req.host}`;
      return developerView({ processKey: p.processKey, fields }, baseUrl, person.tenant.clientId);
    },
  }),
];
