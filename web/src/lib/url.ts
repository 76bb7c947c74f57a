/**
 * URL search strings as flat, readable keys (`?queue=Manual&f.Country=DK`) rather than the router's
 * default JSON values, so a shared link reads as what it filters. Nested objects become `key.sub`.
 */
export function parseSearch(search: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of new URLSearchParams(search.startsWith('?') ? search.slice(1) : search)) out[key] = value;
  return out;
}

export function stringifySearch(search: Record<string, unknown>): string {
  const params = new URLSearchParams();
  const add = (key: string, value: unknown) => {
    if (value === undefined || value === null || value === '') return;
    if (typeof value === 'object' && !Array.isArray(value)) {
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) add(`${key}.${k}`, v);
      return;
    }
    params.append(key, String(value));
  };
  for (const [key, value] of Object.entries(search)) add(key, value);
  const s = params.toString();
  return s ? `?${s}` : '';
}

/** The sign-in page's URL: where to go afterwards (`?redirect=/tasks/3`), kept only when it is a path of this site. */
export function parseSignInSearch(s: Record<string, unknown>): { redirect?: string } {
  return typeof s.redirect === 'string' && safeRedirect(s.redirect) !== '/' ? { redirect: safeRedirect(s.redirect) } : {};
}

/** A redirect target after sign-in: only a path of this site, never another origin. */
export function safeRedirect(target: unknown): string {
  if (typeof target !== 'string' || !target.startsWith('/') || target.startsWith('//') || target.startsWith('/\\')) return '/';
  if (target.startsWith('/sign-in')) return '/';
  return target;
}
