/**
 * Every query of the app in one place: its key, its fetcher and its options (TanStack Query's
 * `queryOptions`), so a screen asks `useQuery(processQuery(id))` and a change invalidates by the same
 * builders (`processesKey()`), never by a key written out by hand. A key's prefixes group what one
 * change makes stale:
 *
 *   ['session']
 *   ['processes']  ⊃ ['processes', id]  ⊃ ['processes', id, 'rules']
 *   ['tasks']      ⊃ ['tasks', processId]  ⊃ ['tasks', processId, search]   a queue view's pages
 *   ['task']       ⊃ ['task', id]
 *   ['kpis', from, to, by, processId]   ['job', id]   ['bulk-count', processId, body]
 *   ['admin', 'users' | 'mates' | 'tenant' | 'webhook-settings' | 'audit', …]
 *   ['admin', 'webhooks']  ⊃ ['admin', 'webhooks', id]  ⊃ ['admin', 'webhooks', id, 'deliveries', status]
 *   ['me', 'tokens']   ['notifications', filter]
 *
 * The live stream (live-events.ts) says which of these an event makes stale. Queries that follow the
 * stream are read with useLiveQuery (live.tsx), which polls while the stream is not open.
 */
import { infiniteQueryOptions, queryOptions } from '@tanstack/react-query';
import { api, ApiError, setCsrfToken } from '../lib/http';
import { flattenQueueSearch, taskListQuery, type QueueSearch } from '../lib/queue-search';
import type {
  AuditEntry,
  BulkRequestBody,
  Delivery,
  DeliveryStatus,
  Job,
  KpiPeriod,
  KpiReport,
  Mate,
  Notifications,
  ProcessDetail,
  ProcessSummary,
  Rule,
  Session,
  TaskDetail,
  TaskPage,
  Tenant,
  Token,
  User,
  Webhook,
  WebhookSettings,
} from '../lib/api-types';

/** Tasks per page of a queue view (the next page loads as the table nears its end). */
export const TASK_PAGE = 100;

// ---- the session

export const sessionKey = () => ['session'] as const;

/** The signed-in person and tenant, or null when signed out; keeps the CSRF token for the writes. */
export async function fetchSession(): Promise<Session | null> {
  try {
    const s = await api<Session>('/v1/session');
    setCsrfToken(s.csrfToken);
    return s;
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      setCsrfToken(null);
      return null;
    }
    throw err;
  }
}

/** Read once: a sign-in, a sign-out or a 401 sets it (session.tsx, AppLayout). */
export const sessionQuery = () => queryOptions({ queryKey: sessionKey(), queryFn: fetchSession, staleTime: Infinity, retry: 1 });

// ---- processes

export const processesKey = () => ['processes'] as const;
export const processKey = (id: number) => ['processes', id] as const;
export const rulesKey = (processId: number) => ['processes', processId, 'rules'] as const;

export const processesQuery = () =>
  queryOptions({
    queryKey: processesKey(),
    queryFn: ({ signal }) => api<{ items: ProcessSummary[] }>('/v1/processes', { signal }).then((r) => r.items),
  });

export const processQuery = (id: number) =>
  queryOptions({ queryKey: processKey(id), queryFn: ({ signal }) => api<ProcessDetail>(`/v1/processes/${id}`, { signal }) });

export const rulesQuery = (processId: number) =>
  queryOptions({
    queryKey: rulesKey(processId),
    queryFn: ({ signal }) => api<{ items: Rule[] }>(`/v1/processes/${processId}/rules`, { signal }).then((r) => r.items),
  });

export const kpisKey = (q: { from: string; to: string; by: KpiPeriod; processId?: number }) =>
  ['kpis', q.from, q.to, q.by, q.processId ?? null] as const;

/** The KPI report of one process, or of the tenant as one (perProcess=false). */
export const kpisQuery = (q: { from: string; to: string; by: KpiPeriod; processId?: number }) => {
  const params = new URLSearchParams({ from: q.from, to: q.to, by: q.by });
  if (q.processId !== undefined) params.set('processId', String(q.processId));
  else params.set('perProcess', 'false');
  return queryOptions({ queryKey: kpisKey(q), queryFn: ({ signal }) => api<KpiReport>(`/v1/kpis?${params.toString()}`, { signal }) });
};

// ---- tasks

/** Queue views' pages: all of them, a process's, or one search's (flat keys, lib/queue-search.ts). */
export const tasksKey = (processId?: number, search?: Record<string, string>) =>
  ['tasks', ...(processId === undefined ? [] : [processId]), ...(search === undefined ? [] : [search])] as const;
/** Task pages: all of them, or one. */
export const taskKey = (id?: number) => ['task', ...(id === undefined ? [] : [id])] as const;

/** A queue view's tasks, page by page (cursors); the previous search's rows stay shown while the next loads. */
export const taskPagesQuery = (processId: number, search: QueueSearch) =>
  infiniteQueryOptions({
    queryKey: tasksKey(processId, flattenQueueSearch(search)),
    queryFn: ({ pageParam, signal }) =>
      api<TaskPage>(`/v1/processes/${processId}/tasks?${taskListQuery(search, { limit: TASK_PAGE, cursor: pageParam })}`, { signal }),
    initialPageParam: null as string | null,
    getNextPageParam: (last) => last.nextCursor,
    placeholderData: (prev) => prev,
  });

