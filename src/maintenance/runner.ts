/**
 * The one runner of the background jobs (docs/operations.md, "Background jobs"). A job is a
 * declaration `{ name, everyMs, run(now) }`, one file each in this folder; the runner owns what
 * every job needs and none writes again:
 *
 * - the timers, unref'd: a timer never keeps the process alive;
 * - the overlap guard: a run is never overlapped by another run of the same job; a period that
 *   comes while it runs is skipped;
 * - early runs: a job may connect what asks for a run before its period (`triggers`), and
 *   `trigger(name)` asks for one. A trigger runs the job now, or, when it is running, once more
 *   right after it: any number of triggers during a run make one run after it (coalesced);
 * - each job's last run and last error, shown by /readyz;
 * - the log: a failing run is logged at warn and the job runs again at its next turn (its period
 *   or its next trigger), never crashing the process; a run that did something says so at info;
 * - shutdown: stop() ends the timers and triggers, tells the runs in flight through their signal,
 *   and awaits them.
 *
 * Jobs added in one call form a round: they run one after another, in the order given, on one
 * timer, so that a later job sees what the earlier ones did in the same round (the queue counters'
 * fold comes after the lease recovery and the bulk jobs, whose deltas it takes in). Each job of a
 * round keeps its own last run and last error, and one failing does not stop the others.
 *
 * The runner coordinates the runs of one server process only. What keeps several processes from
 * doing the same work twice is each job's own statements (SKIP LOCKED, leases, advisory locks,
 * idempotent deletes), so every job is correct with any number of processes.
 */
import type { Clock } from '../lib/clock.js';

export interface RunContext {
  /** the run was asked for by a trigger (or is the coalesced run after one), not by the period */
  readonly early: boolean;
  /** aborted at shutdown: a long run stops at its next safe point */
  readonly signal: AbortSignal;
}

/** A line to log after a run: at info unless said otherwise. */
export interface LogLine {
  msg: string;
  level?: 'info' | 'debug';
}

export interface Job<R = unknown> {
  /** how /readyz and the log lines name the job */
  readonly name: string;
  /** ms between two runs; null: the job runs only when triggered */
  readonly everyMs: number | null;
  /** One run at `now`; what it returns is logged when `report` says so (an object's keys go into the line). */
  run(now: Date, ctx: RunContext): Promise<R>;
  /**
   * Connects what asks for a run before the period (a change notifier, the events hub) while the
   * runner runs: `soon()` asks for one. Returns what disconnects it.
   */
  triggers?(soon: () => void): () => void;
  /** When set, a run as soon as the runner starts, announced at info with this line (why). */
  readonly atStart?: string;
  /** The line logged after a successful run; null: nothing worth telling. */
  report?(result: R): LogLine | null;
}

/** What the runner logs through: any pino-style logger (the app passes Fastify's), so this layer needs no HTTP import. */
export interface JobLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

/** Calls `fn` every `ms`; returns what stops it. Tests pass timers they move by hand. */
export interface Timers {
  every(ms: number, fn: () => void): () => void;
}

export const realTimers: Timers = {
  every(ms, fn) {
    const timer = setInterval(fn, ms);
    timer.unref(); // background work never keeps the process alive
    return () => clearInterval(timer);
  },
};

/** A job's last run and last error, as /readyz shows them. */
export interface JobStatus {
  /** when its last successful run ended (ISO) */
  lastRunAt: string | null;
  /**
   * its last failure, if it ever failed (kept after a later success: compare the times): when,
   * and the error's code (a SQLSTATE, a system code such as ECONNREFUSED, else its class). The
   * message is in the log only: /readyz answers without a token.
   */
  lastError?: { at: string; code: string };
}

interface Entry {
  job: Job;
  round: Round;
  lastRunAt: Date | null;
  lastError: { at: Date; code: string } | null;
}

interface Round {
  entries: Entry[];
  everyMs: number | null;
  /** the runs in flight (the overlap guard) */
  running: Promise<void> | null;
  /** a trigger came while it ran: once more after it */
  again: boolean;
}

export interface JobRunnerOptions {
  clock: Clock;
  log: JobLog;
  timers?: Timers;
}

/** The code shown for a failure: never its message (rows, addresses). */
function errorCode(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code !== '') return code;
  return err instanceof Error ? err.name : typeof err;
}

export class JobRunner {
  private readonly rounds: Round[] = [];
  private readonly entries = new Map<string, Entry>();
  private readonly disconnect: Array<() => void> = [];
  private readonly abort = new AbortController();
  private readonly timers: Timers;
  private started = false;
  private stopped = false;

  constructor(private readonly opts: JobRunnerOptions) {
    this.timers = opts.timers ?? realTimers;
  }

