/** Server state the screens share (TanStack Query keys: ['processes'], ['process', id], ['tasks', id, search], ['task', id]). */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api } from './http';
import { useLive } from './live';
import type { Job, ProcessDetail, ProcessSummary, TaskDetail } from './types';

export function useProcesses() {
  const { refetchInterval } = useLive();
  return useQuery({
    queryKey: ['processes'],
    queryFn: ({ signal }) => api<{ items: ProcessSummary[] }>('/v1/processes', { signal }).then((r) => r.items),
    refetchInterval,
  });
}

export function useProcess(id: number) {
  const { refetchInterval } = useLive();
  return useQuery({
    queryKey: ['processes', id],
    queryFn: ({ signal }) => api<ProcessDetail>(`/v1/processes/${id}`, { signal }),
    refetchInterval,
  });
}

export function useTask(id: number) {
  const { refetchInterval } = useLive();
  return useQuery({
    queryKey: ['task', id],
    queryFn: ({ signal }) => api<TaskDetail>(`/v1/tasks/${id}`, { signal }),
    refetchInterval,
  });
}

export function useGate() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (v: { id: number; open: boolean }) =>
      api<ProcessSummary>(`/v1/processes/${v.id}/gate`, { method: 'POST', body: { open: v.open } }),
    onSuccess: (p) => {
      qc.setQueryData<ProcessSummary[]>(['processes'], (list) => list?.map((x) => (x.id === p.id ? p : x)));
      void qc.invalidateQueries({ queryKey: ['processes'] });
    },
  });
}

export function fetchJob(id: string, signal?: AbortSignal): Promise<Job> {
  return api<Job>(`/v1/jobs/${encodeURIComponent(id)}`, { signal });
}
