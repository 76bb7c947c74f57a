/** A form generated from the process's fields: creates one task (POST /v1/processes/:id/tasks: field values plus the reserved urgent and comment). */
import { useState } from 'react';
import { Alert, Breadcrumbs, Button, Card, Checkbox, Group, SimpleGrid, Skeleton, Stack, Text, Textarea, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useQueryClient } from '@tanstack/react-query';
import { getRouteApi, useNavigate } from '@tanstack/react-router';
import { useForm } from 'react-hook-form';
import { useLiveQuery } from '../api/live';
import { processesKey, processQuery, tasksKey } from '../api/queries';
import { useSession } from '../api/session';
import { api, ApiError, errorMessage } from '../lib/http';
import type { FieldValue, Task } from '../lib/api-types';
import { queueLabel } from '../lib/queues';
import { taskName } from '../lib/task-name';
import { inputToStored, valueToInput } from '../lib/values';
import { FieldInput } from '../components/FieldInput';
import { AnchorLink, ButtonLink } from '../components/links';
import { ErrorAlert } from '../components/ErrorAlert';

const route = getRouteApi('/_app/processes/$processId/new');

export function CreateTaskPage() {
  const { processId } = route.useParams();
  const id = Number(processId);
  const process = useLiveQuery(processQuery(id));
  const tz = useSession().tenant.timeZone;
  const qc = useQueryClient();
  const navigate = useNavigate();
  const [failure, setFailure] = useState<string | null>(null);
  const [urgent, setUrgent] = useState(false);
  const [comment, setComment] = useState('');
  const fields = process.data?.fields ?? [];
  const form = useForm<Record<string, unknown>>({
    values: Object.fromEntries(fields.map((f) => [f.name, valueToInput((f.default as FieldValue) ?? null, f, tz)])),
  });

  if (process.isPending) return <Skeleton h={300} />;
  if (process.isError) return <ErrorAlert error={process.error} title="Could not load the process" />;
  const p = process.data;

  const submit = form.handleSubmit(async (values) => {
    setFailure(null);
    const data: Record<string, FieldValue> = {};
    for (const f of fields) {
      const v = inputToStored(values[f.name], f, tz);
      if (v !== null) data[f.name] = v;
    }
    try {
      const task = await api<Task>(`/v1/processes/${id}/tasks`, {
        method: 'POST',
        body: { ...data, ...(urgent ? { urgent: true } : {}), ...(comment.trim() ? { comment: comment.trim() } : {}) },
      });
      notifications.show({ message: `${taskName(task, fields, tz)} created in ${queueLabel(task.queue)}.` });
      void qc.invalidateQueries({ queryKey: processesKey() });
      void qc.invalidateQueries({ queryKey: tasksKey(id) });
      await navigate({ to: '/tasks/$taskId', params: { taskId: String(task.id) } });
    } catch (err) {
      if (err instanceof ApiError)
        for (const e of err.fieldErrors) {
          const f = fields.find((x) => x.name.toLowerCase() === e.field?.toLowerCase());
          if (f) form.setError(f.name, { message: e.message });
        }
      setFailure(errorMessage(err));
    }
  });

  return (
    <Stack>
      <Breadcrumbs>
        <AnchorLink to="/">Overview</AnchorLink>
        <AnchorLink to="/processes/$processId/queue" params={{ processId }} search={{ queue: 'Ready' }}>
          {p.name || p.key}
        </AnchorLink>
        <Text>New task</Text>
      </Breadcrumbs>
      <Group justify="space-between">
        <Title order={1} size="h2">
          New task in {p.name || p.key}
        </Title>
        <ButtonLink variant="default" to="/processes/$processId/import" params={{ processId }}>
          Import from a CSV or XLSX file
        </ButtonLink>
      </Group>
      <Card withBorder maw={860}>
        <form onSubmit={submit} noValidate>
          <Stack>
            {failure && (
              <Alert color="red" role="alert" title="The task was not created">
                {failure}
              </Alert>
            )}
            {fields.length === 0 && <Text c="dimmed">This process has no fields: the task is created without data.</Text>}
            <SimpleGrid cols={{ base: 1, sm: 2 }}>
              {fields.map((f) => (
                <FieldInput key={f.name} field={f} control={form.control} />
              ))}
            </SimpleGrid>
            <Text size="sm" c="dimmed">
              A task missing a required value is created in Needs data until someone fills it in.
            </Text>
            <Checkbox label="Urgent: taken before other tasks" checked={urgent} onChange={(e) => setUrgent(e.currentTarget.checked)} />
            <Textarea label="Comment (optional)" value={comment} onChange={(e) => setComment(e.currentTarget.value)} autosize minRows={2} />
            <Group>
              <Button type="submit" loading={form.formState.isSubmitting}>
                Create task
              </Button>
              <ButtonLink variant="default" to="/processes/$processId/queue" params={{ processId }} search={{ queue: 'Ready' }}>
                Cancel
              </ButtonLink>
            </Group>
          </Stack>
        </form>
      </Card>
    </Stack>
  );
}
