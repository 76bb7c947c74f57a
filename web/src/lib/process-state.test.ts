import { describe, expect, it } from 'vitest';
import { describeProcessState } from './process-state';
import type { ProcessSummary } from './api-types';

const base: ProcessSummary = {
  id: 1,
  key: 'invoices',
  name: 'Invoices',
  archived: false,
  description: '',
  tasksEnabled: true,
  state: { gateOpen: true, blockedToday: false, stoppedByErrors: false, okToRun: true, failure: null },
  counts: { ready: 0, needsData: 0, needsApproval: 0, manual: 0, error: 0, solved: 0, locked: 0, urgent: 0, overdue: 0, notActiveYet: 0 },
  openRun: null,
  lastMateContactAt: null,
};

describe('process state in words', () => {
  it('running', () => {
    expect(describeProcessState(base, 'UTC')).toEqual({ tone: 'running', label: 'Running', sentences: ['Mates may run and take tasks.'] });
  });
  it('stopped by a person, blocked, stopped by errors and a failure each say so', () => {
    const p = {
      ...base,
      counts: { ...base.counts, error: 12 },
      state: {
        gateOpen: false,
        blockedToday: true,
        stoppedByErrors: true,
        okToRun: false,
        failure: { message: 'SAP down', at: '2026-11-25T11:00:00Z' },
      },
    };
    const d = describeProcessState(p, 'UTC', new Date('2026-11-25T12:00:00Z'));
    expect(d.tone).toBe('stopped');
    expect(d.label).toBe('Stopped');
    expect(d.sentences.join(' ')).toMatch(/Stopped by a person/);
    expect(d.sentences.join(' ')).toMatch(/calendar/);
    expect(d.sentences.join(' ')).toMatch(/unresolved errors \(12\)/);
    expect(d.sentences.join(' ')).toMatch(/failure 25 Nov 2026, 11:00 \(an hour ago\): “SAP down”/);
  });
  it('stopped by errors alone, and blocked alone', () => {
    expect(describeProcessState({ ...base, state: { ...base.state, stoppedByErrors: true, okToRun: false } }, 'UTC').label).toBe(
      'Stopped by errors',
    );
    expect(describeProcessState({ ...base, state: { ...base.state, blockedToday: true, okToRun: false } }, 'UTC').tone).toBe('warning');
  });
});
