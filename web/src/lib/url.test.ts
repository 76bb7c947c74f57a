import { describe, expect, it } from 'vitest';
import { parseSearch, stringifySearch, safeRedirect, parseSignInSearch } from './url';
import { parseQueueSearch } from './queue-search';

describe('flat URL search', () => {
  it('writes nested filters as dotted keys and reads them back', () => {
    const s = stringifySearch({ queue: 'Manual', error: true, f: { Country: 'DK', Amount: 12 }, q: undefined, sort: '' });
    expect(s).toBe('?queue=Manual&error=true&f.Country=DK&f.Amount=12');
    expect(parseQueueSearch(parseSearch(s))).toEqual({ queue: 'Manual', error: true, f: { Country: 'DK', Amount: '12' } });
    expect(stringifySearch({})).toBe('');
    expect(parseSearch('?q=a%20b&q2=%26')).toEqual({ q: 'a b', q2: '&' });
  });
  it('redirects only within the site', () => {
    expect(safeRedirect('/processes/1/queue?queue=Manual')).toBe('/processes/1/queue?queue=Manual');
    expect(safeRedirect('//evil.example')).toBe('/');
    expect(safeRedirect('/\\evil.example')).toBe('/');
    expect(safeRedirect('https://evil.example')).toBe('/');
    expect(safeRedirect('/sign-in?redirect=/x')).toBe('/');
    expect(safeRedirect(undefined)).toBe('/');
  });
  it('the sign-in page keeps a redirect only to a path of the site', () => {
    expect(parseSignInSearch({ redirect: '/tasks/3' })).toEqual({ redirect: '/tasks/3' });
    expect(parseSignInSearch({ redirect: '//evil.example' })).toEqual({});
    expect(parseSignInSearch({})).toEqual({});
  });
});
