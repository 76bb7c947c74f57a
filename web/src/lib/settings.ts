/** The settings form's diff: only what a person changed is sent (and audited). */
export function changedKeys<T extends Record<string, unknown>>(before: T, after: T): Partial<T> {
  const out: Partial<T> = {};
  for (const k of Object.keys(after) as (keyof T)[]) {
    if (JSON.stringify(before[k]) !== JSON.stringify(after[k])) out[k] = after[k];
  }
  return out;
}

export const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

/** Blocked dates sorted and without repeats (a picker may hand them in click order). */
export function normaliseDates(dates: string[]): string[] {
  return [...new Set(dates.map((d) => d.slice(0, 10)))].sort();
}