  /**
   * Adds one job, or a round of jobs that run one after another in the order given (they share
   * their period). Before start() only.
   */
  add(...jobs: Job<any>[]): this {
    if (this.started) throw new Error('JobRunner.add: the runner has started');
    if (jobs.length === 0) throw new Error('JobRunner.add: no job');
    const everyMs = jobs[0].everyMs;
    for (const [i, job] of jobs.entries()) {
      if (this.entries.has(job.name) || jobs.findIndex((j) => j.name === job.name) !== i)
        throw new Error(`JobRunner.add: a second job named ${job.name}`);
      if (job.everyMs !== everyMs) throw new Error(`JobRunner.add: the jobs of a round share their period (${job.name})`);
      if (everyMs !== null && !(everyMs > 0)) throw new Error(`JobRunner.add: ${job.name} runs every ${everyMs} ms`);
    }
    const round: Round = { entries: [], everyMs, running: null, again: false };
    for (const job of jobs) {
      const entry: Entry = { job, round, lastRunAt: null, lastError: null };
      round.entries.push(entry);
      this.entries.set(job.name, entry);
    }
    this.rounds.push(round);
    return this;
  }

  /** Starts the timers and the triggers, and the runs asked for at start. */
  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    for (const round of this.rounds) {
      if (round.everyMs !== null) this.disconnect.push(this.timers.every(round.everyMs, () => this.tick(round)));
    }
    for (const { job } of this.entries.values()) {
      if (job.triggers) this.disconnect.push(job.triggers(() => this.trigger(job.name)));
    }
    for (const { job } of this.entries.values()) {
      if (job.atStart) {
        this.opts.log.info({ job: job.name }, job.atStart);
        this.trigger(job.name);
      }
    }
  }

  /** Runs the job's round now or, when it is running, once more right after (coalesced). */
  trigger(name: string): void {
    const { round } = this.entry(name);
    if (this.stopped) return;
    if (round.running) {
      round.again = true;
      return;
    }
    this.launch(round, true);
  }

  /**
   * One run of one job at `now`, after the run of its round in flight if any (never overlapped);
   * resolves with what it returned, rejects with its error (recorded as its last error, not
   * logged: the caller has it). For tests and tools that run a job by hand.
   */
  async runOnce<R = unknown>(name: string, now: Date = this.opts.clock.now()): Promise<R> {
    const entry = this.entry(name);
    const round = entry.round;
    while (round.running) await round.running;
    let outcome!: { ok: true; result: unknown } | { ok: false; err: unknown };
    await this.occupy(round, async () => {
      outcome = await this.execute(entry, now, false);
    });
    if (!outcome.ok) throw outcome.err;
    return outcome.result as R;
  }

  /** When the job's last successful run ended; null before. */
  lastRunAt(name: string): Date | null {
    return this.entry(name).lastRunAt;
  }

  /** Every job's last run and last error, by name, in the order added. */
  status(): Record<string, JobStatus> {
    const out: Record<string, JobStatus> = {};
    for (const [name, e] of this.entries) {
      out[name] = {
        lastRunAt: e.lastRunAt?.toISOString() ?? null,
        ...(e.lastError ? { lastError: { at: e.lastError.at.toISOString(), code: e.lastError.code } } : {}),
      };
    }
    return out;
  }

  /** Resolves when no job runs. */
  async settled(): Promise<void> {
    for (;;) {
      const running = this.rounds.flatMap((r) => (r.running ? [r.running] : []));
      if (running.length === 0) return;
      await Promise.all(running);
    }
  }

  /** Stops the timers and triggers, tells the runs in flight to stop, and awaits them. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const off of this.disconnect.splice(0)) off();
    this.abort.abort();
    await this.settled();
  }

  private entry(name: string): Entry {
    const e = this.entries.get(name);
    if (!e) throw new Error(`JobRunner: no job named ${name}`);
    return e;
  }

  private tick(round: Round): void {
    if (this.stopped || round.running) return; // a slow run is never overlapped by the next one
    this.launch(round, false);
  }

  private launch(round: Round, early: boolean): void {
    void this.occupy(round, () => this.pass(round, early));
  }

  /** Marks the round running while `work` runs; a trigger meanwhile runs it again after. */
  private occupy(round: Round, work: () => Promise<void>): Promise<void> {
    round.again = false;
    const running = work().finally(() => {
      round.running = null;
      if (round.again && !this.stopped) this.launch(round, true);
    });
    round.running = running;
    return running;
  }

  /** The jobs of a round, one after another, at one `now`. */
  private async pass(round: Round, early: boolean): Promise<void> {
    const now = this.opts.clock.now();
    for (const entry of round.entries) {
      if (this.stopped) return;
      const outcome = await this.execute(entry, now, early);
      if (!outcome.ok) {
        const next = round.everyMs === null ? 'when it is next asked for' : `in ${round.everyMs / 1000} s`;
        this.opts.log.warn({ err: outcome.err, job: entry.job.name }, `background job ${entry.job.name} failed; it runs again ${next}`);
      }
    }
  }

  /** One run of a job: records its last run or error and logs what it reports. */
  private async execute(entry: Entry, now: Date, early: boolean): Promise<{ ok: true; result: unknown } | { ok: false; err: unknown }> {
    const { job } = entry;
    let result: unknown;
    try {
      result = await job.run(now, { early, signal: this.abort.signal });
    } catch (err) {
      entry.lastError = { at: this.opts.clock.now(), code: errorCode(err) };
      return { ok: false, err };
    }
    entry.lastRunAt = this.opts.clock.now();
    const line = job.report?.(result);
    if (line) {
      const details = typeof result === 'object' && result !== null ? result : {};
      this.opts.log[line.level ?? 'info']({ job: job.name, ...details }, line.msg);
    }
    return { ok: true, result };
  }
}
