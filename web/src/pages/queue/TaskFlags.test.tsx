import { describe, expect, it } from 'vitest';
import { renderToStaticMarkup } from 'react-dom/server';
import { MantineProvider } from '@mantine/core';
import type { Task } from '../../lib/api-types';
import { TaskFlags } from './TaskFlags';

const now = new Date('2026-11-25T12:00:00Z');
const task = (over: Partial<Task>): Task =>
  ({ id: 1, queue: 'Ready', error: false, urgent: false, lockedBy: null, deadline: null, ...over }) as Task;
const flags = (t: Task, gone?: boolean) =>
  renderToStaticMarkup(
    <MantineProvider>
      <TaskFlags task={t} gone={gone} now={now} />
    </MantineProvider>,
  );

describe('TaskFlags', () => {
  it('shows nothing for a plain task', () => {
    expect(flags(task({}))).not.toMatch(/Error|Urgent|working|Open by|Overdue|Left/);
  });
  it('marks an error, urgency and a passed deadline', () => {
    const html = flags(task({ error: true, urgent: true, deadline: '2026-11-24T00:00:00Z' }));
    expect(html).toContain('Error');
    expect(html).toContain('Urgent');
    expect(html).toContain('Overdue');
  });
  it('a deadline ahead, or a solved task, is not overdue', () => {
    expect(flags(task({ deadline: '2026-11-26T00:00:00Z' }))).not.toContain('Overdue');
    expect(flags(task({ queue: 'Solved', deadline: '2026-11-24T00:00:00Z' }))).not.toContain('Overdue');
  });
  it('says who holds the task: a Mate working, or the person who has it open', () => {
    expect(flags(task({ lockedBy: { type: 'mate', id: 1, name: 'robot-1' } }))).toContain('Mate working');
    expect(flags(task({ lockedBy: { type: 'user', id: 2, name: 'anna' } }))).toContain('Open by anna');
  });
  it('marks a frozen row that left the list', () => {
    expect(flags(task({}), true)).toContain('Left this list');
  });
});
