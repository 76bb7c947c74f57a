/**
 * The runner of the background jobs (src/maintenance/runner.ts), with timers moved by hand and an
 * injected clock: the overlap guard, early triggers coalesced, last runs and errors, failures
 * logged and retried at the next period, rounds in order, and a stop that awaits the run in flight.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { JobRunner, realTimers, type Job, type JobLog, type RunContext, type Timers } from '../src/maintenance/runner.js';
import { ManualClock } from '../src/lib/clock.js';

/** Timers moved by hand: tick(ms) fires every timer of that period once. */
class HandTimers implements Timers {
  private readonly timers = new Set<{ ms: number; fn: () => void }>();
  every(ms: number, fn: () => void): () => void {
    const t = { ms, fn };
    this.timers.add(t);
    return () => this.timers.delete(t);
  }
  tick(ms: number): void {
    for (const t of [...this.timers]) if (t.ms === ms) t.fn();
  }
  get count(): number {
    return this.timers.size;
  }
}

class Lines implements JobLog {
  readonly lines: Array<{ level: string; obj: Record<string, unknown>; msg: string }> = [];
  info(obj: object, msg: string) {
    this.lines.push({ level: 'info', obj: obj as Record<string, unknown>, msg });
  }
  warn(obj: object, msg: string) {
    this.lines.push({ level: 'warn', obj: obj as Record<string, unknown>, msg });
  }
  debug(obj: object, msg: string) {
    this.lines.push({ level: 'debug', obj: obj as Record<string, unknown>, msg });
  }
}

/** A job whose runs wait for release(); it records each run's start. */
function gatedJob(name: string, everyMs: number | null) {
  const runs: Array<{ now: Date; ctx: RunContext }> = [];
  let open: Array<() => void> = [];
  const job: Job<number> = {
    name,
    everyMs,
    async run(now, ctx) {
      runs.push({ now, ctx });
      await new Promise<void>((resolve) => open.push(resolve));
      return runs.length;
    },
  };
  const release = () => {
    const waiting = open;
    open = [];
    for (const r of waiting) r();
  };
  return { job, runs, release, waiting: () => open.length };
}

/** Lets the promises settled so far run their callbacks. */
const turn = () => new Promise((resolve) => setImmediate(resolve));

function setup() {
  const clock = new ManualClock('2026-03-02T10:00:00.000Z');
  const timers = new HandTimers();
  const log = new Lines();
  const runner = new JobRunner({ clock, log, timers });
  return { clock, timers, log, runner };
}

test('a slow run is never overlapped: periods that come while it runs are skipped', async () => {
  const { timers, runner } = setup();
  const slow = gatedJob('slow', 1000);
  runner.add(slow.job).start();
  timers.tick(1000);
  assert.equal(slow.runs.length, 1);
  timers.tick(1000);
  timers.tick(1000);
  await turn();
  assert.equal(slow.runs.length, 1, 'no second run while the first runs');
  assert.equal(slow.waiting(), 1);
  slow.release();
  await runner.settled();
  assert.equal(slow.runs.length, 1, 'the skipped periods are not made up afterwards');
  timers.tick(1000);
  assert.equal(slow.runs.length, 2, 'the next period runs it again');
  assert.equal(slow.runs[1].ctx.early, false);
  slow.release();
  await runner.stop();
});

test('an early trigger runs the job at once; triggers during a run make one run right after it', async () => {
  const { runner } = setup();
  const job = gatedJob('dispatch', 1000);
  let soon!: () => void;
  let connected = 0;
  runner
    .add({
      ...job.job,
      triggers: (fn) => {
        soon = fn;
        connected++;
        return () => connected--;
      },
    })
    .start();
  assert.equal(connected, 1, 'the triggers are connected at start');
  soon();
  assert.equal(job.runs.length, 1, 'at once, without waiting for the period');
  assert.equal(job.runs[0].ctx.early, true);
  soon();
  runner.trigger('dispatch');
  soon();
  await turn();
  assert.equal(job.runs.length, 1, 'not overlapped');
  job.release();
  await turn();
  assert.equal(job.runs.length, 2, 'three triggers during the run: one run after it');
  assert.equal(job.runs[1].ctx.early, true);
  job.release();
  await runner.settled();
  assert.equal(job.runs.length, 2);
  await runner.stop();
  assert.equal(connected, 0, 'the triggers are disconnected at stop');
});

test('a job without a period runs only when triggered; atStart runs it at start with its line at info', async () => {
  const { timers, log, runner } = setup();
  const job = gatedJob('vacuum', null);
  runner.add({ ...job.job, atStart: 'not closed cleanly: vacuuming' });
  assert.equal(job.runs.length, 0);
  runner.start();
  assert.equal(timers.count, 0, 'no timer for a job without a period');
  assert.equal(job.runs.length, 1);
  assert.deepEqual(log.lines, [{ level: 'info', obj: { job: 'vacuum' }, msg: 'not closed cleanly: vacuuming' }]);
  job.release();
  await runner.stop();
});

