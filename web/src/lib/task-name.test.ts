import { describe, expect, it } from 'vitest';
import { keyName, taskName } from './task-name';
import { givesReason, reasonState } from './task-reason';
import type { HistoryRow } from './api-types';

const fields = [
  { name: 'OrderNo', type: 'text' as const, isKey: true },
  { name: 'Qty', type: 'integer' as const, isKey: false },
  { name: 'Due', type: 'date' as const, isKey: true },
];

describe('task names', () => {
  it('are the key field values in field order, formatted', () => {
    expect(taskName({ id: 6023720148653123, data: { OrderNo: 'B-20417', Qty: 3, Due: '2026-03-01' } }, fields, 'UTC')).toBe(
      'B-20417 · 1 Mar 2026',
    );
  });
  it('skip empty key values, and fall back to the id', () => {
    expect(keyName({ id: 1, data: { OrderNo: 'B-1', Due: null } }, fields, 'UTC')).toBe('B-1');
    expect(keyName({ id: 1, data: { OrderNo: '  ' } }, fields, 'UTC')).toBeNull();
    expect(taskName({ id: 42, data: { OrderNo: '' } }, fields, 'UTC')).toBe('Task 42');
    expect(taskName({ id: 42, data: { Qty: 1 } }, [fields[1]], 'UTC')).toBe('Task 42');
  });
});

const mate = { type: 'mate', id: 1, name: 'Robot 1' };
const anna = { type: 'user', id: 2, name: 'Anna' };
function row(
  action: string,
  actor: typeof mate,
  fromQueue: string | null,
  toQueue: string,
  error: boolean,
  reason: string | null,
): HistoryRow {
  return {
    id: 0,
    at: '2026-11-27T10:00:00Z',
    actor,
    action,
    fromQueue,
    toQueue,
    error,
    reason,
    comment: null,
    retryCount: 0,
    requestId: null,
    details: null,
  };
}

describe('the reason', () => {
  const erred = [
    row('Created', mate, null, 'Ready', false, null),
    row('Taken', mate, 'Ready', 'Ready', false, null),
    row('Error', mate, 'Ready', 'Manual', true, 'Not in ERP'),
  ];
  it('is current while the task is where the hand-back put it', () => {
    expect(reasonState({ reason: 'Not in ERP', queue: 'Manual', error: true, history: erred })).toMatchObject({
      current: true,
      text: 'Not in ERP',
    });
  });
  it("is the previous one once a person moved the task on (the row keeps the task's reason)", () => {
    const moved = [...erred, row('Moved', anna, 'Manual', 'Ready', false, 'Not in ERP')];
    expect(reasonState({ reason: 'Not in ERP', queue: 'Ready', error: false, history: moved })).toMatchObject({
      current: false,
      given: { actor: mate },
    });
    expect(givesReason(moved)).toEqual([false, false, true, false]);
    const cleared = [...erred, row('Error cleared', anna, 'Manual', 'Manual', false, 'Not in ERP')];
    expect(reasonState({ reason: 'Not in ERP', queue: 'Manual', error: false, history: cleared })?.current).toBe(false);
  });
  it('is given again by a second hand-back with the same words', () => {
    const again = [
      ...erred,
      row('Moved', anna, 'Manual', 'Ready', false, 'Not in ERP'),
      row('Taken', mate, 'Ready', 'Ready', false, 'Not in ERP'),
      row('Error', mate, 'Ready', 'Manual', true, 'Not in ERP'),
    ];
    expect(givesReason(again)).toEqual([false, false, true, false, false, true]);
    expect(reasonState({ reason: 'Not in ERP', queue: 'Manual', error: true, history: again })?.current).toBe(true);
  });
  it('is none without a reason', () => {
    expect(reasonState({ reason: null, queue: 'Ready', error: false, history: [] })).toBeNull();
  });
});
