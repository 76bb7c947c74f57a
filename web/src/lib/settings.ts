/** A process's page of settings: its tabs (in the URL as `?tab=fields`), and the settings form's diff. */

export const SETTINGS_TABS = ['settings', 'fields', 'rules', 'developer'] as const;
export type SettingsTab = (typeof SETTINGS_TABS)[number];

/** The page's URL: a known tab other than the first (`settings` is the page without `?tab`). */
export function parseSettingsSearch(s: Record<string, unknown>): { tab?: SettingsTab } {
  return SETTINGS_TABS.includes(s.tab as SettingsTab) && s.tab !== 'settings' ? { tab: s.tab as SettingsTab } : {};
}

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
