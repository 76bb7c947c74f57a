/** One typed input for a process field, driven by react-hook-form. */
import { Checkbox, Select, TextInput } from '@mantine/core';
import { DateInput, DateTimePicker } from '@mantine/dates';
import { Controller, type Control, type FieldValues, type Path } from 'react-hook-form';
import type { Field } from '../lib/api-types';
import { fieldLabel, validateValue } from '../lib/values';

export function FieldInput<T extends FieldValues>({
  field,
  control,
  disabled,
  error,
}: {
  field: Field;
  control: Control<T>;
  disabled?: boolean;
  error?: string;
}) {
  const label = fieldLabel(field);
  const description = field.required ? undefined : 'Optional';
  return (
    <Controller
      name={field.name as Path<T>}
      control={control}
      rules={{ validate: (v) => validateValue(v, field) ?? true }}
      render={({ field: f, fieldState }) => {
        const err = error ?? fieldState.error?.message;
        const common = { label, description, disabled, error: err, withAsterisk: !!field.required };
        switch (field.type) {
          case 'boolean':
            return (
              <Checkbox
                label={label}
                checked={f.value === true}
                onChange={(e) => f.onChange(e.currentTarget.checked)}
                disabled={disabled}
                error={err}
                mt="xs"
              />
            );
          case 'dropdown':
            return (
              <Select
                {...common}
                data={field.options ?? []}
                value={(f.value as string) || null}
                onChange={(v) => f.onChange(v ?? '')}
                clearable={!field.required}
              />
            );
          case 'date':
            return (
              <DateInput
                {...common}
                valueFormat="D MMM YYYY"
                value={(f.value as string) || null}
                onChange={(v) => f.onChange(v ?? '')}
                clearable
              />
            );
          case 'datetime':
            return (
              <DateTimePicker
                {...common}
                valueFormat="D MMM YYYY HH:mm"
                value={(f.value as string) || null}
                onChange={(v) => f.onChange(v ?? '')}
                clearable
              />
            );
          default:
            return (
              <TextInput
                {...common}
                type={field.type === 'email' ? 'email' : 'text'}
                inputMode={field.type === 'number' ? 'decimal' : field.type === 'integer' ? 'numeric' : undefined}
                value={(f.value as string) ?? ''}
                onChange={(e) => f.onChange(e.currentTarget.value)}
                onBlur={f.onBlur}
                name={f.name}
              />
            );
        }
      }}
    />
  );
}
