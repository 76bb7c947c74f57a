/**
 * The people's API shapes the app uses. They come from the server's OpenAPI, generated into
 * client/src/schema.ts by `npm run client`. Shapes of routes not yet on this branch (processes,
 * tasks, bulk jobs) follow the binding contract below, the only place in the app that names them,
 * until their generated types replace them.
 */
import type { paths } from '../../../client/src/schema';

type Json<T> = T extends { content: { 'application/json': infer B } } ? B : never;

export type Session = Json<paths['/v1/session']['get']['responses'][200]>;
export type Role = Session['user']['role'];
export type QueueName = 'Ready' | 'NeedsData' | 'NeedsApproval' | 'Manual' | 'Solved';
export const QUEUES: QueueName[] = ['Ready', 'NeedsData', 'NeedsApproval', 'Manual', 'Solved'];

export interface ProcessCounts {
  ready: number;
  needsData: number;
  needsApproval: number;
  manual: number;
  error: number;
  solved: number;
  locked: number;
  urgent: number;
  overdue: number;
  notActiveYet: number;
}

export interface ProcessState {
  gateOpen: boolean;
  blockedToday: boolean;
  stoppedByErrors: boolean;
  okToRun: boolean;
  failure: null | { message: string; at: string };
}

export interface ProcessSummary {
  id: number;
  key: string;
  name: string;
  archived: boolean;
  description: string;
  tasksEnabled: boolean;
  state: ProcessState;
  counts: ProcessCounts;
  openRun: null | { id: number; startedAt: string; lastActivityAt: string };
  lastMateContactAt: null | string;
}

export type FieldType = 'text' | 'number' | 'integer' | 'boolean' | 'date' | 'datetime' | 'dropdown' | 'email';

export interface Field {
  name: string;
  label?: string | null;
  type: FieldType;
  required?: boolean;
  isKey?: boolean;
  unique?: boolean;
  options?: string[] | null;
  default?: unknown;
}

export interface ProcessDetail extends ProcessSummary {
  fields: Field[];
  settings: Record<string, unknown>;
}

export type FieldValue = string | number | boolean | null;

export interface Task {
  id: number;
  processId: number;
  queue: QueueName;
  error: boolean;
  reason: string | null;
  urgent: boolean;
  retryCount: number;
  activationDate: string;
  deadline: string | null;
  lockedBy: null | { type: 'mate' | 'user'; id: number; name: string };
  lockedUntil: string | null;
  createdAt: string;
  updatedAt: string;
  data: Record<string, FieldValue>;
}

export interface HistoryRow {
  id?: number;
  at: string;
  action: string;
  actor?: { type: string; id?: number | null; name: string } | null;
  actorName?: string | null;
  fromQueue?: string | null;
  toQueue?: string | null;
  error?: boolean | null;
  reason?: string | null;
  comment?: string | null;
  retryCount?: number | null;
  requestId?: string | null;
}

export interface Comment {
  id: number;
  at: string;
  text: string;
  author?: { type: string; id?: number | null; name: string } | null;
  authorName?: string | null;
}

export interface TaskDetail extends Task {
  history: HistoryRow[];
  comments: Comment[];
  kpiEvents: { at: string; outcome?: string; entries: number; secondsSaved: number }[];
}

export interface TaskPage {
  items: Task[];
  total: number;
  nextCursor: string | null;
}

export type BulkAction = 'move' | 'clearError' | 'urgent' | 'approve' | 'reject' | 'delete';

export interface Job {
  id: string;
  status: 'running' | 'done' | 'failed';
  total: number;
  done: number;
  failed: number;
  errors: { id?: number; code?: string; message: string }[];
}

export interface ApiErrorBody {
  code: string;
  message: string;
  requestId?: string;
  errors?: { field?: string; index?: number; code: string; message: string }[];
}
