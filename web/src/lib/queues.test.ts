import { describe, expect, it } from 'vitest';
import type { ProcessCounts } from './api-types';
import { QUEUES, queueCount, queueLabel } from './queues';

describe('queues', () => {
  it('lists the five queues in the order of the tabs', () => {
    expect(QUEUES).toEqual(['Ready', 'NeedsData', 'NeedsApproval', 'Manual', 'Solved']);
  });
  it('names a queue in words, and an unknown one as it is', () => {
    expect(queueLabel('NeedsApproval')).toBe('Needs approval');
    expect(queueLabel('Archive')).toBe('Archive');
  });
  it('counts the tasks with an error in Manual', () => {
    const c = { ready: 1, needsData: 2, needsApproval: 3, manual: 4, error: 5, solved: 6 } as ProcessCounts;
    expect(QUEUES.map((q) => queueCount(c, q))).toEqual([1, 2, 3, 9, 6]);
  });
});
