/**
 * What people call a task: the values of its process's key fields (docs/product.md §3, `isKey`),
 * in field order, else "Task <id>". The 16-digit id stays beside the name, to copy.
 */
import type { Field } from './api-types';
import { formatValue } from './values';

type Named = { id: number; data: Record<string, unknown> };

/** The task's key field values joined by " · "; null when the process has no key field or every one is empty. */
export function keyName(task: Named, fields: readonly Pick<Field, 'name' | 'type' | 'isKey'>[], timeZone: string): string | null {
  const parts = fields
    .filter((f) => f.isKey)
    .map((f) => formatValue(task.data[f.name], f, timeZone).trim())
    .filter((v) => v !== '');
  return parts.length ? parts.join(' · ') : null;
}

/** The task's name: its key, else "Task <id>". */
export function taskName(task: Named, fields: readonly Pick<Field, 'name' | 'type' | 'isKey'>[], timeZone: string): string {
  return keyName(task, fields, timeZone) ?? `Task ${task.id}`;
}
