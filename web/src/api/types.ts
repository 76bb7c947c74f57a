/**
 * The people's API shapes the app uses, all taken from the server's OpenAPI as generated into
 * client/src/schema.ts by `npm run client` (never written by hand).
 */
import type { paths } from '../../../client/src/schema';

type Json<T> = T extends { content: { 'application/json': infer B } } ? B : never;

export type Session = Json<paths['/v1/session']['get']['responses'][200]>;
export type Role = Session['user']['role'];
export type QueueName = Ok<'/v1/tasks/{id}', 'get'>['queue'];
export const QUEUES: QueueName[] = ['Ready', 'NeedsData', 'NeedsApproval', 'Manual', 'Solved'];

type Ok<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends { responses: { 200: infer R } } ? Json<R> : never;

export type ProcessSummary = Ok<'/v1/processes', 'get'>['items'][number];
export type ProcessCounts = ProcessSummary['counts'];
export type ProcessDetail = Ok<'/v1/processes/{id}', 'get'>;
export type Field = ProcessDetail['fields'][number];
export type FieldType = Field['type'];
export type TaskPage = Ok<'/v1/processes/{id}/tasks', 'get'>;
export type Task = TaskPage['items'][number];
export type TaskDetail = Ok<'/v1/tasks/{id}', 'get'>;
export type HistoryRow = TaskDetail['history'][number];
export type Comment = TaskDetail['comments'][number];
export type BulkRequestBody = Json<NonNullable<paths['/v1/processes/{id}/tasks/bulk']['post']['requestBody']>>;
export type BulkAction = BulkRequestBody['action'];
export type Job = Ok<'/v1/jobs/{id}', 'get'>;
/** a field's value as the app handles it (the API types values as unknown JSON) */
export type FieldValue = string | number | boolean | null;

export interface ApiErrorBody {
  code: string;
  message: string;
  requestId?: string;
  errors?: { field?: string; index?: number; code: string; message: string }[];
}
