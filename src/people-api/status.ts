/**
 * The people's API status for every error code (docs/people-api.md §2). A `Record` over the whole
 * code set: a new code does not compile until this surface has decided its status.
 */
import type { ErrorCode } from '../lib/errors.js';

export const PEOPLE_API_STATUS: Record<ErrorCode, number> = {
  invalid_token: 401,
  unauthenticated: 401,
  invalid_credentials: 401,
  insufficient_scope: 403,
  forbidden: 403,
  csrf_failed: 403,
  route_not_found: 404,
  process_not_found: 404,
  task_not_found: 404,
  run_not_found: 404,
  not_found: 404,
  invalid_body: 400,
  missing_field: 400,
  invalid_field: 400,
  unknown_field: 400,
  invalid_activation_date: 400,
  required_field_missing: 400,
  payload_too_large: 413,
  unsupported_media_type: 415,
  idempotency_in_progress: 409,
  idempotency_conflict: 422,
  rate_limited: 429,
  internal_error: 500,
  unavailable: 503,
  // state conflicts: the request was well-formed, the task or process is not in a state that allows it
  task_solved: 409,
  lock_expired: 409,
  task_not_locked_by_you: 409,
  run_finished: 409,
  tasks_disabled: 409,
  duplicate_key: 409,
  approval_required: 409,
  queue_empty: 409,
  gate_closed: 409,
  blocked_date: 409,
  stopped_by_errors: 409,
  items_failed: 409,
  task_locked: 409,
  invalid_transition: 409,
  conflict: 409,
};
