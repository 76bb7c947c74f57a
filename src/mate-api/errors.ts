/** The one map of error code → HTTP status on the Mate API (mate-api §5). */
import type { ErrorCode } from '../lib/errors.js';

const STATUS: Partial<Record<ErrorCode, number>> = {
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
};

/** Business refusals (task_not_found, queue_empty, …) are answered 200: every official client throws on non-2xx. */
export function statusFor(code: ErrorCode): number {
  return STATUS[code] ?? 200;
}
