/** A process's state in words, for the overview: what Mates are told, and what a person can do about it. */
import type { ProcessSummary } from './api-types';
import { formatWhen } from './time';

export type Tone = 'running' | 'stopped' | 'warning' | 'idle';

export interface StateInWords {
  tone: Tone;
  label: string;
  sentences: string[];
}

export function describeProcessState(p: ProcessSummary, timeZone: string, now: Date = new Date()): StateInWords {
  const sentences: string[] = [];
  const s = p.state;
  if (p.archived) return { tone: 'idle', label: 'Archived', sentences: ['This process is archived: it takes no new tasks.'] };
  if (!s.gateOpen) sentences.push('Stopped by a person: Mates are told not to run and are handed no tasks. Switch it on to let them work.');
  if (s.blockedToday) sentences.push('Blocked today by its calendar: Mates are told not to run until the next working day.');
  if (s.stoppedByErrors)
    sentences.push(
      `Stopped by errors: it has more unresolved errors (${p.counts.error}) than its limit. Mates resume as soon as the errors in Manual are resolved.`,
    );
  if (s.failure) sentences.push(`A Mate reported a failure ${formatWhen(s.failure.at, timeZone, now)}: “${s.failure.message}”.`);
  if (!p.tasksEnabled) sentences.push('A trigger process: it has runs but no task queues.');
  let tone: Tone;
  let label: string;
  if (!s.gateOpen) [tone, label] = ['stopped', 'Stopped'];
  else if (s.stoppedByErrors) [tone, label] = ['stopped', 'Stopped by errors'];
  else if (s.blockedToday) [tone, label] = ['warning', 'Blocked today'];
  else if (s.failure) [tone, label] = ['warning', 'Failure reported'];
  else if (s.okToRun) [tone, label] = ['running', 'Running'];
  else [tone, label] = ['warning', 'Not running'];
  if (tone === 'running' && sentences.length === 0) sentences.push('Mates may run and take tasks.');
  return { tone, label, sentences };
}
