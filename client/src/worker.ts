/**
 * runWorker: the loop of a worker robot. It checks OkToRun, takes tasks, keeps each task's lock
 * alive while its handler runs, and hands every task back by what the handler did:
 *
 *   returns (optionally { reason, comment, overwriteSecondsSaved, overwriteEntries }) → Solved
 *   throws ManualError                                                                 → Manual
 *   throws RetryError (optionally with an activationDate)                               → Retry
 *   throws anything else                → Error, with the message as reason and the stack as comment
 *
 * With one task per slot (the default), each hand-back also takes the slot's next task
 * (`takeNext`, docs/mate-api.md §7.10): one request per task. With `takeMany`, free slots are
 * filled from TakeMany calls and hand-backs go alone.
 *
 * On the signal it takes nothing more; tasks in flight finish, or, once `stopDeadlineMs` has passed,
 * their handlers' signals abort and the tasks go back to Ready (Retry). When taking fails for good
 * (after the client's retries) the loop reports Failure for the process and rejects.
 */
import { ManualError, QueuemateError, RetryError, type HandBackDetails } from './errors.js';
import { sleep } from './http.js';
import type { MateClient, ProcessClient } from './mate.js';
import { isTask, type DummyTask, type Fields, type HandBackReply, type Task } from './types.js';

export interface HandlerContext<F extends Fields> {
  /** aborts when the task must be given up: its lock was lost, or the stop deadline passed */
  signal: AbortSignal;
  /** the process's calls, e.g. updateTask to save progress */
  process: ProcessClient<F>;
}

export type Handler<F extends Fields> = (task: Task<F>, ctx: HandlerContext<F>) => Promise<HandBackDetails | void> | HandBackDetails | void;

export interface WorkerOptions {
  /** tasks handled at once (default 1) */
  concurrency?: number;
  /** stop: take nothing more, let tasks in flight finish (see stopDeadlineMs) */
  signal?: AbortSignal;
  /** fill free slots with TakeMany calls of up to this many tasks (1–100) instead of one TakeNext per task */
  takeMany?: number;
  /**
   * The lease asked for while a handler runs: ExtendLock(lockSeconds) every lockSeconds / 3.
   * Default 60: a handler's lock is extended after 20 s, so the process's lock timeout (default
   * 3600 s) must be longer than lockSeconds / 3; set it lower for processes with short leases.
   */
  lockSeconds?: number;
  /** ms after the stop signal before unfinished tasks are handed back to Ready (default 20,000) */
  stopDeadlineMs?: number;
  /** return once there is nothing to take, as a robot started by a scheduler does (default: wait for work) */
  untilEmpty?: boolean;
  /** longest wait between two OkToRun checks while there is nothing to take (default 30,000 ms) */
  maxIdleMs?: number;
  /** problems that do not stop the loop: a hand-back refused or failed, a lock lost. Default: one line on stderr */
  onError?: (error: unknown, task?: Task<Record<string, unknown>>) => void;
}

export interface WorkerStats {
  solved: number;
  manual: number;
  retried: number;
  errors: number;
  /** hand-backs refused or failed (the task comes back after its lease) */
  handBackFailures: number;
}

// Kubernetes sends SIGKILL 30 s after SIGTERM, systemd 90 s: 20 s for handlers leaves time to hand back.
const DEFAULT_STOP_DEADLINE_MS = 20_000;
// An empty queue is looked at again after 1 s, then 2, 4 … up to 30 s: one OkToRun per worker, not one TakeNext per slot.
const FIRST_IDLE_MS = 1_000;
const DEFAULT_MAX_IDLE_MS = 30_000;
const DEFAULT_LOCK_SECONDS = 60;
// An Error's comment is its stack; a runaway one is cut so the hand-back stays far below the 1 MiB body limit.
const MAX_STACK_CHARS = 32_000;

type Outcome = { action: 'Solved' | 'Manual' | 'Error' | 'Retry'; body: Record<string, unknown> };

