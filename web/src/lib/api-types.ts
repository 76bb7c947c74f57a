/**
 * The people's API shapes the app uses, every one taken from the server's OpenAPI document as
 * generated into @queuemate/client (`npm run client`; test/client-schema.test.ts fails when the
 * committed file differs from what the server describes). Only a field value is written by hand:
 * the document leaves values open (unknown JSON).
 */
import type { paths } from '@queuemate/client';

type Json<T> = T extends { content: { 'application/json': infer B } } ? B : never;
/** The JSON answer of a route with the given status. */
type Res<P extends keyof paths, M extends keyof paths[P], S extends number = 200> = paths[P][M] extends { responses: infer R }
  ? S extends keyof R
    ? Json<R[S]>
    : never
  : never;
/** The JSON body a route takes. */
type Body<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends { requestBody?: infer R } ? Json<NonNullable<R>> : never;
/** The query parameters a route takes. */
type Query<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends { parameters: { query?: infer Q } }
  ? NonNullable<Q>
  : never;

// the session and roles
export type Session = Res<'/v1/session', 'get'>;
export type Role = Session['user']['role'];

// processes
export type ProcessSummary = Res<'/v1/processes', 'get'>['items'][number];
export type ProcessCounts = ProcessSummary['counts'];
export type ProcessDetail = Res<'/v1/processes/{id}', 'get'>;
export type Field = ProcessDetail['fields'][number];
export type FieldType = Field['type'];
export type FieldDef = Body<'/v1/processes/{id}/fields', 'put'>['fields'][number];
export type Settings = ProcessDetail['settings'];
export type SettingsPatch = Body<'/v1/processes/{id}/settings', 'patch'>;
export type Rule = Res<'/v1/processes/{id}/rules', 'get'>['items'][number];
export type RuleType = Rule['type'];

// tasks
export type TaskPage = Res<'/v1/processes/{id}/tasks', 'get'>;
export type Task = TaskPage['items'][number];
export type TaskDetail = Res<'/v1/tasks/{id}', 'get'>;
export type QueueName = TaskDetail['queue'];
export type HistoryRow = TaskDetail['history'][number];
export type Comment = TaskDetail['comments'][number];
export type BulkRequestBody = Body<'/v1/processes/{id}/tasks/bulk', 'post'>;
export type BulkAction = BulkRequestBody['action'];
export type Job = Res<'/v1/jobs/{id}', 'get'>;
export type ImportFormat = NonNullable<Query<'/v1/processes/{id}/tasks/import', 'post'>['format']>;
/** a field's value as the app handles it (the API types values as unknown JSON) */
export type FieldValue = string | number | boolean | null;

// KPIs
export type KpiQuery = Query<'/v1/kpis', 'get'>;
export type KpiPeriod = NonNullable<KpiQuery['by']>;
export type KpiReport = Res<'/v1/kpis', 'get'>;
export type KpiItem = KpiReport['items'][number];

// Administration, notifications and one's account
export type Tenant = Res<'/v1/tenant', 'get'>;
export type RotatedSecret = Res<'/v1/tenant/api-secret', 'post'>;
export type User = Res<'/v1/users', 'get'>['items'][number];
export type CreatedUser = Res<'/v1/users', 'post', 201>;
export type Mate = Res<'/v1/mates', 'get'>['items'][number];
export type CreatedMate = Res<'/v1/mates', 'post', 201>;
export type NewPassword = Res<'/v1/mates/{id}/password', 'post'>;
export type AuditEntry = Res<'/v1/audit', 'get'>['items'][number];
export type Token = Res<'/v1/me/tokens', 'get'>['items'][number];
export type CreatedToken = Res<'/v1/me/tokens', 'post', 201>;
export type Notifications = Res<'/v1/notifications', 'get'>;
export type Notification = Notifications['items'][number];
export type Webhook = Res<'/v1/webhooks', 'get'>['items'][number];
export type CreatedWebhook = Res<'/v1/webhooks', 'post', 201>;
export type Delivery = Res<'/v1/webhooks/{id}/deliveries', 'get'>['items'][number];
export type DeliveryStatus = Delivery['status'];
export type DeliveryAttempt = Delivery['attemptLog'][number];
export type WebhookSettings = Res<'/v1/webhook-settings', 'get'>;

/** A refusal's body: every route answers the same shape (this is the sign-in's). */
export type ApiErrorBody = Res<'/v1/session', 'post', 401>;
