/**
 * Every setting of a process (docs/product.md §2) as a form; only the changed ones are sent
 * (PATCH /v1/processes/:id/settings). Read-only (a disabled fieldset, no Save) for a role that may
 * not manage processes.
 */
import { useState } from 'react';
import {
  Alert,
  Button,
  Card,
  Checkbox,
  Fieldset,
  Group,
  NumberInput,
  Radio,
  SimpleGrid,
  Stack,
  Switch,
  Text,
  Textarea,
  Title,
} from '@mantine/core';
import { DatePickerInput } from '@mantine/dates';
import { notifications } from '@mantine/notifications';
import { Controller, useForm, type Control } from 'react-hook-form';
import { useSaveSettings } from '../../api/mutations';
import { errorMessage, ApiError } from '../../lib/http';
import type { ProcessDetail, Settings, SettingsPatch } from '../../lib/api-types';
import { changedKeys, normaliseDates, WEEKDAYS } from '../../lib/settings';
import { formatDuration } from '../../lib/time';

type Kpi = {
  secondsSavedPerTask: number;
  entriesPerTask: number;
  secondsSavedPerEntry: number | null;
  secondsSavedManual: number;
  secondsSavedError: number;
  secondsSavedRetry: number;
};
type FormValues = Omit<Settings, 'gateOpen' | 'kpi'> & { kpi: Kpi };

function toForm(s: Settings): FormValues {
  const { gateOpen: _gate, kpi, ...rest } = s;
  const k = kpi as Partial<Kpi>;
  return {
    ...rest,
    kpi: {
      secondsSavedPerTask: k.secondsSavedPerTask ?? 0,
      entriesPerTask: k.entriesPerTask ?? 1,
      secondsSavedPerEntry: k.secondsSavedPerEntry ?? null,
      secondsSavedManual: k.secondsSavedManual ?? 0,
      secondsSavedError: k.secondsSavedError ?? 0,
      secondsSavedRetry: k.secondsSavedRetry ?? 0,
    },
  };
}

type NumberPath =
  | 'maxRetries'
  | 'errorLimit'
  | 'lockTimeoutSeconds'
  | 'defaultDeadlineSeconds'
  | 'defaultActivationOffsetSeconds'
  | 'runTimeoutSeconds'
  | `kpi.${keyof Kpi}`;

/** A whole number of seconds (or a count); a duration is also shown in words. */
function NumberSetting({
  control,
  name,
  label,
  help,
  min = 0,
  max,
  nullable,
  seconds,
  error,
}: {
  control: Control<FormValues>;
  name: NumberPath;
  label: string;
  help?: string;
  min?: number;
  max?: number;
  nullable?: boolean;
  seconds?: boolean;
  error?: string;
}) {
  return (
    <Controller
      control={control}
      name={name}
      rules={{
        validate: (v) => {
          if (v === null || v === undefined) return nullable ? true : `${label} is required`;
          if (typeof v !== 'number' || !Number.isInteger(v)) return `${label} must be a whole number`;
          if (v < min) return `${label} must be at least ${min}`;
          if (max !== undefined && v > max) return `${label} must be at most ${max}`;
          return true;
        },
      }}
      render={({ field, fieldState }) => {
        const v = field.value as number | null;
        const words = seconds && typeof v === 'number' ? formatDuration(v) : null;
        return (
          <NumberInput
            label={label}
            description={[help, words && `= ${words}`].filter(Boolean).join(' ') || undefined}
            value={v ?? ''}
            onChange={(x) => field.onChange(x === '' ? null : typeof x === 'number' ? x : Number(x))}
            onBlur={field.onBlur}
            min={min}
            max={max}
            allowDecimal={false}
            allowNegative={false}
            placeholder={nullable ? 'None' : undefined}
            error={fieldState.error?.message ?? error}
            suffix={seconds ? ' s' : undefined}
          />
        );
      }}
    />
  );
}

function SwitchSetting({
  control,
  name,
  label,
  help,
}: {
  control: Control<FormValues>;
  name: 'tasksEnabled' | 'retryAllowed' | 'stopOnErrors' | 'deadlinesEnabled';
  label: string;
  help: string;
}) {
  return (
    <Controller
      control={control}
      name={name}
      render={({ field }) => (
        <Switch label={label} description={help} checked={field.value} onChange={(e) => field.onChange(e.currentTarget.checked)} />
      )}
    />
  );
}