/** Runs the worker until the signal (or, with `untilEmpty`, until nothing is left to take). */
export async function runWorker<F extends Fields = Record<string, unknown>>(
  client: MateClient,
  processKey: string,
  handler: Handler<F>,
  options: WorkerOptions = {},
): Promise<WorkerStats> {
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? 1));
  const lockSeconds = options.lockSeconds ?? DEFAULT_LOCK_SECONDS;
  const stopDeadlineMs = options.stopDeadlineMs ?? DEFAULT_STOP_DEADLINE_MS;
  const maxIdleMs = options.maxIdleMs ?? DEFAULT_MAX_IDLE_MS;
  const onError = options.onError ?? defaultOnError;
  const proc = client.process<F>(processKey);
  const stats: WorkerStats = { solved: 0, manual: 0, retried: 0, errors: 0, handBackFailures: 0 };

  // stopping: take nothing more. `stop` aborts waits; `deadline` aborts the handlers still running.
  const stop = new AbortController();
  const deadline = new AbortController();
  let fatal: unknown = null;
  let deadlineTimer: ReturnType<typeof setTimeout> | undefined;
  const beginStop = () => {
    if (stop.signal.aborted) return;
    stop.abort();
    deadlineTimer = setTimeout(() => deadline.abort(new Error('the worker stopped')), stopDeadlineMs);
  };
  const onSignal = () => beginStop();
  if (options.signal?.aborted) beginStop();
  options.signal?.addEventListener('abort', onSignal, { once: true });

  // the loop broke (taking failed for good): report it on the process once, then stop
  const breakLoop = (err: unknown) => {
    if (fatal === null) fatal = err;
    beginStop();
  };

  const idle = new Idle(proc, stop.signal, maxIdleMs, breakLoop);

  // the tasks whose handlers run: aborted together when the stop deadline passes (one listener on
  // the deadline for all of them, not one per task: 64 slots would pass Node's warning at 10)
  const running = new Set<AbortController>();
  deadline.signal.addEventListener('abort', () => running.forEach((c) => c.abort(deadline.signal.reason)), { once: true });

  /**
   * Works one task: the handler under a lock kept alive, then the outcome to hand back (Retry when
   * the stop deadline passed first; null when the lock was lost, as a hand-back would be refused).
   */
  async function work(task: Task<F>): Promise<Outcome | null> {
    const ctl = new AbortController();
    if (deadline.signal.aborted) ctl.abort(deadline.signal.reason);
    running.add(ctl);
    let lockLost = false;
    let done = false;
    const extender = setInterval(
      () => {
        proc.extendLock(task.taskId, lockSeconds, { signal: ctl.signal }).then(
          (r) => {
            // an answer that comes after the handler ended speaks of a task already handed back
            if (r.succeeded || done) return;
            lockLost = true;
            const err = new QueuemateError({ status: 200, code: r.code ?? 'lock_lost', message: r.message, requestId: r.requestId });
            ctl.abort(err);
            onError(err, task as Task<Record<string, unknown>>);
          },
          (err: unknown) => {
            if (!ctl.signal.aborted && !done) onError(err, task as Task<Record<string, unknown>>);
          },
        );
      },
      (lockSeconds * 1000) / 3,
    );
    try {
      const result = Promise.resolve().then(() => handler(task, { signal: ctl.signal, process: proc }));
      const settled = await Promise.race([
        result.then(
          (value) => ({ value }),
          (error: unknown) => ({ error }),
        ),
        untilAbort(ctl.signal),
      ]);
      if (settled === 'aborted') {
        result.catch(() => {}); // the handler may still end; its outcome no longer counts
        if (lockLost) return null;
        return { action: 'Retry', body: { taskId: task.taskId, reason: 'The worker stopped before the task was done' } };
      }
      return 'error' in settled ? outcomeOfError(task.taskId, settled.error) : outcomeOfValue(task.taskId, settled.value);
    } finally {
      done = true;
      clearInterval(extender);
      running.delete(ctl);
    }
  }

  /** Hands a task back, counting the outcome; with `next`, also takes the slot's next task. */
  async function handBack(task: Task<F>, outcome: Outcome, next: boolean): Promise<HandBackReply<F> | null> {
    const o = next ? { takeNext: true } : {};
    try {
      const b = outcome.body as { taskId: number };
      const r =
        outcome.action === 'Solved'
          ? await proc.solved(b, o)
          : outcome.action === 'Manual'
            ? await proc.manual(b, o)
            : outcome.action === 'Retry'
              ? await proc.retry(b, o)
              : await proc.error(b, o);
      if (!r.succeeded) {
        stats.handBackFailures++;
        onError(new QueuemateError({ status: 200, code: r.code ?? 'refused', message: r.message, requestId: r.requestId }), task as never);
        return null;
      }
      if (outcome.action === 'Solved') stats.solved++;
      else if (outcome.action === 'Manual') stats.manual++;
      else if (outcome.action === 'Retry' && !r.error) stats.retried++;
      else stats.errors++;
      return r;
    } catch (err) {
      stats.handBackFailures++;
      onError(err, task as never);
      return null;
    }
  }

  // TakeMany mode: the slots waiting for a task share one TakeMany call at a time, asking for as many as wait
  let buffer: Task<F>[] = [];
  let fetching: Promise<number> | null = null;
  let waiting = 0;
  async function takeFromMany(): Promise<Task<F> | null> {
    waiting++;
    try {
      for (;;) {
        const t = buffer.shift();
        if (t) return t;
        if (stop.signal.aborted) return null;
        fetching ??= (async () => {
          await Promise.resolve(); // the slots started together are all waiting by now
          const got = await proc.takeMany(Math.min(options.takeMany!, waiting, 100));
          buffer = buffer.concat(got);
          return got.length;
        })().finally(() => (fetching = null));
        // an empty answer sends every slot that waited for it to the idle wait, not to another TakeMany
        const n = await fetching.catch((err: unknown) => (breakLoop(err), 0));
        if (n === 0) return null;
      }
    } finally {
      waiting--;
    }
  }

  async function take(): Promise<Task<F> | DummyTask | null> {
    try {
      if (options.takeMany) return await takeFromMany();
      return await proc.takeNext();
    } catch (err) {
      breakLoop(err);
      return null;
    }
  }

  async function slot(): Promise<void> {
    let next: Task<F> | DummyTask | null = null;
    for (;;) {
      // the hand-back committed but its take failed (docs/mate-api.md §7.10): take again
      if (next !== null && !isTask(next) && next.code === 'unavailable') next = null;
      // tasks already taken are worked even while stopping: they are in flight
      if (next === null || !isTask(next)) {
        if (stop.signal.aborted) return;
        if (next === null) next = await take();
        if (next === null && fatal !== null) return;
        if (next === null || !isTask(next)) {
          if (options.untilEmpty) return;
          next = null;
          if (!(await idle.wait())) return;
          continue;
        }
      }
      idle.gotWork();
      const task: Task<F> = next;
      next = null;
      const outcome = await work(task);
      if (outcome === null) continue;
      const r = await handBack(task, outcome, !options.takeMany && !stop.signal.aborted);
      if (r?.next) next = r.next;
    }
  }

  try {
    const first = await proc.okToRun().catch((err: unknown) => (breakLoop(err), null));
    if (first && !first.okToRun) {
      if (options.untilEmpty) return stats;
      if (!(await idle.wait())) return await finish();
    }
    await Promise.all(Array.from({ length: concurrency }, () => slot()));
    return await finish();
  } finally {
    clearTimeout(deadlineTimer);
    options.signal?.removeEventListener('abort', onSignal);
    stop.abort();
  }

  async function finish(): Promise<WorkerStats> {
    if (fatal === null) return stats;
    const message = fatal instanceof Error ? (fatal.stack ?? fatal.message) : String(fatal);
    // best effort: the server may be what failed
    await proc.failure(`The worker loop of ${processKey} stopped: ${message}`, { timeoutMs: 5_000 }).catch(() => {});
    throw fatal;
  }
}

