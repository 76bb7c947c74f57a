/**
 * What a server event refreshes, and the burst that gathers events into one refresh. The stream is
 * read with `?as=message` (docs/events.md §5): every event arrives on `onmessage` with its type in
 * the data, so no list of types is kept here; an unknown (future) type refreshes everything.
 */
import { notificationsKey, processesKey, taskKey, tasksKey, webhooksKey } from './queries';

export type QueryKey = readonly unknown[];

/** Query keys (prefixes) an event makes stale; queries.ts builds every key the screens use. */
export function staleKeys(data: unknown): QueryKey[] {
  const e = (typeof data === 'object' && data !== null ? data : {}) as { type?: unknown; processId?: unknown; taskId?: unknown };
  const type = typeof e.type === 'string' ? e.type : '';
  const processId = typeof e.processId === 'number' ? e.processId : null;
  const taskId = typeof e.taskId === 'number' ? e.taskId : null;
  // a process's gate, settings, Failure or runs: its card on the overview and its page (['processes', id]);
  // a Failure or a stop by errors is also a notification (the layout's badge)
  if (type.startsWith('process.')) return [processesKey(), notificationsKey()];
  if (type.startsWith('run.')) return [processesKey()];
  if (type.startsWith('webhook.')) return [notificationsKey(), webhooksKey()];
  // a task change: the counts, that process's queue views and that task's page
  if (type.startsWith('task.') && processId !== null && taskId !== null) return [processesKey(), tasksKey(processId), taskKey(taskId)];
  return [processesKey(), tasksKey(), taskKey(), notificationsKey()];
}

/**
 * Gathers the keys of the events that arrive within `ms` of the first one and hands them to
 * `flush` once, deduplicated: a Mate's batch of 64 hand-backs is one refresh, at most `ms` late.
 */
export function burst(flush: (keys: QueryKey[]) => void, ms: number) {
  let pending = new Map<string, QueryKey>();
  let timer: ReturnType<typeof setTimeout> | null = null;
  return {
    add(keys: QueryKey[]) {
      for (const k of keys) pending.set(JSON.stringify(k), k);
      if (timer) return;
      timer = setTimeout(() => {
        timer = null;
        const keys = [...pending.values()];
        pending = new Map();
        flush(keys);
      }, ms);
    },
    cancel() {
      if (timer) clearTimeout(timer);
      timer = null;
      pending = new Map();
    },
  };
}
