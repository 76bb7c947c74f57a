/**
 * Live updates: server-sent events from GET /v1/events when the server offers them (each event
 * refreshes what it touches); otherwise, or while the stream is down, the views poll every 2 s.
 */
import { createContext, useContext, useEffect, useState, type ReactNode } from 'react';
import { useQueryClient } from '@tanstack/react-query';

export const POLL_MS = 2000;

const EVENT_TYPES = [
  'task.created',
  'task.updated',
  'task.moved',
  'task.solved',
  'task.taken',
  'task.locked',
  'task.unlocked',
  'task.deleted',
  'task.commented',
  'process.gate',
  'process.updated',
  'process.failure',
  'run.started',
  'run.finished',
  'run.updated',
  'mate.contact',
];

const LiveContext = createContext<{ live: boolean }>({ live: false });

export function useLive(): { live: boolean; refetchInterval: number | false } {
  const { live } = useContext(LiveContext);
  return { live, refetchInterval: live ? false : POLL_MS };
}

export function LiveProvider({ children }: { children: ReactNode }) {
  const qc = useQueryClient();
  const [live, setLive] = useState(false);
  useEffect(() => {
    if (typeof EventSource === 'undefined') return;
    let opened = false;
    let timer: ReturnType<typeof setTimeout> | null = null;
    const es = new EventSource('/v1/events');
    const refresh = () => {
      if (timer) return;
      // events come in bursts (a Mate's batch): one refresh for the burst
      timer = setTimeout(() => {
        timer = null;
        void qc.invalidateQueries({ queryKey: ['processes'] });
        void qc.invalidateQueries({ queryKey: ['tasks'] });
        void qc.invalidateQueries({ queryKey: ['task'] });
      }, 150);
    };
    es.onopen = () => {
      opened = true;
      setLive(true);
    };
    es.onmessage = refresh;
    for (const type of EVENT_TYPES) es.addEventListener(type, refresh);
    es.onerror = () => {
      setLive(false);
      // never opened: the server has no stream (or refuses it); poll instead of retrying forever
      if (!opened || es.readyState === EventSource.CLOSED) es.close();
    };
    return () => {
      if (timer) clearTimeout(timer);
      es.close();
    };
  }, [qc]);
  return <LiveContext.Provider value={{ live }}>{children}</LiveContext.Provider>;
}
