/** The errors the client throws, and the two a worker's handler throws to choose a task's outcome. */

/** One problem of a refused request, as the server lists them in `errors` (docs/mate-api.md §5). */
export interface Problem {
  /** the item of a batch (CreateTasks, createTasksInChunks: the index in the caller's whole list) */
  index?: number;
  field?: string;
  value?: unknown;
  code: string;
  message: string;
}

/**
 * A call that did not succeed: an HTTP error answer (status and the server's `code`), a business
 * refusal when `throwOnRefusal` is on (status 200, `succeeded: false`), or a fault on the way
 * (status 0 with `code` `network_error` or `timeout`). `requestId` is the server's X-Request-Id,
 * the key to its log line; null when no answer came.
 */
export class QueuemateError extends Error {
  override readonly name = 'QueuemateError';
  readonly status: number;
  readonly code: string;
  readonly requestId: string | null;
  readonly errors: Problem[];
  /** the answer's parsed body, when there was one */
  readonly body: unknown;
  /** seconds the server asked to wait (Retry-After), when it did */
  readonly retryAfterSeconds: number | null;

  constructor(init: {
    status: number;
    code: string;
    message: string;
    requestId?: string | null;
    errors?: Problem[];
    body?: unknown;
    retryAfterSeconds?: number | null;
    cause?: unknown;
  }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.requestId = init.requestId ?? null;
    this.errors = init.errors ?? [];
    this.body = init.body;
    this.retryAfterSeconds = init.retryAfterSeconds ?? null;
  }
}

/** What a hand-back may carry besides the outcome (docs/mate-api.md §6.4). */
export interface HandBackDetails {
  reason?: string;
  comment?: string;
  overwriteSecondsSaved?: number;
  overwriteEntries?: number;
}

/** Thrown by a worker's handler: the task goes to Manual, for a person. The message is its reason unless `reason` is given. */
export class ManualError extends Error {
  override readonly name = 'ManualError';
  readonly details: HandBackDetails;
  constructor(message: string, details: HandBackDetails = {}) {
    super(message);
    this.details = details;
  }
}

/**
 * Thrown by a worker's handler: the task goes back to Ready to be tried again, at `activationDate`
 * when given, and becomes an Error once the process's retry limit is reached.
 */
export class RetryError extends Error {
  override readonly name = 'RetryError';
  readonly details: HandBackDetails & { activationDate?: Date | string };
  constructor(message: string, details: HandBackDetails & { activationDate?: Date | string } = {}) {
    super(message);
    this.details = details;
  }
}
