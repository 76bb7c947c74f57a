/** Queue names as people read them. */
import type { QueueName } from '../api/types';

export const QUEUE_LABEL: Record<QueueName, string> = {
  Ready: 'Ready',
  NeedsData: 'Needs data',
  NeedsApproval: 'Needs approval',
  Manual: 'Manual',
  Solved: 'Solved',
};
