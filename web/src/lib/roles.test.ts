import { describe, expect, it } from 'vitest';
import { can } from './roles';

describe('what each role is offered (the server permission table)', () => {
  it('viewers read only; agents work tasks; developers configure but do not work tasks; admins delete', () => {
    expect(can('viewer', 'tasks.read')).toBe(true);
    expect(can('viewer', 'tasks.work')).toBe(false);
    expect(can('viewer', 'processes.gate')).toBe(false);
    expect(can('agent', 'tasks.work')).toBe(true);
    expect(can('agent', 'processes.gate')).toBe(true);
    expect(can('agent', 'tasks.delete')).toBe(false);
    expect(can('developer', 'processes.manage')).toBe(true);
    expect(can('developer', 'tasks.work')).toBe(false);
    expect(can('admin', 'tasks.delete')).toBe(true);
    expect(can(undefined, 'tasks.read')).toBe(false);
  });
});
