/**
 * Live updates: server-sent events from GET /v1/events?as=message (docs/events.md §5). Every event
 * arrives on `onmessage` with its type in the data, and refreshes what it touches (live-events.ts)
 * within BURST_MS. The views poll every 2 s only while the stream is not open (before it opens,
 * while the browser reconnects, or when the server refuses it).
 */
import { createContext, useContext, useEffect, useState, type ReactNode } from 'react';
import { useQuery, useQueryClient, type QueryKey, type UseQueryOptions, type UseQueryResult } from '@tanstack/react-query';
import { burst, staleKeys } from './live-events';

export const POLL_MS = 2000;
/** events within this time of the first one make one refresh */
export const BURST_MS = 150;
export const EVENTS_URL = '/v1/events?as=message';

const LiveContext = createContext<{ live: boolean }>({ live: false });

export function useLive(): { live: boolean; refetchInterval: number | false } {
  const { live } = useContext(LiveContext);
  return { live, refetchInterval: live ? false : POLL_MS };
}

/**
 * A query (api/queries.ts) that the live stream keeps fresh: while the stream is not open it is
 * polled every `pollMs` instead (POLL_MS for what a view shows, longer for a badge).
 */
export function useLiveQuery<TQueryFnData, TError, TData, TQueryKey extends QueryKey>(
  options: UseQueryOptions<TQueryFnData, TError, TData, TQueryKey>,
  pollMs: number = POLL_MS,
): UseQueryResult<TData, TError> {
  const { live } = useLive();
  return useQuery({ ...options, refetchInterval: live ? false : pollMs });
}

export function LiveProvider({ children }: { children: ReactNode }) {
  const qc = useQueryClient();
  const [live, setLive] = useState(false);
  useEffect(() => {
    if (typeof EventSource === 'undefined') return;
    let opened = false;
    const refresh = burst((keys) => {
      for (const queryKey of keys) void qc.invalidateQueries({ queryKey });
    }, BURST_MS);
    const es = new EventSource(EVENTS_URL);
    es.onopen = () => {
      // the stream starts with the next event: refresh once for whatever changed before it opened
      // (the first load, or while the browser reconnected and the views polled)
      refresh.add(staleKeys(null));
      opened = true;
      setLive(true);
    };
    es.onmessage = (m: MessageEvent<string>) => {
      let data: unknown = null;
      try {
        data = JSON.parse(m.data);
      } catch {
        // not JSON: refresh everything
      }
      refresh.add(staleKeys(data));
    };
    es.onerror = () => {
      setLive(false);
      // never opened: the server has no stream (or refuses it); poll instead of retrying forever.
      // Once open, the browser reconnects by itself (readyState CONNECTING) and we poll meanwhile.
      if (!opened || es.readyState === EventSource.CLOSED) es.close();
    };
    return () => {
      refresh.cancel();
      es.close();
    };
  }, [qc]);
  return <LiveContext.Provider value={{ live }}>{children}</LiveContext.Provider>;
}
