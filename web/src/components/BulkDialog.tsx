/**
 * A bulk action on selected rows or on every task matching the filter: shows how many tasks it will
 * touch (POST …/tasks/bulk/count) before it runs, then follows the job (GET /v1/jobs/:id) to the end.
 */
import { useEffect, useState } from 'react';
import { Alert, Button, Group, Modal, Stack, Text } from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { bulkCountQuery, processesKey, tasksKey } from '../api/queries';
import { api, errorMessage } from '../lib/http';
import type { BulkAction, QueueName } from '../lib/api-types';
import { JobProgress, useJob } from './JobProgress';

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

  const { job, finished } = useJob(jobId);

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
            <JobProgress job={job} finished={finished} testId="bulk-progress" failedTitle="Some tasks were not changed" />
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
