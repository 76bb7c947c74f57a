/** A person's action on a task (POST/PATCH/DELETE under /v1/tasks/:id): a notification naming the task, then fresh task, queue and overview data. */
import { notifications } from '@mantine/notifications';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { processesKey, taskKey, tasksKey } from '../../api/queries';
import { api, errorMessage } from '../../lib/http';
import type { Task } from '../../lib/api-types';

export type Action = { path: string; method?: 'POST' | 'PATCH' | 'DELETE'; body?: unknown; done: string };

export function useTaskAction(task: Task | undefined) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (a: Action) => api<Task | undefined>(`/v1/tasks/${task!.id}${a.path}`, { method: a.method ?? 'POST', body: a.body }),
    onSuccess: (_r, a) => {
      notifications.show({ message: a.done });
      void qc.invalidateQueries({ queryKey: taskKey(task!.id) });
      void qc.invalidateQueries({ queryKey: tasksKey(task!.processId) });
      void qc.invalidateQueries({ queryKey: processesKey() });
    },
    onError: (err) => notifications.show({ color: 'red', title: 'Not done', message: errorMessage(err) }),
  });
}
