import { describe, expect, it } from 'vitest';
import { parseQueueSearch, flattenQueueSearch, taskListQuery, nextSort, sortDirection, isFiltered, bulkFilter } from './queue-search';

describe('queue search in the URL', () => {
  it('reads queue (any case), error flag, search, sort and field filters; drops junk', () => {
    expect(
      parseQueueSearch({
        queue: 'manual',
        error: 'true',
        q: '  acme ',
        sort: '-createdAt',
        'f.Country': 'DK',
        'f.bad key': 'x',
        'f.Empty': '',
        other: 1,
      }),
    ).toEqual({ queue: 'Manual', error: true, q: 'acme', sort: '-createdAt', f: { Country: 'DK' } });
    expect(parseQueueSearch({ queue: 'Nowhere', error: 'maybe', sort: 'x;drop' })).toEqual({});
    expect(parseQueueSearch({ error: false })).toEqual({ error: false });
    expect(parseQueueSearch({ f: { Amount: 12 } })).toEqual({ f: { Amount: '12' } });
  });
  it('round-trips through the flat form, which is also the API query', () => {
    const s = { queue: 'Ready' as const, q: 'x y', sort: 'deadline', f: { b: '2', a: '1' } };
    const flat = flattenQueueSearch(s);
    expect(Object.keys(flat)).toEqual(['queue', 'q', 'sort', 'f.a', 'f.b']);
    expect(parseQueueSearch(flat)).toEqual(s);
    expect(taskListQuery(s, { limit: 50, cursor: 'abc' })).toBe('queue=Ready&q=x+y&sort=deadline&f.a=1&f.b=2&limit=50&cursor=abc');
  });
  it('column sort cycles ascending → descending → none', () => {
    expect(nextSort(undefined, 'createdAt')).toBe('createdAt');
    expect(nextSort('createdAt', 'createdAt')).toBe('-createdAt');
    expect(nextSort('-createdAt', 'createdAt')).toBeUndefined();
    expect(nextSort('-deadline', 'createdAt')).toBe('createdAt');
    expect(sortDirection('-deadline', 'deadline')).toBe('desc');
    expect(sortDirection('deadline', 'createdAt')).toBeNull();
  });
  it('knows when a search narrows the queue', () => {
    expect(isFiltered({ queue: 'Ready' })).toBe(false);
    expect(isFiltered({ queue: 'Ready', q: 'a' })).toBe(true);
    expect(isFiltered({ f: { a: '1' } })).toBe(true);
  });
});

describe('bulkFilter()', () => {
  it('is the list filter with the error flag as a boolean', () => {
    expect(bulkFilter({ queue: 'Manual', error: false, q: 'acme', f: { Country: 'DK' } })).toEqual({
      queue: 'Manual',
      error: false,
      q: 'acme',
      'f.Country': 'DK',
    });
    expect(bulkFilter({ queue: 'Ready' })).toEqual({ queue: 'Ready' });
  });
});
