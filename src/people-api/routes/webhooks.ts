/** Webhook endpoints, their delivery log and redelivery (docs/events.md, "Webhooks"). */
import { Type } from 'typebox';
import { audit } from '../../audit/store.js';
import {
  createSubscription,
  deleteSubscription,
  getAllowPrivateTargets,
  getSubscription,
  listSubscriptions,
  rotateSecret,
  setAllowPrivateTargets,
  updateSubscription,
  type Subscription,
} from '../../events/webhook-subscriptions.js';
import { listDeliveries, redeliver, type Delivery } from '../../events/webhook-deliveries.js';
import { answer, defineRoute, ErrorBody, Id, IdParams, IsoDate, Nullable, type PeopleRoute } from '../route.js';

const EventTypes = Type.Array(Type.String({ maxLength: 100 }), {
  maxItems: 100,
  description: 'event types ("task.solved") or families ("task.*"); empty: every event',
});
const WebhookBody = Type.Object({
  id: Type.Integer(),
  url: Type.String(),
  description: Type.String(),
  eventTypes: Type.Array(Type.String()),
  enabled: Type.Boolean(),
  disabledReason: Nullable(Type.String()),
  createdAt: IsoDate,
});
const DeliveryBody = Type.Object({
  id: Type.Integer(),
  eventId: Type.Integer(),
  eventType: Type.String(),
  status: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]),
  attempts: Type.Integer(),
  nextAttemptAt: Nullable(IsoDate),
  lastAttemptAt: Nullable(IsoDate),
  lastStatusCode: Nullable(Type.Integer()),
  lastError: Nullable(Type.String()),
  durationMs: Nullable(Type.Integer()),
  responseExcerpt: Nullable(Type.String()),
  createdAt: IsoDate,
  deliveredAt: Nullable(IsoDate),
  attemptLog: Type.Array(
    Type.Object({
      at: IsoDate,
      statusCode: Nullable(Type.Integer()),
      durationMs: Type.Integer(),
      responseExcerpt: Nullable(Type.String({ description: 'at most 1 KB of the answer' })),
      error: Nullable(Type.String()),
    }),
    { description: 'every attempt, oldest first' },
  ),
});

const iso = (d: Date | null) => (d ? d.toISOString() : null);
const webhookBody = (s: Subscription) => ({ ...s, createdAt: s.createdAt.toISOString() });
const deliveryBody = (d: Delivery) => ({
  id: d.id,
  eventId: d.eventId,
  eventType: d.eventType,
  status: d.status,
  attempts: d.attempts,
  nextAttemptAt: iso(d.nextAttemptAt),
  lastAttemptAt: iso(d.lastAttemptAt),
  lastStatusCode: d.lastStatusCode,
  lastError: d.lastError,
  durationMs: d.durationMs,
  responseExcerpt: d.responseExcerpt,
  createdAt: d.createdAt.toISOString(),
  deliveredAt: iso(d.deliveredAt),
  attemptLog: d.attemptLog.map((a) => ({ ...a, at: a.at.toISOString() })),
});

const Input = {
  url: Type.String({ maxLength: 2000, description: 'http(s) URL the events are POSTed to' }),
  eventTypes: Type.Optional(EventTypes),
  description: Type.Optional(Type.String({ maxLength: 500 })),
  enabled: Type.Optional(Type.Boolean()),
};

