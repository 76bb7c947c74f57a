/** Row selection of the queue table: click toggles one row, shift-click selects or clears the range from the last clicked row. */
export interface Selection {
  ids: ReadonlySet<number>;
  /** the row last clicked without shift: one end of a shift range */
  anchor: number | null;
}

export const emptySelection: Selection = { ids: new Set(), anchor: null };

/** order = the ids as the table shows them now */
export function clickRow(sel: Selection, order: readonly number[], id: number, shift: boolean): Selection {
  const ids = new Set(sel.ids);
  const turnOn = !ids.has(id);
  const from = sel.anchor === null ? -1 : order.indexOf(sel.anchor);
  const to = order.indexOf(id);
  if (shift && from >= 0 && to >= 0) {
    const [a, b] = from <= to ? [from, to] : [to, from];
    for (let i = a; i <= b; i++) {
      if (turnOn) ids.add(order[i]);
      else ids.delete(order[i]);
    }
    return { ids, anchor: sel.anchor };
  }
  if (turnOn) ids.add(id);
  else ids.delete(id);
  return { ids, anchor: id };
}

/** The header checkbox: all shown rows selected, or none. */
export function toggleAll(sel: Selection, order: readonly number[]): Selection {
  const all = order.length > 0 && order.every((id) => sel.ids.has(id));
  return all ? emptySelection : { ids: new Set(order), anchor: null };
}

/** Keeps only ids still present (after a refresh). */
export function keepPresent(sel: Selection, order: readonly number[]): Selection {
  const present = new Set(order);
  const ids = new Set([...sel.ids].filter((id) => present.has(id)));
  if (ids.size === sel.ids.size) return sel;
  return { ids, anchor: sel.anchor !== null && present.has(sel.anchor) ? sel.anchor : null };
}
