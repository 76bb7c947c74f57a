/**
 * The column mapping of an import (POST /v1/processes/:id/tasks/import, docs/people-api.md §5):
 * each column of the file's header fills a field, one of the reserved keys a create accepts, or
 * nothing. The defaults are the server's: a column fills the field of the same name, ignoring case.
 */
import type { ImportFormat } from './api-types';

/** Keys besides fields that a column may fill (src/bulk/import.ts). */
export const RESERVED_TARGETS = ['comment', 'activationDate', 'deadline', 'urgent'] as const;

export type Mapping = Record<string, string | null>;

/** Column → field (or reserved key) of the same name ignoring case; null for the others and for blank headers. */
export function defaultMapping(columns: string[], fieldNames: string[]): Mapping {
  const known = new Map([...fieldNames, ...RESERVED_TARGETS].map((n) => [n.toLowerCase(), n]));
  const used = new Set<string>();
  const out: Mapping = {};
  for (const c of columns) {
    if (c === '' || Object.prototype.hasOwnProperty.call(out, c)) continue;
    const t = known.get(c.trim().toLowerCase()) ?? null;
    // a second column of the same name would fill the field twice: it starts ignored
    out[c] = t && !used.has(t) ? t : null;
    if (t) used.add(t);
  }
  return out;
}

/** Targets that two or more columns fill (the server refuses such a mapping). */
export function duplicateTargets(mapping: Mapping): string[] {
  const count = new Map<string, number>();
  for (const t of Object.values(mapping)) if (t) count.set(t, (count.get(t) ?? 0) + 1);
  return [...count].filter(([, n]) => n > 1).map(([t]) => t);
}

/** The upload's format from its file name (then its type); null when neither says CSV or XLSX. */
export function fileFormat(name: string, type = ''): ImportFormat | null {
  const n = name.toLowerCase();
  if (n.endsWith('.xlsx') || type.includes('spreadsheetml')) return 'xlsx';
  if (n.endsWith('.csv') || n.endsWith('.txt') || type.startsWith('text/csv') || type.startsWith('text/plain')) return 'csv';
  return null;
}

/** The query of an import request: the format, the dry run and the mapping as JSON. */
export function importQuery(opts: { format: ImportFormat; dryRun: boolean; mapping?: Mapping | null }): string {
  const q = new URLSearchParams({ format: opts.format });
  if (opts.dryRun) q.set('dryRun', 'true');
  if (opts.mapping && Object.keys(opts.mapping).length) q.set('mapping', JSON.stringify(opts.mapping));
  return q.toString();
}