export const WEBHOOK_ROUTES: PeopleRoute[] = [
  defineRoute({
    method: 'GET',
    url: '/webhooks',
    permission: 'webhooks.read',
    tag: 'Webhooks',
    summary: "The tenant's webhook endpoints",
    curl: `curl -s $QM/v1/webhooks -H "Authorization: Bearer $TOKEN"`,
    response: { 200: Type.Object({ items: Type.Array(WebhookBody) }) },
    async handler({ services, caller }) {
      return { items: (await listSubscriptions(services.db, caller.tenantId)).map(webhookBody) };
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/webhooks',
    permission: 'webhooks.manage',
    tag: 'Webhooks',
    status: 201,
    summary: 'Add an endpoint; the answer carries its signing secret (whsec_…), shown this once. It gets the events from now on.',
    curl: `curl -s -X POST $QM/v1/webhooks -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"url":"https://example.com/hooks/queuemate","eventTypes":["task.solved","task.error"]}'`,
    body: Type.Object(Input, { additionalProperties: false }),
    response: { 201: Type.Intersect([WebhookBody, Type.Object({ secret: Type.String() })]), 400: ErrorBody },
    async handler({ services, caller, body }) {
      const created = await services.units.transaction(async (tx) => {
        const { subscription, secret } = await createSubscription(tx.db, caller.tenantId, body);
        await audit(tx, caller, {
          action: 'webhook.create',
          targetType: 'webhook',
          targetId: subscription.id,
          details: { url: subscription.url, eventTypes: subscription.eventTypes },
        });
        return answer(201, { ...webhookBody(subscription), secret });
      });
      // this process's dispatcher learns of the endpoint now (others at their next tick)
      void services.events.dispatcher.kick().catch(() => {});
      return created;
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/webhooks/:id',
    permission: 'webhooks.read',
    tag: 'Webhooks',
    summary: 'One webhook endpoint',
    curl: `curl -s $QM/v1/webhooks/1 -H "Authorization: Bearer $TOKEN"`,
    params: IdParams,
    response: { 200: WebhookBody, 404: ErrorBody },
    async handler({ services, caller, params }) {
      return webhookBody(await getSubscription(services.db, caller.tenantId, params.id));
    },
  }),
  defineRoute({
    method: 'PATCH',
    url: '/webhooks/:id',
    permission: 'webhooks.manage',
    tag: 'Webhooks',
    summary: 'Change an endpoint; enabling a disabled one clears its failure count',
    curl: `curl -s -X PATCH $QM/v1/webhooks/1 -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"enabled":true}'`,
    params: IdParams,
    body: Type.Object({ ...Input, url: Type.Optional(Input.url) }, { additionalProperties: false }),
    response: { 200: WebhookBody, 400: ErrorBody, 404: ErrorBody },
    async handler({ services, caller, params, body }) {
      const updated = await services.units.transaction(async (tx) => {
        const s = await updateSubscription(tx.db, caller.tenantId, params.id, body);
        await audit(tx, caller, { action: 'webhook.update', targetType: 'webhook', targetId: s.id, details: body });
        return webhookBody(s);
      });
      void services.events.dispatcher.kick().catch(() => {});
      return updated;
    },
  }),
  defineRoute({
    method: 'DELETE',
    url: '/webhooks/:id',
    permission: 'webhooks.manage',
    tag: 'Webhooks',
    summary: 'Remove an endpoint and its delivery log',
    curl: `curl -s -X DELETE $QM/v1/webhooks/1 -H "Authorization: Bearer $TOKEN"`,
    params: IdParams,
    response: { 204: Type.Null(), 404: ErrorBody },
    async handler({ services, caller, params }) {
      return services.units.transaction(async (tx) => {
        await deleteSubscription(tx.db, caller.tenantId, params.id);
        await audit(tx, caller, { action: 'webhook.delete', targetType: 'webhook', targetId: params.id });
        return null;
      });
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/webhooks/:id/secret',
    permission: 'webhooks.manage',
    tag: 'Webhooks',
    summary: 'Rotate the signing secret: the new one is shown once and signs from the next attempt on',
    curl: `curl -s -X POST $QM/v1/webhooks/1/secret -H "Authorization: Bearer $TOKEN"`,
    params: IdParams,
    response: { 200: Type.Object({ secret: Type.String() }), 404: ErrorBody },
    async handler({ services, caller, params }) {
      return services.units.transaction(async (tx) => {
        const secret = await rotateSecret(tx.db, caller.tenantId, params.id);
        await audit(tx, caller, { action: 'webhook.secret', targetType: 'webhook', targetId: params.id });
        return { secret };
      });
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/webhooks/:id/deliveries',
    permission: 'webhooks.read',
    tag: 'Webhooks',
    summary:
      'The delivery log, newest first: status, attempts, the last status code, duration and answer excerpt, and every attempt (time, status, duration, answer excerpt, error)',
    curl: `curl -s "$QM/v1/webhooks/1/deliveries?status=failed" -H "Authorization: Bearer $TOKEN"`,
    params: IdParams,
    querystring: Type.Object(
      {
        status: Type.Optional(Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')])),
        limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200 })),
        before: Type.Optional(Id),
      },
      { additionalProperties: false },
    ),
    response: { 200: Type.Object({ items: Type.Array(DeliveryBody) }), 404: ErrorBody },
    async handler({ services, caller, params, query }) {
      const items = await listDeliveries(services.db, caller.tenantId, params.id, {
        status: query.status,
        limit: query.limit,
        beforeId: query.before,
      });
      return { items: items.map(deliveryBody) };
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/webhooks/:id/deliveries/:deliveryId/redeliver',
    permission: 'webhooks.manage',
    tag: 'Webhooks',
    status: 202,
    summary: 'Deliver one event again (with a fresh 24 h retry window), before the newer ones',
    curl: `curl -s -X POST $QM/v1/webhooks/1/deliveries/42/redeliver -H "Authorization: Bearer $TOKEN"`,
    params: Type.Object({ id: Id, deliveryId: Id }),
    response: { 202: Type.Object({ queued: Type.Integer() }), 404: ErrorBody },
    async handler({ services, caller, params }) {
      const queued = await redeliver(
        services.db,
        caller.tenantId,
        { subscriptionId: params.id, deliveryId: params.deliveryId },
        caller.now,
      );
      void services.events.dispatcher.kick().catch(() => {});
      return answer(202, { queued });
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/webhooks/:id/redeliver-failed',
    permission: 'webhooks.manage',
    tag: 'Webhooks',
    status: 202,
    summary: 'Deliver every failed event of the endpoint again',
    curl: `curl -s -X POST $QM/v1/webhooks/1/redeliver-failed -H "Authorization: Bearer $TOKEN"`,
    params: IdParams,
    response: { 202: Type.Object({ queued: Type.Integer() }), 404: ErrorBody },
    async handler({ services, caller, params }) {
      const queued = await redeliver(services.db, caller.tenantId, { subscriptionId: params.id, failed: true }, caller.now);
      void services.events.dispatcher.kick().catch(() => {});
      return answer(202, { queued });
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/webhook-settings',
    permission: 'webhooks.read',
    tag: 'Webhooks',
    summary: 'Whether webhooks may reach loopback, link-local and private addresses',
    curl: `curl -s $QM/v1/webhook-settings -H "Authorization: Bearer $TOKEN"`,
    response: { 200: Type.Object({ allowPrivateTargets: Type.Boolean() }) },
    async handler({ services, caller }) {
      return { allowPrivateTargets: await getAllowPrivateTargets(services.db, caller.tenantId) };
    },
  }),
  defineRoute({
    method: 'PUT',
    url: '/webhook-settings',
    permission: 'webhooks.manage',
    tag: 'Webhooks',
    summary: 'Allow (or refuse) webhook targets on loopback, link-local and private addresses: off by default, against SSRF',
    curl: `curl -s -X PUT $QM/v1/webhook-settings -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"allowPrivateTargets":true}'`,
    body: Type.Object({ allowPrivateTargets: Type.Boolean() }, { additionalProperties: false }),
    response: { 200: Type.Object({ allowPrivateTargets: Type.Boolean() }), 400: ErrorBody },
    async handler({ services, caller, body }) {
      return services.units.transaction(async (tx) => {
        await setAllowPrivateTargets(tx.db, caller.tenantId, body.allowPrivateTargets);
        await audit(tx, caller, {
          action: 'webhook.settings',
          targetType: 'tenant',
          targetId: caller.tenantId,
          details: { allowPrivateTargets: body.allowPrivateTargets },
        });
        return { allowPrivateTargets: body.allowPrivateTargets };
      });
    },
  }),
];
