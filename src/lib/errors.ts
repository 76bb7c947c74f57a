/**
 * The closed set of error codes. Each surface maps a code to its HTTP status in one place
 * (mate-api/errors.ts for the Mate API); domain code throws AppError with a code and a message.
 */
export type ErrorCode =
  // request and token faults
  | 'invalid_token'
  | 'insufficient_scope'
  | 'route_not_found'
  | 'process_not_found'
  | 'invalid_body'
  | 'missing_field'
  | 'invalid_field'
  | 'unknown_field'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'idempotency_in_progress'
  | 'idempotency_conflict'
  | 'rate_limited'
  | 'internal_error'
  | 'unavailable'
  // business refusals (answered 200 with succeeded: false on the Mate API)
  | 'task_not_found'
  | 'task_solved'
  | 'lock_expired'
  | 'task_not_locked_by_you'
  | 'invalid_activation_date'
  | 'run_not_found'
  | 'run_finished'
  | 'tasks_disabled'
  | 'duplicate_key'
  | 'required_field_missing'
  | 'approval_required'
  | 'queue_empty'
  | 'gate_closed'
  | 'blocked_date'
  | 'stopped_by_errors'
  | 'items_failed'
  // set-up and admin
  | 'conflict'
  | 'not_found';

export interface FieldProblem {
  index?: number;
  field?: string;
  value?: unknown;
  code: ErrorCode;
  message: string;
}

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly problems: FieldProblem[] = [],
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/** A 400-class error listing every problem found; its message names the first. */
export function problemsError(problems: FieldProblem[]): AppError {
  const first = problems[0];
  return new AppError(first.code, first.message, problems.slice(0, 100));
}