test('the last run time and the last error are recorded; a failing job is logged at warn and runs again at the next period', async () => {
  const { clock, timers, log, runner } = setup();
  let calls = 0;
  const job: Job<{ purged: number }> = {
    name: 'purge',
    everyMs: 600_000,
    async run(now) {
      calls++;
      clock.advance(2); // the run takes 2 s
      if (calls === 1) throw Object.assign(new Error('connection refused to 10.0.0.7'), { code: 'ECONNREFUSED' });
      return { purged: now.getTime() === Date.parse('2026-03-02T10:00:12.000Z') ? 3 : -1 };
    },
    report: (r) => (r.purged ? { msg: 'purged old rows' } : null),
  };
  runner.add(job).start();
  assert.deepEqual(runner.status(), { purge: { lastRunAt: null } });

  clock.advance(10);
  timers.tick(600_000);
  await runner.settled();
  assert.equal(runner.lastRunAt('purge'), null);
  assert.deepEqual(runner.status(), { purge: { lastRunAt: null, lastError: { at: '2026-03-02T10:00:12.000Z', code: 'ECONNREFUSED' } } });
  const warn = log.lines.find((l) => l.level === 'warn')!;
  assert.equal(warn.obj.job, 'purge');
  assert.equal((warn.obj.err as Error).message, 'connection refused to 10.0.0.7', 'the error itself goes to the log');
  assert.match(warn.msg, /purge failed; it runs again in 600 s/);
  assert.ok(!JSON.stringify(runner.status()).includes('10.0.0.7'), '/readyz shows the code, not the message');

  timers.tick(600_000);
  await runner.settled();
  assert.equal(calls, 2, 'run again at the next period');
  assert.deepEqual(runner.lastRunAt('purge'), new Date('2026-03-02T10:00:14.000Z'), 'when the run ended, by the clock');
  assert.deepEqual(runner.status(), {
    purge: { lastRunAt: '2026-03-02T10:00:14.000Z', lastError: { at: '2026-03-02T10:00:12.000Z', code: 'ECONNREFUSED' } },
  });
  assert.deepEqual(log.lines.at(-1), { level: 'info', obj: { job: 'purge', purged: 3 }, msg: 'purged old rows' });
  await runner.stop();
});

test('a round runs its jobs one after another at one now, in order; one failing does not stop the next', async () => {
  const { clock, timers, log, runner } = setup();
  const order: string[] = [];
  const step = (name: string, fail = false): Job => ({
    name,
    everyMs: 5000,
    async run(now) {
      order.push(`${name}@${now.toISOString().slice(11, 19)}`);
      clock.advance(1);
      await turn();
      if (fail) throw new Error(`${name} broke`);
    },
  });
  runner.add(step('leases'), step('bulk', true), step('fold'));
  assert.throws(() => runner.add(step('other'), { ...step('mismatch'), everyMs: 1000 }), /share their period/);
  assert.throws(() => runner.add(step('fold')), /a second job named fold/);
  runner.start();
  assert.equal(timers.count, 1, 'one timer for the round');
  timers.tick(5000);
  timers.tick(5000);
  await runner.settled();
  assert.deepEqual(order, ['leases@10:00:00', 'bulk@10:00:00', 'fold@10:00:00']);
  assert.equal(log.lines.filter((l) => l.level === 'warn').length, 1);
  assert.equal(runner.status().bulk.lastError?.code, 'Error');
  assert.equal(runner.status().fold.lastRunAt, '2026-03-02T10:00:03.000Z');
  await runner.stop();
});

test('runOnce runs one job at a given time after the run in flight, answers its result and throws its error', async () => {
  const { timers, runner } = setup();
  const job = gatedJob('sweep', 5000);
  let fail = false;
  runner.add(job.job, {
    name: 'fold',
    everyMs: 5000,
    run: async (now) => {
      if (fail) throw new RangeError('bad');
      return now.toISOString();
    },
  });
  timers.tick(5000); // not started: no timer yet
  assert.equal(job.runs.length, 0);
  runner.trigger('sweep'); // a trigger works before start (the round runs)
  assert.equal(job.runs.length, 1);
  const once = runner.runOnce<string>('fold', new Date('2030-01-01T00:00:00Z'));
  await turn();
  job.release(); // the round in flight ends, then runOnce runs
  assert.equal(await once, '2030-01-01T00:00:00.000Z');
  assert.equal(runner.lastRunAt('fold')?.toISOString(), '2026-03-02T10:00:00.000Z', 'the end of the run, by the clock');
  fail = true;
  await assert.rejects(runner.runOnce('fold'), RangeError);
  assert.equal(runner.status().fold.lastError?.code, 'RangeError');
  await assert.rejects(runner.runOnce('nope'), /no job named nope/);
  await runner.stop();
});

test('stop awaits the run in flight, tells it through its signal, and ends the timers: nothing runs after', async () => {
  const { timers, runner } = setup();
  const job = gatedJob('bulk', 1000);
  runner.add(job.job).start();
  timers.tick(1000);
  assert.equal(job.runs.length, 1);
  runner.trigger('bulk'); // would run again after it, but the runner stops meanwhile
  let stopped = false;
  const stopping = runner.stop().then(() => (stopped = true));
  await turn();
  assert.equal(stopped, false, 'stop waits for the run in flight');
  assert.equal(job.runs[0].ctx.signal.aborted, true, 'the run is told to stop');
  assert.equal(timers.count, 0, 'no timer left');
  job.release();
  await stopping;
  assert.equal(stopped, true);
  timers.tick(1000);
  runner.trigger('bulk');
  await turn();
  assert.equal(job.runs.length, 1, 'nothing runs after stop, not even the coalesced trigger');
});

test('the real timers keep no process alive, and stop clears them', async () => {
  const timeouts = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  const before = timeouts();
  let ran = 0;
  const stop = realTimers.every(5, () => ran++);
  try {
    assert.equal(timeouts(), before, 'unref: not an active resource of the process');
    while (ran < 2) await new Promise((resolve) => setTimeout(resolve, 5));
  } finally {
    stop();
  }
  const after = ran;
  await new Promise((resolve) => setTimeout(resolve, 12)); // two periods and more
  assert.equal(ran, after, 'stopped');
});
