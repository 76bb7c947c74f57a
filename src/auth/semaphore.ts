/**
 * Bounds concurrent argon2 work. Each hash takes ~19 MiB and tens of ms of a core; unbounded, a
 * flood of sign-ins would take every libuv thread (also used by fs and dns) and the memory.
 */
export class OverloadedError extends Error {}

export class Semaphore {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    readonly max: number,
    /** Callers beyond this many waiting are refused at once (OverloadedError) rather than queued. */
    readonly maxWaiting: number,
  ) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.max) {
      if (this.waiting.length >= this.maxWaiting) throw new OverloadedError('too many sign-ins at once');
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.active++;
    }
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      // hand the slot straight to the next caller, so active never drops while others wait
      if (next) next();
      else this.active--;
    }
  }
}
