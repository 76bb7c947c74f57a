/**
 * Server state of the process screens: settings, fields, rules (query key ['processes', id, 'rules'],
 * refreshed with the process by live events) and the KPI report (['kpis', …]).
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { paths } from '../../../client/src/schema';
import { api } from './http';
import type { ProcessDetail } from './types';

type Json<T> = T extends { content: { 'application/json': infer B } } ? B : never;
type Body<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends { requestBody?: infer R } ? Json<NonNullable<R>> : never;
type Ok<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends { responses: { 200: infer R } } ? Json<R> : never;

export type SettingsPatch = Body<'/v1/processes/{id}/settings', 'patch'>;
export type Settings = ProcessDetail['settings'];
export type FieldDef = Body<'/v1/processes/{id}/fields', 'put'>['fields'][number];
export type Rule = Ok<'/v1/processes/{id}/rules', 'get'>['items'][number];
export type RuleType = Rule['type'];
export type KpiReport = Ok<'/v1/kpis', 'get'>;

export const RULE_TYPES: { value: RuleType; label: string }[] = [
  { value: 'text', label: 'Text' },
  { value: 'number', label: 'Number' },
  { value: 'boolean', label: 'Yes / no' },
  { value: 'list', label: 'List' },
  { value: 'table', label: 'Table' },
  { value: 'richText', label: 'Rich text' },
];

/** After a change answered with the process: that answer in the cache, and the overview refreshed. */
function useProcessWrite<V>(id: number, fn: (v: V) => Promise<ProcessDetail>) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: fn,
    onSuccess: (p) => {
      qc.setQueryData(['processes', id], p);
      void qc.invalidateQueries({ queryKey: ['processes'] });
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
    onSuccess: () => void qc.invalidateQueries({ queryKey: ['processes'] }),
  });
}

export function useRules(id: number) {
  return useQuery({
    queryKey: ['processes', id, 'rules'],
    queryFn: ({ signal }) => api<{ items: Rule[] }>(`/v1/processes/${id}/rules`, { signal }).then((r) => r.items),
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
    onSuccess: () => void qc.invalidateQueries({ queryKey: ['processes', id, 'rules'] }),
  });
}

export function useKpis(q: { from: string; to: string; by: 'day' | 'week' | 'month'; processId?: number }) {
  const params = new URLSearchParams({ from: q.from, to: q.to, by: q.by });
  if (q.processId !== undefined) params.set('processId', String(q.processId));
  else params.set('perProcess', 'false');
  return useQuery({
    queryKey: ['kpis', q.from, q.to, q.by, q.processId ?? null],
    queryFn: ({ signal }) => api<KpiReport>(`/v1/kpis?${params.toString()}`, { signal }),
  });
}
