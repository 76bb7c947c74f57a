/** The signed-in person and tenant, read once from GET /v1/session and shared through context. */
import { createContext, useContext } from 'react';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { api, ApiError, setCsrfToken } from './http';
import type { Session } from './types';

export const SESSION_KEY = ['session'] as const;

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

export function useSessionQuery() {
  return useQuery({ queryKey: SESSION_KEY, queryFn: fetchSession, staleTime: Infinity, retry: 1 });
}

export async function signIn(body: { clientId: string; username: string; password: string }): Promise<Session> {
  const s = await api<Session>('/v1/session', { method: 'POST', body });
  setCsrfToken(s.csrfToken);
  return s;
}

export function useSignOut() {
  const qc = useQueryClient();
  return async () => {
    await api('/v1/session', { method: 'DELETE' }).catch(() => {});
    setCsrfToken(null);
    qc.clear();
    qc.setQueryData(SESSION_KEY, null);
  };
}

export const SessionContext = createContext<Session | null>(null);

/** The session inside the signed-in part of the app (never null there). */
export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession outside the signed-in layout');
  return s;
}
