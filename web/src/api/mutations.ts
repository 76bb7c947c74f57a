/**
 * The changes more than one screen makes, each refreshing what it makes stale through the key
 * builders of queries.ts: a process's gate, settings, name, fields and rules.
 */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { api } from '../lib/http';
import type { FieldDef, ProcessDetail, ProcessSummary, Rule, RuleType, SettingsPatch } from '../lib/api-types';
import { processesKey, processesQuery, processQuery, rulesKey } from './queries';

/** Stop or start a process (the overview's switch, the settings page's button). */
export function useGate() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (v: { id: number; open: boolean }) =>
      api<ProcessSummary>(`/v1/processes/${v.id}/gate`, { method: 'POST', body: { open: v.open } }),
    onSuccess: (p) => {
      qc.setQueryData(processesQuery().queryKey, (list) => list?.map((x) => (x.id === p.id ? p : x)));
      void qc.invalidateQueries({ queryKey: processesKey() });
    },
  });
}

/** After a change answered with the process: that answer in the cache, and the overview refreshed. */
function useProcessWrite<V>(id: number, fn: (v: V) => Promise<ProcessDetail>) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: fn,
    onSuccess: (p) => {
      qc.setQueryData(processQuery(id).queryKey, p);
      void qc.invalidateQueries({ queryKey: processesKey() });
    },
  });
}

export function useSaveSettings(id: number) {
  return useProcessWrite(id, (body: SettingsPatch) => api<ProcessDetail>(`/v1/processes/${id}/settings`, { method: 'PATCH', body }));
}

export function useUpdateProcess(id: number) {
  return useProcessWrite(id, (body: { name?: string; archived?: boolean }) =>
    api<ProcessDetail>(`/v1/processes/${id}`, { method: 'PATCH', body }),
  );
}

export function useSaveFields(id: number) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (fields: FieldDef[]) =>
      api<{ fields: ProcessDetail['fields'] }>(`/v1/processes/${id}/fields`, { method: 'PUT', body: { fields } }),
    onSuccess: () => void qc.invalidateQueries({ queryKey: processesKey() }),
  });
}

export function useRuleWrite(id: number) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (
      v:
        | { kind: 'create'; body: { name: string; type: RuleType; value?: unknown; description?: string } }
        | { kind: 'define'; ruleId: number; body: { name?: string; type?: RuleType; value?: unknown; description?: string } }
        | { kind: 'value'; ruleId: number; value: unknown }
        | { kind: 'delete'; ruleId: number },
    ): Promise<unknown> => {
      const base = `/v1/processes/${id}/rules`;
      switch (v.kind) {
        case 'create':
          return api<Rule>(base, { method: 'POST', body: v.body });
        case 'define':
          return api<Rule>(`${base}/${v.ruleId}`, { method: 'PATCH', body: v.body });
        case 'value':
          return api<Rule>(`${base}/${v.ruleId}/value`, { method: 'PUT', body: { value: v.value } });
        case 'delete':
          return api<null>(`${base}/${v.ruleId}`, { method: 'DELETE' });
      }
    },
    onSuccess: () => void qc.invalidateQueries({ queryKey: rulesKey(id) }),
  });
}
