import { describe, expect, it } from 'vitest';
import { clickRow, toggleAll, keepPresent, emptySelection } from './selection';
import { freezeRows } from './freeze';

const order = [10, 11, 12, 13, 14, 15];

describe('row selection', () => {
  it('click toggles a row and sets the anchor; shift-click selects the range from the anchor, either direction', () => {
    let s = clickRow(emptySelection, order, 11, false);
    expect([...s.ids]).toEqual([11]);
    s = clickRow(s, order, 14, true);
    expect([...s.ids].sort()).toEqual([11, 12, 13, 14]);
    s = clickRow(emptySelection, order, 14, false);
    s = clickRow(s, order, 12, true);
    expect([...s.ids].sort()).toEqual([12, 13, 14]);
  });
  it('shift-click on a selected row clears the range', () => {
    let s = clickRow(emptySelection, order, 10, false);
    s = clickRow(s, order, 15, true);
    expect(s.ids.size).toBe(6);
    s = clickRow({ ...s, anchor: 11 }, order, 13, true);
    expect([...s.ids].sort()).toEqual([10, 14, 15]);
  });
  it('shift-click without an anchor is a plain click', () => {
    expect([...clickRow(emptySelection, order, 13, true).ids]).toEqual([13]);
  });
  it('select all and none; refresh keeps only present rows', () => {
    const all = toggleAll(emptySelection, order);
    expect(all.ids.size).toBe(6);
    expect(toggleAll(all, order).ids.size).toBe(0);
    const kept = keepPresent({ ids: new Set([10, 99]), anchor: 99 }, order);
    expect([...kept.ids]).toEqual([10]);
    expect(kept.anchor).toBeNull();
  });
});

describe('frozen rows while selecting', () => {
  it('keeps the order, shows latest values, marks gone rows and counts new ones', () => {
    const frozen = [
      { id: 1, v: 'a' },
      { id: 2, v: 'b' },
      { id: 3, v: 'c' },
    ];
    const latest = [
      { id: 4, v: 'new' },
      { id: 3, v: 'c2' },
      { id: 1, v: 'a' },
      { id: 5, v: 'new' },
    ];
    const f = freezeRows(frozen, latest);
    expect(f.rows.map((r) => r.id)).toEqual([1, 2, 3]);
    expect(f.rows[1].gone).toBe(true);
    expect(f.rows[2].v).toBe('c2');
    expect(f.newCount).toBe(2);
  });
});