function Section({ title, children }: { title: string; children: React.ReactNode }) {
  return (
    <Card withBorder component="section" aria-label={title}>
      <Title order={2} size="h4" mb="sm">
        {title}
      </Title>
      <Stack gap="sm">{children}</Stack>
    </Card>
  );
}

export function SettingsForm({ process, editable }: { process: ProcessDetail; editable: boolean }) {
  const save = useSaveSettings(process.id);
  const [initial, setInitial] = useState(() => toForm(process.settings));
  const form = useForm<FormValues>({ defaultValues: initial });
  const { control, formState } = form;
  const [failure, setFailure] = useState<string | null>(null);
  const serverErrors: Record<string, string> = {};
  if (save.error instanceof ApiError) for (const e of save.error.fieldErrors) if (e.field) serverErrors[e.field] = e.message;
  const deadlines = form.watch('deadlinesEnabled');
  const stopOnErrors = form.watch('stopOnErrors');
  const retryAllowed = form.watch('retryAllowed');

  const submit = form.handleSubmit(async (values) => {
    setFailure(null);
    const next = { ...values, calendar: { ...values.calendar, blockedDates: normaliseDates(values.calendar.blockedDates) } };
    const patch = changedKeys(initial as unknown as Record<string, unknown>, next as unknown as Record<string, unknown>) as SettingsPatch;
    if (Object.keys(patch).length === 0) {
      notifications.show({ message: 'Nothing changed.' });
      return;
    }
    try {
      const p = await save.mutateAsync(patch);
      const fresh = toForm(p.settings);
      setInitial(fresh);
      form.reset(fresh);
      notifications.show({ color: 'teal', message: 'Settings saved.' });
    } catch (err) {
      setFailure(errorMessage(err));
    }
  });

  return (
    <form onSubmit={submit} noValidate aria-label="Process settings">
      <Fieldset disabled={!editable} variant="unstyled">
        <Stack>
          {!editable && (
            <Alert color="gray" title="Read-only">
              Your role can see these settings; developers and administrators change them.
            </Alert>
          )}
          <Section title="Description">
            <Controller
              control={control}
              name="description"
              render={({ field }) => (
                <Textarea
                  label="Description"
                  description="What the process does, for the people and developers who work with it"
                  autosize
                  minRows={3}
                  maxLength={20000}
                  {...field}
                />
              )}
            />
          </Section>
          <SimpleGrid cols={{ base: 1, md: 2 }}>
            <Section title="Tasks and approval">
              <SwitchSetting
                control={control}
                name="tasksEnabled"
                label="Tasks"
                help="Off makes a trigger process: Mates run it, but it has no queues"
              />
              <Controller
                control={control}
                name="requireApproval"
                render={({ field }) => (
                  <Radio.Group
                    label="New tasks need approval"
                    description="Tasks that need approval start in Needs approval until a person approves them."
                    value={field.value}
                    onChange={(v) => field.onChange(v)}
                  >
                    <Group gap="md" mt={4}>
                      <Radio value="none" label="None" />
                      <Radio value="mateCreated" label="Those Mates create" />
                      <Radio value="all" label="All" />
                    </Group>
                  </Radio.Group>
                )}
              />
            </Section>
            <Section title="Error handling">
              <SwitchSetting
                control={control}
                name="retryAllowed"
                label="Mates may retry"
                help="A Mate may send a task back to Ready with Retry"
              />
              {retryAllowed && (
                <NumberSetting
                  control={control}
                  name="maxRetries"
                  label="Retries per task"
                  help="Past this, a Retry becomes an Error."
                  max={1000}
                  error={serverErrors.maxRetries}
                />
              )}
              <SwitchSetting
                control={control}
                name="stopOnErrors"
                label="Stop on Errors"
                help="Mates cannot work the process while it has more unresolved Errors than the limit"
              />
              {stopOnErrors && (
                <NumberSetting
                  control={control}
                  name="errorLimit"
                  label="Error limit"
                  help="Unresolved Errors allowed before Mates are stopped."
                  max={1_000_000}
                  error={serverErrors.errorLimit}
                />
              )}
            </Section>
            <Section title="Locks and runs">
              <NumberSetting
                control={control}
                name="lockTimeoutSeconds"
                label="Lock timeout"
                help="A Mate's lock on a task lasts this long; an expired one is recovered."
                min={1}
                max={604800}
                seconds
                error={serverErrors.lockTimeoutSeconds}
              />
              <NumberSetting
                control={control}
                name="runTimeoutSeconds"
                label="Run timeout"
                help="An open run without Mate activity for this long is closed."
                min={1}
                max={2 ** 31 - 1}
                seconds
                error={serverErrors.runTimeoutSeconds}
              />
            </Section>
            <Section title="Deadlines and activation">
              <SwitchSetting
                control={control}
                name="deadlinesEnabled"
                label="Deadlines"
                help="Tasks get a deadline; Mates take the earliest first; past it a task is overdue"
              />
              {deadlines && (
                <NumberSetting
                  control={control}
                  name="defaultDeadlineSeconds"
                  label="Default deadline"
                  help="After creation; empty for none."
                  min={1}
                  max={2 ** 31 - 1}
                  nullable
                  seconds
                  error={serverErrors.defaultDeadlineSeconds}
                />
              )}
              <NumberSetting
                control={control}
                name="defaultActivationOffsetSeconds"
                label="Activation offset"
                help="A new task without an activation date becomes active this long after creation."
                max={2 ** 31 - 1}
                seconds
                error={serverErrors.defaultActivationOffsetSeconds}
              />
            </Section>
          </SimpleGrid>
          <Section title="Calendar">
            <Text size="sm" c="dimmed">
              On a blocked day (in the tenant&apos;s time zone) Mates are told not to run, as at a stopped process.
            </Text>
            <Controller
              control={control}
              name="calendar.blockedWeekdays"
              render={({ field }) => (
                <Checkbox.Group
                  label="Blocked weekdays"
                  value={field.value.map(String)}
                  onChange={(v) => field.onChange(v.map(Number).sort())}
                >
                  <Group gap="md" mt={4}>
                    {WEEKDAYS.map((d, i) => (
                      <Checkbox key={d} value={String(i)} label={d} />
                    ))}
                  </Group>
                </Checkbox.Group>
              )}
            />
            <Controller
              control={control}
              name="calendar.blockedDates"
              render={({ field }) => (
                <DatePickerInput
                  type="multiple"
                  label="Blocked dates"
                  description="Pick the days; pick a day again to unblock it. None: no blocked dates"
                  valueFormat="D MMM YYYY"
                  value={field.value}
                  onChange={(v) => field.onChange(normaliseDates(v.filter((x): x is string => typeof x === 'string')))}
                  clearable
                  clearButtonProps={{ 'aria-label': 'Clear the blocked dates' }}
                  error={serverErrors['calendar.blockedDates']}
                />
              )}
            />
          </Section>
          <Section title="KPI defaults">
            <Text size="sm" c="dimmed">
              What a Mate&apos;s hand-back logs when it gives no entries or time saved of its own.
            </Text>
            <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }}>
              <NumberSetting control={control} name="kpi.secondsSavedPerTask" label="Time saved per Solved task" seconds />
              <NumberSetting control={control} name="kpi.entriesPerTask" label="Entries per task" />
              <NumberSetting
                control={control}
                name="kpi.secondsSavedPerEntry"
                label="Time saved per entry"
                help="Empty: per task instead."
                nullable
                seconds
              />
              <NumberSetting control={control} name="kpi.secondsSavedManual" label="Time saved per Manual" seconds />
              <NumberSetting control={control} name="kpi.secondsSavedError" label="Time saved per Error" seconds />
              <NumberSetting control={control} name="kpi.secondsSavedRetry" label="Time saved per Retry" seconds />
            </SimpleGrid>
          </Section>
          {failure && (
            <Alert color="red" role="alert" title="The settings were not saved">
              {failure}
            </Alert>
          )}
          {editable && (
            <Group>
              <Button type="submit" loading={formState.isSubmitting}>
                Save settings
              </Button>
              <Button variant="default" disabled={!formState.isDirty} onClick={() => form.reset(initial)}>
                Undo changes
              </Button>
            </Group>
          )}
        </Stack>
      </Fieldset>
    </form>
  );
}
