/**
 * The one shape of a refusal. Domain code refuses a request by throwing a `Refusal` with a code
 * from the closed set below; a batch operation answers each item with an `Outcome` that holds the
 * same `Refusal`. Each HTTP surface maps every code to its status in one exhaustive table
 * (src/mate-api/status.ts for the Mate API), so a new code does not compile until each surface
 * has decided how to answer it.
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
  | 'task_busy'
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
  // people acting on tasks (src/tasks/people.ts)
  | 'task_locked'
  | 'invalid_transition'
  // set-up and admin
  | 'conflict'
  | 'not_found'
  // people (the /v1 API): sign-in, sessions, roles
  | 'unauthenticated'
  | 'invalid_credentials'
  | 'forbidden'
  | 'csrf_failed';

export interface FieldProblem {
  index?: number;
  field?: string;
  value?: unknown;
  code: ErrorCode;
  message: string;
}

/**
 * A request refused: nothing was changed. `problems` lists every problem found in the input (the
 * message names the first); `details` are extra facts the answer carries (e.g. `existingTaskId`).
 */
export class Refusal extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly problems: FieldProblem[] = [],
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/** A refusal listing every problem found (at most 100); its message names the first. */
export function problemsRefusal(problems: FieldProblem[]): Refusal {
  const first = problems[0];
  return new Refusal(first.code, first.message, problems.slice(0, 100));
}

/** The outcome of one item of a batch: its result, or the refusal that left it unchanged. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; refusal: Refusal };

export const refused = (refusal: Refusal): { ok: false; refusal: Refusal } => ({ ok: false, refusal });
