/** Notifications with read/unread, and KPI reports (docs/people-api.md §4). */
import { Type } from 'typebox';
import { Readable } from 'node:stream';
import { kpiRange, kpiReport } from '../../kpis/report.js';
import { exportKpiEventsCsv } from '../../task-lists/export.js';
import { listNotifications, markAllRead, markNotification } from '../../notifications/store.js';
import { requireProcess } from '../../processes/editing.js';
import { answer, CsvStream, defineRoute, ErrorBody, Id, IdParams, IsoDate, Nullable, type PeopleRoute } from '../route.js';

const NotificationSchema = Type.Object({
  id: Type.Integer(),
  processId: Nullable(Type.Integer()),
  kind: Type.String({ description: 'failure, stoppedByErrors or info' }),
  message: Type.String(),
  mateId: Nullable(Type.Integer()),
  createdAt: IsoDate,
  readAt: Nullable(IsoDate),
});

export const INSIGHT_ROUTES: PeopleRoute[] = [
  defineRoute({
    method: 'GET',
    url: '/notifications',
    permission: 'processes.read',
    tag: 'Insights',
    summary: 'Notifications (Failures reported by Mates, …), newest first, with the unread count; filter by process or unread',
    curl: `curl -s "$QM/v1/notifications?unread=true&processId=1" -H "Authorization: Bearer $TOKEN"`,
    querystring: Type.Object(
      {
        processId: Type.Optional(Id),
        unread: Type.Optional(Type.Boolean()),
        before: Type.Optional(Id),
        limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
      },
      { additionalProperties: false },
    ),
    response: { 200: Type.Object({ items: Type.Array(NotificationSchema), unread: Type.Integer() }) },
    async handler({ services, caller, query }) {
      return listNotifications(services.db, caller.tenantId, {
        processId: query.processId,
        unread: query.unread,
        before: query.before,
        limit: query.limit ?? 100,
      });
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/notifications/:id/read',
    permission: 'notifications.manage',
    tag: 'Insights',
    summary: 'Mark a notification read (read: true, the default) or unread',
    curl: `curl -s -X POST $QM/v1/notifications/7/read -H "Authorization: Bearer $TOKEN"`,
    params: IdParams,
    body: Type.Object({ read: Type.Optional(Type.Boolean()) }, { additionalProperties: false }),
    response: { 404: ErrorBody },
    async handler({ services, caller, params, body }) {
      await markNotification(services.db, caller.tenantId, params.id, body.read ?? true, caller.now);
      return null;
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/notifications/read-all',
    permission: 'notifications.manage',
    tag: 'Insights',
    summary: 'Mark every unread notification (of one process) read',
    curl: `curl -s -X POST $QM/v1/notifications/read-all -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"processId":1}'`,
    body: Type.Object({ processId: Type.Optional(Id) }, { additionalProperties: false }),
    response: { 200: Type.Object({ marked: Type.Integer() }) },
    async handler({ services, caller, body }) {
      return { marked: await markAllRead(services.db, caller.tenantId, caller.now, body.processId) };
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/kpis',
    permission: 'processes.read',
    tag: 'Insights',
    summary:
      'Time saved and tasks by outcome per process (or for the tenant with perProcess=false), by day, week or month, from/to dates included, in the tenant time zone',
    curl: `curl -s "$QM/v1/kpis?from=2026-01-01&to=2026-03-31&by=month&processId=1" -H "Authorization: Bearer $TOKEN"`,
    querystring: Type.Object(
      {
        from: Type.String({ description: 'YYYY-MM-DD' }),
        to: Type.String({ description: 'YYYY-MM-DD, included' }),
        by: Type.Optional(Type.Union([Type.Literal('day'), Type.Literal('week'), Type.Literal('month')])),
        processId: Type.Optional(Id),
        perProcess: Type.Optional(Type.Boolean()),
      },
      { additionalProperties: false },
    ),
    response: {
      200: Type.Object({
        timeZone: Type.String(),
        by: Type.String(),
        items: Type.Array(
          Type.Object({
            period: Type.String(),
            processId: Nullable(Type.Integer()),
            outcome: Type.String(),
            events: Type.Integer(),
            entries: Type.Integer(),
            secondsSaved: Type.Integer(),
          }),
        ),
      }),
      400: ErrorBody,
      404: ErrorBody,
    },
    async handler({ services, caller, query }) {
      if (query.processId !== undefined) await requireProcess(services.db, caller.tenantId, query.processId);
      const by = query.by ?? 'day';
      const items = await kpiReport(services.db, caller.tenantId, caller.timeZone, {
        from: query.from,
        to: query.to,
        by,
        processId: query.processId,
        perProcess: query.perProcess ?? true,
      });
      return { timeZone: caller.timeZone, by, items };
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/kpis/export',
    permission: 'processes.read',
    tag: 'Insights',
    summary: 'CSV of the KPI events from/to dates (included, tenant time zone), of one process or all, streamed, with no size limit',
    curl: `curl -s "$QM/v1/kpis/export?from=2026-01-01&to=2026-03-31" -H "Authorization: Bearer $TOKEN" -o kpi-events.csv`,
    querystring: Type.Object(
      {
        from: Type.String({ description: 'YYYY-MM-DD' }),
        to: Type.String({ description: 'YYYY-MM-DD, included' }),
        processId: Type.Optional(Id),
      },
      { additionalProperties: false },
    ),
    response: { 200: CsvStream, 400: ErrorBody, 404: ErrorBody },
    async handler({ services, caller, query }) {
      if (query.processId !== undefined) await requireProcess(services.db, caller.tenantId, query.processId);
      const { from, end } = kpiRange(query.from, query.to, caller.timeZone);
      return answer(
        200,
        Readable.from(
          exportKpiEventsCsv(services.db, caller.tenantId, { from, to: end, processId: query.processId }, () =>
            services.turns.background(),
          ),
        ),
        {
          'content-type': 'text/csv; charset=utf-8',
          'content-disposition': 'attachment; filename="kpi-events.csv"',
        },
      );
    },
  }),
];
