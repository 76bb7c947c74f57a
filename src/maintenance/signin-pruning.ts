/** Dropping sign-in throttle rows whose window has ended (docs/mate-api.md §2), so the table stays small. */
import type { SignInThrottle } from '../auth/throttle.js';

export function pruneSignInFailures(throttle: SignInThrottle): Promise<number> {
  return throttle.prune();
}
