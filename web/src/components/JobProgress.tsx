/**
 * A job the server runs in chunks (a bulk action, or an import larger than one chunk): followed
 * with GET /v1/jobs/:id every 500 ms until it ends, and shown as a progress bar, "N of M done"
 * and the first refusals (a task for a bulk action, a row of the file for an import).
 */
import { Alert, List, Progress, Text } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { jobQuery } from '../api/queries';
import { errorMessage } from '../lib/http';
import type { Job } from '../lib/api-types';

/** The job's progress, read again every 500 ms while it runs; `finished` once it has ended. */
export function useJob(jobId: string | null) {
  const job = useQuery({
    ...jobQuery(jobId),
    refetchInterval: (q) => (q.state.data?.status === 'running' || !q.state.data ? 500 : false),
  });
  const finished = !!job.data && job.data.status !== 'running';
  return { job, finished };
}

/** What a refusal names: the row of an import's file, or the task of a bulk action. */
function refusalText(e: Job['errors'][number]): string {
  if (e.row !== undefined) return e.message;
  return e.taskId ? `Task ${e.taskId}: ${e.message}` : e.message;
}

export function JobProgress({
  job,
  finished,
  testId,
  failedTitle,
}: {
  job: ReturnType<typeof useJob>['job'];
  finished: boolean;
  /** the data-testid of the status line */
  testId: string;
  /** the title over the refusals: "Some tasks were not changed" */
  failedTitle: string;
}) {
  const j = job.data;
  const pct = j && j.total > 0 ? Math.round(((j.done + j.failed) / j.total) * 100) : j && j.status !== 'running' ? 100 : 0;
  return (
    <>
      <Progress value={pct} aria-label="Progress" animated={!finished} size="lg" />
      <Text data-testid={testId} role="status">
        {j
          ? `${(j.done + j.failed).toLocaleString()} of ${j.total.toLocaleString()} done${j.failed ? `, ${j.failed} failed` : ''}`
          : 'Starting…'}
        {j?.status === 'done' ? '. Finished.' : j?.status === 'failed' ? '. The job stopped.' : ''}
      </Text>
      {j && j.errors.length > 0 && (
        <Alert color="orange" title={failedTitle}>
          <List size="sm">
            {j.errors.slice(0, 10).map((e, i) => (
              <List.Item key={i}>{refusalText(e)}</List.Item>
            ))}
          </List>
        </Alert>
      )}
      {job.isError && <Alert color="red">{errorMessage(job.error)}</Alert>}
    </>
  );
}
