/**
 * A bulk action on selected rows or on every task matching the filter: shows how many tasks it will
 * touch (POST …/tasks/bulk/count) before it runs, then follows the job (GET /v1/jobs/:id) to the end.
 */
import { useEffect, useState } from 'react';
import { Alert, Button, Group, List, Modal, Progress, Stack, Text } from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { bulkCountQuery, jobQuery, processesKey, tasksKey } from '../api/queries';
import { api, errorMessage } from '../lib/http';
import type { BulkAction, QueueName } from '../lib/api-types';

export interface BulkRequest {
  action: BulkAction;
  queue?: QueueName;
  urgent?: boolean;
  ids?: number[];
  filter?: Record<string, unknown>;
  /** "Move to Ready", for the title and button */
  label: string;
}

export function BulkDialog({
  processId,
  request,
  onClose,
  onDone,
}: {
  processId: number;
  request: BulkRequest | null;
  onClose: () => void;
  onDone: () => void;
}) {
  const qc = useQueryClient();
  const [jobId, setJobId] = useState<string | null>(null);
  const [startError, setStartError] = useState<string | null>(null);
  const [starting, setStarting] = useState(false);
  const body = request
    ? { action: request.action, queue: request.queue, urgent: request.urgent, ids: request.ids, filter: request.filter }
    : null;

  useEffect(() => {
    setJobId(null);
    setStartError(null);
  }, [request]);

  const count = useQuery({ ...bulkCountQuery(processId, body), enabled: !!request && !jobId });

  // a job's progress every 500 ms until it ends
  const job = useQuery({
    ...jobQuery(jobId),
    refetchInterval: (q) => (q.state.data?.status === 'running' || !q.state.data ? 500 : false),
  });
  const finished = job.data && job.data.status !== 'running';

  useEffect(() => {
    if (finished) {
      void qc.invalidateQueries({ queryKey: tasksKey(processId) });
      void qc.invalidateQueries({ queryKey: processesKey() });
    }
  }, [finished, qc, processId]);

  const start = async () => {
    setStarting(true);
    setStartError(null);
    try {
      const r = await api<{ jobId: string; total: number }>(`/v1/processes/${processId}/tasks/bulk`, { method: 'POST', body });
      setJobId(r.jobId);
    } catch (err) {
      setStartError(errorMessage(err));
    } finally {
      setStarting(false);
    }
  };

  const close = () => {
    if (finished) onDone();
    onClose();
  };

  const j = job.data;
  const pct = j && j.total > 0 ? Math.round(((j.done + j.failed) / j.total) * 100) : j && j.status !== 'running' ? 100 : 0;

  return (
    <Modal opened={!!request} onClose={close} title={request?.label ?? ''} centered>
      <Stack>
        {!jobId && (
          <>
            {count.isPending ? (
              <Text>Counting the tasks this will change…</Text>
            ) : count.isError ? (
              <Alert color="red" role="alert">
                {errorMessage(count.error)}
              </Alert>
            ) : (
              <Text data-testid="bulk-count">
                This will change <strong>{count.data.toLocaleString()}</strong> {count.data === 1 ? 'task' : 'tasks'}
                {request?.filter ? ' matching the filter' : ''}.
              </Text>
            )}
            {startError && (
              <Alert color="red" role="alert">
                {startError}
              </Alert>
            )}
            <Group justify="flex-end">
              <Button variant="default" onClick={close}>
                Cancel
              </Button>
              <Button
                onClick={() => void start()}
                loading={starting}
                disabled={!count.isSuccess || count.data === 0}
                color={request?.action === 'delete' ? 'red' : undefined}
              >
                {request?.label}
              </Button>
            </Group>
          </>
        )}
        {jobId && (
          <>
            <Progress value={pct} aria-label="Progress" animated={!finished} size="lg" />
            <Text data-testid="bulk-progress" role="status">
              {j
                ? `${(j.done + j.failed).toLocaleString()} of ${j.total.toLocaleString()} done${j.failed ? `, ${j.failed} failed` : ''}`
                : 'Starting…'}
              {j?.status === 'done' ? '. Finished.' : j?.status === 'failed' ? '. The job stopped.' : ''}
            </Text>
            {j && j.errors.length > 0 && (
              <Alert color="orange" title="Some tasks were not changed">
                <List size="sm">
                  {j.errors.slice(0, 10).map((e, i) => (
                    <List.Item key={i}>{e.taskId ? `Task ${e.taskId}: ${e.message}` : e.message}</List.Item>
                  ))}
                </List>
              </Alert>
            )}
            {job.isError && <Alert color="red">{errorMessage(job.error)}</Alert>}
            <Group justify="flex-end">
              <Button onClick={close} disabled={!finished && !job.isError}>
                Close
              </Button>
            </Group>
          </>
        )}
      </Stack>
    </Modal>
  );
}