export const taskQuery = (id: number) =>
  queryOptions({ queryKey: taskKey(id), queryFn: ({ signal }) => api<TaskDetail>(`/v1/tasks/${id}`, { signal }) });

/** How many tasks a bulk action would change; asked afresh each time the dialog opens. */
export const bulkCountQuery = (processId: number, body: Partial<BulkRequestBody> | null) =>
  queryOptions({
    queryKey: ['bulk-count', processId, body] as const,
    queryFn: () => api<{ total: number }>(`/v1/processes/${processId}/tasks/bulk/count`, { method: 'POST', body }).then((r) => r.total),
    staleTime: 0,
    gcTime: 0,
  });

/** A bulk job's progress (none asked until there is a job). */
export const jobQuery = (id: string | null) =>
  queryOptions({
    queryKey: ['job', id] as const,
    queryFn: ({ signal }) => api<Job>(`/v1/jobs/${encodeURIComponent(id ?? '')}`, { signal }),
    enabled: id !== null,
  });

// ---- Administration, notifications and one's account

export const usersKey = () => ['admin', 'users'] as const;
export const matesKey = () => ['admin', 'mates'] as const;
export const tenantKey = () => ['admin', 'tenant'] as const;
export const webhooksKey = () => ['admin', 'webhooks'] as const;
export const webhookKey = (id: number) => ['admin', 'webhooks', id] as const;
/** An endpoint's delivery log: every status, or one list ('all' or a status). */
export const deliveriesKey = (id: number, status?: DeliveryStatus | 'all') =>
  ['admin', 'webhooks', id, 'deliveries', ...(status === undefined ? [] : [status])] as const;
export const webhookSettingsKey = () => ['admin', 'webhook-settings'] as const;
export const auditKey = (filter: { action?: string; target?: string }) => ['admin', 'audit', filter] as const;
export const tokensKey = () => ['me', 'tokens'] as const;
/** Notifications: every list, or one filter's. */
export const notificationsKey = (filter?: { unread?: boolean; processId?: number }) =>
  ['notifications', ...(filter === undefined ? [] : [filter])] as const;

export const usersQuery = () =>
  queryOptions({ queryKey: usersKey(), queryFn: ({ signal }) => api<{ items: User[] }>('/v1/users', { signal }).then((r) => r.items) });

/** Mates refresh every 30 s: their last contact moves while the screen is open. */
export const matesQuery = () =>
  queryOptions({
    queryKey: matesKey(),
    queryFn: ({ signal }) => api<{ items: Mate[] }>('/v1/mates', { signal }).then((r) => r.items),
    refetchInterval: 30_000,
  });

export const tenantQuery = () => queryOptions({ queryKey: tenantKey(), queryFn: ({ signal }) => api<Tenant>('/v1/tenant', { signal }) });

export const tokensQuery = () =>
  queryOptions({
    queryKey: tokensKey(),
    queryFn: ({ signal }) => api<{ items: Token[] }>('/v1/me/tokens', { signal }).then((r) => r.items),
  });

export const webhooksQuery = () =>
  queryOptions({
    queryKey: webhooksKey(),
    queryFn: ({ signal }) => api<{ items: Webhook[] }>('/v1/webhooks', { signal }).then((r) => r.items),
  });

export const webhookQuery = (id: number) =>
  queryOptions({ queryKey: webhookKey(id), queryFn: ({ signal }) => api<Webhook>(`/v1/webhooks/${id}`, { signal }) });

export const webhookSettingsQuery = () =>
  queryOptions({ queryKey: webhookSettingsKey(), queryFn: ({ signal }) => api<WebhookSettings>('/v1/webhook-settings', { signal }) });

/** The delivery log refreshes every 2 s while a delivery is pending (it settles within seconds), else not. */
export const deliveriesQuery = (id: number, status: DeliveryStatus | undefined) =>
  queryOptions({
    queryKey: deliveriesKey(id, status ?? 'all'),
    queryFn: ({ signal }) =>
      api<{ items: Delivery[] }>(`/v1/webhooks/${id}/deliveries?limit=100${status ? `&status=${status}` : ''}`, { signal }).then(
        (r) => r.items,
      ),
    refetchInterval: (q) => (q.state.data?.some((d) => d.status === 'pending') ? 2000 : false),
  });

/** The newest 200 audit entries matching the filter. */
export const auditQuery = (filter: { action?: string; target?: string }) =>
  queryOptions({
    queryKey: auditKey(filter),
    queryFn: ({ signal }) => {
      const q = new URLSearchParams({ limit: '200' });
      if (filter.action) q.set('action', filter.action);
      if (filter.target) q.set('targetType', filter.target);
      return api<{ items: AuditEntry[] }>(`/v1/audit?${q}`, { signal }).then((r) => r.items);
    },
  });

/** Notifications (the live stream refreshes them on process and webhook events, live-events.ts). */
export const notificationsQuery = (filter: { unread?: boolean; processId?: number } = {}) =>
  queryOptions({
    queryKey: notificationsKey(filter),
    queryFn: ({ signal }) => {
      const q = new URLSearchParams({ limit: '200' });
      if (filter.unread) q.set('unread', 'true');
      if (filter.processId !== undefined) q.set('processId', String(filter.processId));
      return api<Notifications>(`/v1/notifications?${q}`, { signal });
    },
  });
