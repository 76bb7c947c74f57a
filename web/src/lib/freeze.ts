/**
 * While rows are selected the queue table must not reshuffle under the cursor: it keeps showing the
 * rows in the order they had when the selection began (with their latest values when still listed)
 * and counts the rows that arrived since as "N new".
 */
export interface Frozen<T> {
  rows: (T & { gone?: boolean })[];
  newCount: number;
}

export function freezeRows<T extends { id: number }>(frozen: readonly T[], latest: readonly T[]): Frozen<T> {
  const byId = new Map(latest.map((r) => [r.id, r]));
  const kept = new Set(frozen.map((r) => r.id));
  const rows = frozen.map((r) => {
    const now = byId.get(r.id);
    return now ? now : { ...r, gone: true };
  });
  const newCount = latest.filter((r) => !kept.has(r.id)).length;
  return { rows, newCount };
}
