/**
 * The Mate authentication state of one app: signing keys, cached revocation state, sign-in
 * throttle and the bound on concurrent password hashing. It is part of the services object (src/services.ts).
 */
import type { Config } from '../config.js';
import type { Store } from '../db/store.js';
import type { Clock } from '../lib/clock.js';
import type { ChangeNotifier } from '../lib/notifier.js';
import { KeyRing } from './keys.js';
import { RevocationCache } from './revocation.js';
import { SignInThrottle } from './throttle.js';
import { Semaphore } from './semaphore.js';

/**
 * Two argon2id hashes at a time (one per core of the 2-core target machine), at most 256 more
 * waiting; beyond that a sign-in gets 503 at once instead of a growing queue under a flood.
 */
const HASH_CONCURRENCY = 2;
const HASH_QUEUE = 256;

export class MateAuth {
  private constructor(
    readonly store: Pick<Store, 'db'>,
    readonly clock: Clock,
    readonly issuer: string,
    readonly keys: KeyRing,
    readonly state: RevocationCache,
    readonly throttle: SignInThrottle,
    readonly hashSlots: Semaphore,
  ) {}

  static async create(config: Config, store: Pick<Store, 'db'>, clock: Clock, notifier: ChangeNotifier): Promise<MateAuth> {
    const keys = await KeyRing.create(store.db, clock, config, notifier);
    return new MateAuth(
      store,
      clock,
      config.tokenIssuer,
      keys,
      new RevocationCache(store.db, clock, notifier),
      new SignInThrottle(store.db, clock, {
        maxFailuresPerUser: config.signInMaxFailuresPerUser,
        maxFailuresPerAddress: config.signInMaxFailuresPerAddress,
        windowSeconds: config.signInWindowSeconds,
      }),
      new Semaphore(HASH_CONCURRENCY, HASH_QUEUE),
    );
  }

  close(): void {
    this.keys.close();
    this.state.close();
  }
}
