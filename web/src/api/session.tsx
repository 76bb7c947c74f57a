/** The signed-in person and tenant (api/queries.ts reads them once from GET /v1/session), shared through context. */
import { createContext, useContext } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { api, setCsrfToken } from '../lib/http';
import type { Session } from '../lib/api-types';
import { sessionQuery } from './queries';

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
    qc.setQueryData(sessionQuery().queryKey, null);
  };
}

export const SessionContext = createContext<Session | null>(null);

/** The session inside the signed-in part of the app (never null there). */
export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession outside the signed-in layout');
  return s;
}
