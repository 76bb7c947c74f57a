/**
 * The queue view's filters live in the URL so a link shows the same tasks to a colleague:
 * `?queue=Manual&error=true&q=acme&sort=-createdAt&f.Country=DK`. The same keys are the API's
 * list query (GET /v1/processes/:id/tasks) and the bulk endpoints' filter.
 */
import type { QueueName } from './api-types';
import { QUEUES } from './queues';

export interface QueueSearch {
  queue?: QueueName;
  error?: boolean;
  q?: string;
  sort?: string;
  /** field name → value */
  f?: Record<string, string>;
}

const SORT = /^-?[A-Za-z][A-Za-z0-9_.]{0,80}$/;

/** Reads (and cleans) the search object of a URL; unknown or malformed values are dropped. */
export function parseQueueSearch(raw: Record<string, unknown>): QueueSearch {
  const out: QueueSearch = {};
  const str = (v: unknown): string | undefined =>
    typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : undefined;
  const queue = str(raw.queue);
  const match = QUEUES.find((q) => q.toLowerCase() === queue?.toLowerCase());
  if (match) out.queue = match;
  const error = str(raw.error);
  if (error === 'true' || error === 'false') out.error = error === 'true';
  const q = str(raw.q)?.trim();
  if (q) out.q = q.slice(0, 200);
  const sort = str(raw.sort);
  if (sort && SORT.test(sort)) out.sort = sort;
  const f: Record<string, string> = {};
  for (const [key, value] of Object.entries(raw)) {
    const v = str(value);
    if (key.startsWith('f.') && /^[A-Za-z][A-Za-z0-9_]{0,63}$/.test(key.slice(2)) && v !== undefined && v !== '') f[key.slice(2)] = v;
  }
  if (raw.f && typeof raw.f === 'object') {
    for (const [key, value] of Object.entries(raw.f as Record<string, unknown>)) {
      const v = str(value);
      if (/^[A-Za-z][A-Za-z0-9_]{0,63}$/.test(key) && v !== undefined && v !== '') f[key] = v;
    }
  }
  if (Object.keys(f).length) out.f = f;
  return out;
}

/** The flat URL/API form: { queue, error, q, sort, 'f.<name>': value }, keys in a stable order. */
export function flattenQueueSearch(s: QueueSearch): Record<string, string> {
  const out: Record<string, string> = {};
  if (s.queue) out.queue = s.queue;
  if (s.error !== undefined) out.error = String(s.error);
  if (s.q) out.q = s.q;
  if (s.sort) out.sort = s.sort;
  for (const key of Object.keys(s.f ?? {}).sort()) out[`f.${key}`] = s.f![key];
  return out;
}

/** The API list query for a page of this search. */
export function taskListQuery(s: QueueSearch, page: { limit: number; cursor?: string | null }): string {
  const params = new URLSearchParams(flattenQueueSearch(s));
  params.set('limit', String(page.limit));
  if (page.cursor) params.set('cursor', page.cursor);
  return params.toString();
}

/** The bulk endpoints' filter for "every task matching this search": the list's keys, with `error` as a boolean. */
export function bulkFilter(s: QueueSearch): Record<string, string | boolean> {
  return { ...flattenQueueSearch(s), ...(s.error !== undefined ? { error: s.error } : {}) };
}

/** The next sort when a column header is clicked: ascending, descending, then none. */
export function nextSort(current: string | undefined, column: string): string | undefined {
  if (current === column) return `-${column}`;
  if (current === `-${column}`) return undefined;
  return column;
}

export function sortDirection(current: string | undefined, column: string): 'asc' | 'desc' | null {
  if (current === column) return 'asc';
  if (current === `-${column}`) return 'desc';
  return null;
}

/** Whether the search narrows anything (the empty state then says "no task matches"). */
export function isFiltered(s: QueueSearch): boolean {
  return s.error !== undefined || !!s.q || Object.keys(s.f ?? {}).length > 0;
}