/**
 * Waiting for work while there is none: one OkToRun poll for the whole worker with back-off, the
 * waiting slots released together when tasks are available.
 */
class Idle {
  private waiters: Array<(go: boolean) => void> = [];
  private polling = false;
  private delayMs = FIRST_IDLE_MS;

  constructor(
    private readonly proc: Pick<ProcessClient<Fields>, 'okToRun'>,
    private readonly stop: AbortSignal,
    private readonly maxMs: number,
    private readonly breakLoop: (err: unknown) => void,
  ) {
    stop.addEventListener('abort', () => this.release(false), { once: true });
  }

  /** Resolves true when there may be work, false when the worker stops. */
  wait(): Promise<boolean> {
    if (this.stop.aborted) return Promise.resolve(false);
    const p = new Promise<boolean>((resolve) => this.waiters.push(resolve));
    if (!this.polling) void this.poll();
    return p;
  }

  gotWork(): void {
    this.delayMs = FIRST_IDLE_MS;
  }

  private release(go: boolean): void {
    const ws = this.waiters;
    this.waiters = [];
    for (const w of ws) w(go);
  }

  private async poll(): Promise<void> {
    this.polling = true;
    try {
      while (this.waiters.length > 0 && !this.stop.aborted) {
        const wait = this.delayMs / 2 + (Math.random() * this.delayMs) / 2;
        this.delayMs = Math.min(this.maxMs, this.delayMs * 2);
        try {
          await sleep(wait, this.stop);
          const ok = await this.proc.okToRun({ signal: this.stop });
          if (ok.okToRun && ok.tasksAvailable) this.release(true);
        } catch (err) {
          if (this.stop.aborted) break;
          this.breakLoop(err);
        }
      }
    } finally {
      this.polling = false;
    }
  }
}

