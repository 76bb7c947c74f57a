/**
 * The Mate API's objects as the client types them (docs/mate-api.md §4–§6). `F` is a process's
 * fields as the server answers them: `{ invoiceNo: string; amount: number }`. Where the server
 * takes a date, the client also takes a `Date`.
 */
import type { Problem } from './errors.js';

/** A process's fields: any object type; its keys are field names. */
export type Fields = object;

/** A field value as sent: its own type, null (left alone, or empty on UpdateTask: use "" to empty), a Date where text is taken. */
export type FieldInput<T> = T | null | (T extends string ? Date : never);

/** Task data for CreateTask, CreateTasks and CreateAndTakeTask (docs/mate-api.md §6.3). */
export type TaskInput<F extends Fields> = { [K in keyof F]?: FieldInput<F[K]> } & {
  /** the task's first comment */
  comment?: string;
  /** when the task may be taken; default: now plus the process's offset */
  activationDate?: Date | string;
  deadline?: Date | string;
  urgent?: boolean;
};

/** UpdateTask's data: the fields to change and a comment to add. */
export type UpdateInput<F extends Fields> = { [K in keyof F]?: FieldInput<F[K]> } & { comment?: string };

/** The keys every task object has (docs/mate-api.md §6.1). */
export interface TaskMeta {
  taskId: number;
  reason: string | null;
  runId: number;
  processKey: string;
  /** a date-time in the tenant's time zone, e.g. 2024-05-02T09:30:00.000+02:00 */
  activationDate: string;
  deadline: string | null;
  urgent: boolean;
  retryCount: number;
}

/** A task taken: its system keys and its fields (null when empty). */
export type Task<F extends Fields = Record<string, unknown>> = TaskMeta & { [K in keyof F]: F[K] | null };

/** Why there is no task to take (docs/mate-api.md §5), or why CreateAndTakeTask took none. */
export type DummyCode =
  | 'queue_empty'
  | 'gate_closed'
  | 'blocked_date'
  | 'stopped_by_errors'
  | 'tasks_disabled'
  | 'approval_required'
  | 'required_field_missing'
  | 'duplicate_key'
  | 'unavailable';

/** The answer when there is no task (docs/mate-api.md §6.2): taskId −1 and a code saying why. */
export interface DummyTask {
  taskId: -1;
  reason: null;
  runId: -1;
  processKey: string;
  message: string;
  code: DummyCode | (string & {});
  requestId: string;
  errors?: Problem[];
  existingTaskId?: number;
}

/** True for a task, false for the dummy task. */
export function isTask<F extends Fields>(t: Task<F> | DummyTask): t is Task<F> {
  return t.taskId > 0;
}

/** The keys of every Response (docs/mate-api.md §4); `code` and `errors` on refusals. */
export interface Reply {
  succeeded: boolean;
  message: string;
  requestId: string;
  code?: string;
  errors?: Problem[];
}

export interface OkToRunReply {
  gateOpen: boolean;
  notBlockedDate: boolean;
  stoppedByErrors: boolean;
  tasksAvailable: boolean;
  okToRun: boolean;
  requestId: string;
}

export interface RunReply {
  processKey: string;
  runId: number;
  requestId: string;
}

export type Queue = 'Ready' | 'NeedsData' | 'NeedsApproval' | 'Manual' | 'Solved';

export interface CreateTaskReply extends Reply {
  /** −1 when nothing was created */
  taskId: number;
  queue?: Queue;
  /** duplicate_key: the task holding the value */
  existingTaskId?: number;
}

export interface CreateTasksReply extends Reply {
  taskIds: number[];
  existingTaskId?: number;
}

export interface HandBackReply<F extends Fields = Record<string, unknown>> extends Reply {
  /** the task's queue afterwards */
  queue?: Queue;
  /** the task's Error flag afterwards */
  error?: boolean;
  /** with `takeNext`: the next task, or the dummy task */
  next?: Task<F> | DummyTask;
}

export interface ExtendLockReply extends Reply {
  lockedUntil: string | null;
}

export interface ReturnResult {
  taskId: number | null;
  succeeded: boolean;
  message: string;
  code?: string;
  queue?: Queue;
  error?: boolean;
}

export interface ReturnReply extends Reply {
  results: ReturnResult[];
}

/** GetRules: one key per rule, typed by the caller, and the process key. */
export type Rules<R extends object = Record<string, unknown>> = R & { processKey: string };

/** A hand-back (docs/mate-api.md §6.4). */
export interface TaskAction {
  taskId: number;
  reason?: string;
  comment?: string;
  overwriteSecondsSaved?: number;
  overwriteEntries?: number;
}

export interface RetryAction extends TaskAction {
  /** when to try again; default: now, last in the queue */
  activationDate?: Date | string;
}

export type ReturnItem = (TaskAction & { action: 'Solved' | 'Manual' | 'Error' }) | (RetryAction & { action: 'Retry' });

/**
 * The JSON of a value: Dates as ISO 8601 (the server reads the offset), numbers as JSON numbers
 * whatever the machine's locale. NaN and infinities, which JSON.stringify would turn into null
 * (an absent value), are refused here instead.
 */
export function toJson(value: unknown): string {
  return JSON.stringify(value, function (this: Record<string, unknown>, key, v: unknown) {
    const raw = this[key];
    if (raw instanceof Date) {
      if (Number.isNaN(raw.getTime())) throw new TypeError(`${key || 'value'}: an invalid Date`);
      return raw.toISOString();
    }
    if (typeof v === 'number' && !Number.isFinite(v)) throw new TypeError(`${key || 'value'}: ${v} cannot be sent as a number`);
    if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
    return v;
  });
}
