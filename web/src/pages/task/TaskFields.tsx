/** The task's field values: a form with one typed input per field for those who may edit, else the values as text. */
import { useState } from 'react';
import { Alert, Button, Group, SimpleGrid, Skeleton, Stack, Text } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useQueryClient } from '@tanstack/react-query';
import { useForm } from 'react-hook-form';
import { useLiveQuery } from '../../api/live';
import { processQuery, taskKey, tasksKey } from '../../api/queries';
import { useSession } from '../../api/session';
import { api, ApiError, errorMessage } from '../../lib/http';
import type { FieldValue, TaskDetail } from '../../lib/api-types';
import { fieldLabel, formatValue, inputToStored, valueToInput } from '../../lib/values';
import { FieldInput } from '../../components/FieldInput';

export function TaskFields({ task, name, editable }: { task: TaskDetail; name: string; editable: boolean }) {
  const session = useSession();
  const tz = session.tenant.timeZone;
  const process = useLiveQuery(processQuery(task.processId));
  const qc = useQueryClient();
  const fields = process.data?.fields ?? [];
  const toForm = () => Object.fromEntries(fields.map((f) => [f.name, valueToInput(task.data[f.name], f, tz)]));
  const form = useForm<Record<string, unknown>>({ values: toForm() as Record<string, unknown> });
  const [failure, setFailure] = useState<string | null>(null);

  if (process.isPending) return <Skeleton h={160} />;
  if (!fields.length)
    return (
      <SimpleGrid cols={{ base: 1, sm: 2 }}>
        {Object.entries(task.data).map(([k, v]) => (
          <div key={k}>
            <Text size="xs" c="dimmed">
              {k}
            </Text>
            <Text>{formatValue(v, undefined, tz)}</Text>
          </div>
        ))}
      </SimpleGrid>
    );

  const save = form.handleSubmit(async (values) => {
    setFailure(null);
    const data: Record<string, FieldValue> = {};
    for (const f of fields) if (form.getFieldState(f.name).isDirty) data[f.name] = inputToStored(values[f.name], f, tz);
    if (!Object.keys(data).length) return;
    try {
      await api(`/v1/tasks/${task.id}`, { method: 'PATCH', body: { data } });
      notifications.show({ message: `${name}: saved.` });
      await qc.invalidateQueries({ queryKey: taskKey(task.id) });
      void qc.invalidateQueries({ queryKey: tasksKey(task.processId) });
    } catch (err) {
      if (err instanceof ApiError && err.fieldErrors.length) {
        for (const e of err.fieldErrors) {
          const f = fields.find((x) => x.name.toLowerCase() === e.field?.toLowerCase());
          if (f) form.setError(f.name, { message: e.message });
        }
      }
      setFailure(errorMessage(err));
    }
  });

  return (
    <form onSubmit={save} noValidate>
      <Stack>
        {failure && (
          <Alert color="red" role="alert">
            {failure}
          </Alert>
        )}
        <SimpleGrid cols={{ base: 1, sm: 2 }}>
          {fields.map((f) =>
            editable ? (
              <FieldInput key={f.name} field={f} control={form.control} />
            ) : (
              <div key={f.name}>
                <Text size="xs" c="dimmed">
                  {fieldLabel(f)}
                </Text>
                <Text data-testid={`value-${f.name}`}>{formatValue(task.data[f.name], f, tz) || '—'}</Text>
              </div>
            ),
          )}
        </SimpleGrid>
        {editable && (
          <Group>
            <Button type="submit" loading={form.formState.isSubmitting} disabled={!form.formState.isDirty}>
              Save fields
            </Button>
            {form.formState.isDirty && (
              <Button variant="subtle" onClick={() => form.reset()}>
                Undo changes
              </Button>
            )}
          </Group>
        )}
      </Stack>
    </form>
  );
}