function outcomeOfValue(taskId: number, value: unknown): Outcome {
  return { action: 'Solved', body: { taskId, ...details(value, HAND_BACK_KEYS) } };
}

function outcomeOfError(taskId: number, err: unknown): Outcome {
  if (err instanceof ManualError)
    return { action: 'Manual', body: { taskId, reason: err.message, ...details(err.details, HAND_BACK_KEYS) } };
  if (err instanceof RetryError) return { action: 'Retry', body: { taskId, reason: err.message, ...details(err.details, RETRY_KEYS) } };
  const message = err instanceof Error ? err.message : String(err);
  const stack = err instanceof Error && err.stack ? err.stack.slice(0, MAX_STACK_CHARS) : undefined;
  return { action: 'Error', body: { taskId, reason: message || 'The handler failed', ...(stack ? { comment: stack } : {}) } };
}

const HAND_BACK_KEYS = ['reason', 'comment', 'overwriteSecondsSaved', 'overwriteEntries'];
const RETRY_KEYS = [...HAND_BACK_KEYS, 'activationDate'];

/** The hand-back keys of a handler's value or an error's details, nothing else. */
function details(value: unknown, keys: string[]): Record<string, unknown> {
  if (value === null || typeof value !== 'object') return {};
  const v = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const k of keys) {
    if (v[k] !== undefined && v[k] !== null) out[k] = v[k];
  }
  return out;
}

function untilAbort(signal: AbortSignal): Promise<'aborted'> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve('aborted');
    else signal.addEventListener('abort', () => resolve('aborted'), { once: true });
  });
}

function defaultOnError(error: unknown, task?: Task<Record<string, unknown>>): void {
  const what = error instanceof QueuemateError ? `${error.code}: ${error.message}` : error instanceof Error ? error.message : String(error);
  console.error(`queuemate worker${task ? `, task ${task.taskId}` : ''}: ${what}`);
}
