import { afterEach, describe, expect, it, vi } from 'vitest';
import { burst, staleKeys } from './live-events';

afterEach(() => vi.useRealTimers());

describe('staleKeys()', () => {
  it('a task event: the counts, its process queue views and its task page', () => {
    expect(staleKeys({ type: 'task.solved', processId: 3, taskId: 812 })).toEqual([['processes'], ['tasks', 3], ['task', 812]]);
    expect(staleKeys({ type: 'task.lock_expired', processId: 1, taskId: 2 })).toEqual([['processes'], ['tasks', 1], ['task', 2]]);
  });
  it('process events: the processes (overview cards and process pages) and the notifications; run events: the processes', () => {
    for (const type of ['process.gate', 'process.settings', 'process.failure_reported', 'process.stopped_by_errors'])
      expect(staleKeys({ type, processId: 3 })).toEqual([['processes'], ['notifications']]);
    for (const type of ['run.started', 'run.finished']) expect(staleKeys({ type, processId: 3 })).toEqual([['processes']]);
  });
  it('a webhook event: the notifications and the webhook screens', () => {
    expect(staleKeys({ type: 'webhook.disabled', webhookId: 2 })).toEqual([['notifications'], ['admin', 'webhooks']]);
  });
  it('an unknown type or unreadable data: everything', () => {
    const all = [['processes'], ['tasks'], ['task'], ['notifications']];
    expect(staleKeys({ type: 'something.new' })).toEqual(all);
    expect(staleKeys({ type: 'task.moved' })).toEqual(all);
    expect(staleKeys(null)).toEqual(all);
    expect(staleKeys('text')).toEqual(all);
  });
});

describe('burst()', () => {
  it('one flush for the events within the window of the first, keys deduplicated; then a new burst', () => {
    vi.useFakeTimers();
    const flush = vi.fn();
    const b = burst(flush, 150);
    b.add([['processes'], ['tasks', 1]]);
    vi.advanceTimersByTime(100);
    b.add([['processes'], ['task', 5]]);
    expect(flush).not.toHaveBeenCalled();
    vi.advanceTimersByTime(50);
    expect(flush).toHaveBeenCalledTimes(1);
    expect(flush).toHaveBeenCalledWith([['processes'], ['tasks', 1], ['task', 5]]);
    // a steady stream does not postpone the refresh past the window
    b.add([['processes']]);
    vi.advanceTimersByTime(149);
    b.add([['processes']]);
    vi.advanceTimersByTime(1);
    expect(flush).toHaveBeenCalledTimes(2);
    expect(flush).toHaveBeenLastCalledWith([['processes']]);
  });
  it('cancel drops what is pending', () => {
    vi.useFakeTimers();
    const flush = vi.fn();
    const b = burst(flush, 150);
    b.add([['processes']]);
    b.cancel();
    vi.advanceTimersByTime(500);
    expect(flush).not.toHaveBeenCalled();
  });
});
