/**
 * The Mate API's status for every error code (docs/mate-api.md §5). Business refusals answer 200
 * with `succeeded: false`: every official client throws on a non-2xx status. A `Record` over the
 * whole code set: a new code does not compile until this surface has decided its status.
 */
import type { ErrorCode } from '../lib/errors.js';

export const MATE_API_STATUS: Record<ErrorCode, number> = {
  invalid_token: 401,
  insufficient_scope: 403,
  route_not_found: 404,
  process_not_found: 404,
  not_found: 404,
  invalid_body: 400,
  missing_field: 400,
  invalid_field: 400,
  unknown_field: 400,
  payload_too_large: 413,
  unsupported_media_type: 415,
  idempotency_in_progress: 409,
  idempotency_conflict: 422,
  rate_limited: 429,
  internal_error: 500,
  unavailable: 503,
  task_not_found: 200,
  task_solved: 200,
  lock_expired: 200,
  task_not_locked_by_you: 200,
  invalid_activation_date: 200,
  run_not_found: 200,
  run_finished: 200,
  tasks_disabled: 200,
  duplicate_key: 200,
  required_field_missing: 200,
  approval_required: 200,
  queue_empty: 200,
  gate_closed: 200,
  blocked_date: 200,
  stopped_by_errors: 200,
  items_failed: 200,
  // people's task actions never reach the Mate API's routes; a 409 would be their meaning
  task_locked: 409,
  invalid_transition: 409,
  // set-up codes never reach the Mate API's routes; a 409 would be their meaning
  conflict: 409,
  // people's codes never reach the Mate API (people's credentials are refused as invalid_token)
  unauthenticated: 401,
  invalid_credentials: 401,
  forbidden: 403,
  csrf_failed: 403,
};
