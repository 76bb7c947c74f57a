/**
 * Robots first on the embedded store. PGlite is one connection inside this process: a background
 * job that runs statement after statement (a bulk move of 100,000 tasks, an export) would keep
 * every request's statements waiting until it ends, and with PGlite on the server's own thread
 * (QUEUEMATE_EMBEDDED_THREAD=main), whose statements complete without going through the event
 * loop's I/O phase, would keep every HTTP request from even being read. Background work therefore runs in short units (a chunk of a
 * bulk job, a page of an export) and awaits `background()` before each one, which
 *
 * - yields to the event loop, so that requests that arrived meanwhile are read and queue for the
 *   connection ahead of the next unit; and
 * - on the embedded store, waits while Mate API calls are in flight (a robot's call makes several
 *   statements, each of which would otherwise queue behind a whole unit), and for `quietMs` after
 *   the last one ended (a robot's next call follows its previous answer within milliseconds), at
 *   most `maxDeferMs` per unit, so background work still moves under a steady stream of calls.
 *
 * On PostgreSQL the pool has several connections and background work only yields.
 */
export interface TurnsOptions {
  /** wait for foreground calls (the embedded store); false: only yield */
  prioritize: boolean;
  /** the longest one unit of background work waits for foreground calls */
  maxDeferMs?: number;
  /** how long after the last foreground call ended background work still waits for the next */
  quietMs?: number;
}

/** How long a unit of background work waits at most for robots' calls to end (bench/jobs-vs-robots.ts). */
export const MAX_DEFER_MS = 200;
export const QUIET_MS = 20;

export class Turns {
  /** foreground calls in flight */
  private active = 0;
  private idle: Array<() => void> = [];
  /** when the last foreground call ended (ms, performance.now) */
  private lastLeft = -Infinity;
  readonly prioritize: boolean;
  private readonly maxDeferMs: number;
  private readonly quietMs: number;
  /** units of background work that waited for foreground calls, and for how long in all (tests, bench) */
  deferred = 0;
  deferredMs = 0;

  constructor(opts: TurnsOptions) {
    this.prioritize = opts.prioritize;
    this.maxDeferMs = opts.maxDeferMs ?? MAX_DEFER_MS;
    this.quietMs = opts.quietMs ?? QUIET_MS;
  }

  /** A foreground call begins; the function returned ends it (calling it again does nothing). */
  enter(): () => void {
    this.active++;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.active--;
      this.lastLeft = performance.now();
      if (this.active === 0) for (const wake of this.idle.splice(0)) wake();
    };
  }

  /** Foreground calls in flight now. */
  get inFlight(): number {
    return this.active;
  }

  /** Awaited by background work before each short unit: yields, then lets foreground calls go first. */
  async background(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (!this.prioritize) return;
    const started = performance.now();
    const deadline = started + this.maxDeferMs;
    let waited = false;
    for (;;) {
      const now = performance.now();
      if (now >= deadline) break;
      if (this.active > 0) await this.untilIdle(deadline - now);
      else if (now - this.lastLeft < this.quietMs) await sleep(Math.min(this.quietMs - (now - this.lastLeft), deadline - now));
      else break;
      waited = true;
    }
    if (waited) {
      this.deferred++;
      this.deferredMs += performance.now() - started;
    }
  }

  /** Resolves when no foreground call is in flight, or after `ms`. */
  private untilIdle(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        this.idle = this.idle.filter((w) => w !== wake);
        resolve();
      }, ms);
      this.idle.push(wake);
    });
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
