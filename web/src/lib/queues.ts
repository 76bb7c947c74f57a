/** The five queues of a process: their names as people read them, in the order the app shows them, and their counts. */
import type { ProcessCounts, QueueName } from './api-types';

/** Every queue the API knows (a new one does not compile until it has a label here). */
export const QUEUE_LABEL: Record<QueueName, string> = {
  Ready: 'Ready',
  NeedsData: 'Needs data',
  NeedsApproval: 'Needs approval',
  Manual: 'Manual',
  Solved: 'Solved',
};

export const QUEUES = Object.keys(QUEUE_LABEL) as QueueName[];

/** A queue's name as people read it; a name the app does not know (an older history row) as it is. */
export function queueLabel(queue: string): string {
  return (QUEUE_LABEL as Record<string, string>)[queue] ?? queue;
}

/** The tasks in a queue as its tab counts them: Manual holds the tasks with an error too. */
export function queueCount(c: ProcessCounts, q: QueueName): number {
  return { Ready: c.ready, NeedsData: c.needsData, NeedsApproval: c.needsApproval, Manual: c.manual + c.error, Solved: c.solved }[q];
}
