/** Dropping sign-in throttle rows whose window has ended (docs/mate-api.md §2), so the table stays small. */
import type { SignInThrottle } from '../auth/throttle.js';
import type { Job } from './runner.js';

export function pruneSignInFailures(throttle: SignInThrottle): Promise<number> {
  return throttle.prune();
}

/** The job; one idempotent delete (the window's end is read from the throttle's clock). */
export function signInPruningJob(throttle: SignInThrottle, everyMs: number): Job<{ signInFailuresPruned: number }> {
  return {
    name: 'signin-pruning',
    everyMs,
    run: async () => ({ signInFailuresPruned: await pruneSignInFailures(throttle) }),
  };
}
