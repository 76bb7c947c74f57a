/** The tenant: name, time zone and number format, and the API key (Client Id, rotate the API secret) (admins). */
import { useMemo, useState } from 'react';
import { Button, Card, Code, CopyButton, Group, Modal, Select, Stack, Text, TextInput, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { Controller, useForm } from 'react-hook-form';
import { sessionQuery, tenantQuery } from '../../api/queries';
import { api } from '../../lib/http';
import type { RotatedSecret, Tenant } from '../../lib/api-types';
import { graceWords, placeFieldErrors, timeZones } from '../../lib/admin';
import { zoneLabel } from '../../lib/time';
import { Allowed } from '../../components/admin/NotAllowed';
import { Confirm, Problem } from '../../components/admin/Confirm';
import { ShownOnce } from '../../components/admin/ShownOnce';
import { ErrorAlert } from '../../components/ErrorAlert';

type NumberFormat = Tenant['numberFormat'];

const NUMBER_FORMATS: { value: NumberFormat; label: string }[] = [
  { value: 'point', label: 'Decimal point: "1234.56"' },
  { value: 'comma', label: 'Decimal comma: "1234,56" or "1.234,56" (Danish robots)' },
];

function SettingsForm({ tenant }: { tenant: Tenant }) {
  const qc = useQueryClient();
  const zones = useMemo(() => timeZones(tenant.timeZone).map((z) => ({ value: z, label: z.replace(/_/g, ' ') })), [tenant.timeZone]);
  const [failure, setFailure] = useState<string | null>(null);
  const form = useForm<{ name: string; timeZone: string; numberFormat: NumberFormat }>({
    values: { name: tenant.name, timeZone: tenant.timeZone, numberFormat: tenant.numberFormat },
  });
  const { errors, isSubmitting, isDirty } = form.formState;
  const submit = form.handleSubmit(async (v) => {
    setFailure(null);
    try {
      const t = await api<Tenant>('/v1/tenant', {
        method: 'PATCH',
        body: { name: v.name.trim(), timeZone: v.timeZone, numberFormat: v.numberFormat },
      });
      qc.setQueryData(tenantQuery().queryKey, t);
      // every date on every screen follows the tenant's zone (it comes with the session)
      qc.setQueryData(sessionQuery().queryKey, (s) => (s ? { ...s, tenant: { ...s.tenant, name: t.name, timeZone: t.timeZone } } : s));
      notifications.show({ message: `Saved. Dates now show in ${t.timeZone}.` });
    } catch (err) {
      const placed = placeFieldErrors(err, { timeZone: /time ?zone/i, numberFormat: /number ?format/i, name: /name/i });
      for (const [f, m] of Object.entries(placed.byField))
        form.setError(f as 'name' | 'timeZone' | 'numberFormat', { message: m as string });
      setFailure(placed.message);
    }
  });
  return (
    <Card withBorder component="section" aria-labelledby="tenant-settings">
      <form onSubmit={submit} noValidate>
        <Stack>
          <Title order={2} size="h3" id="tenant-settings">
            Tenant settings
          </Title>
          <Problem message={failure} onClose={() => setFailure(null)} />
          <TextInput
            label="Name"
            required
            error={errors.name?.message}
            {...form.register('name', {
              validate: (v) => (v.trim() === '' ? 'Enter a name' : v.length > 200 ? 'At most 200 characters' : true),
            })}
          />
          <Controller
            control={form.control}
            name="timeZone"
            rules={{ required: 'Choose a time zone' }}
            render={({ field }) => (
              <Select
                label="Time zone"
                description={`Dates, deadlines and blocked days are in this zone. Now: ${zoneLabel(field.value)}`}
                searchable
                required
                data={zones}
                value={field.value}
                onChange={(v) => field.onChange(v ?? '')}
                allowDeselect={false}
                nothingFoundMessage="No such time zone"
                limit={50}
                error={errors.timeZone?.message}
              />
            )}
          />
          <Controller
            control={form.control}
            name="numberFormat"
            render={({ field }) => (
              <Select
                label="Numbers sent as text"
                description='How a number field reads a value a robot sends as text. With a decimal comma "1.234" is refused as ambiguous; JSON numbers are read alike either way.'
                data={NUMBER_FORMATS}
                value={field.value}
                onChange={(v) => field.onChange((v ?? 'point') as NumberFormat)}
                allowDeselect={false}
                error={errors.numberFormat?.message}
              />
            )}
          />
          <Group justify="flex-end">
            <Button type="submit" loading={isSubmitting} disabled={!isDirty}>
              Save settings
            </Button>
          </Group>
        </Stack>
      </form>
    </Card>
  );
}

const GRACES = [
  { value: '0', label: 'Stop at once (a leaked secret)' },
  { value: '3600', label: '1 hour' },
  { value: '86400', label: '24 hours (recommended)' },
  { value: '604800', label: '7 days' },
];

function ApiKey({ tenant }: { tenant: Tenant }) {
  const [grace, setGrace] = useState('86400');
  const [asking, setAsking] = useState(false);
  const [rotated, setRotated] = useState<RotatedSecret | null>(null);
  return (
    <Card withBorder component="section" aria-labelledby="api-key">
      <Stack>
        <Title order={2} size="h3" id="api-key">
          API key
        </Title>
        <Text size="sm">Mates sign in with the Client Id and the API secret, then their own username and password.</Text>
        <Group gap="xs">
          <Text fw={600}>Client Id:</Text>
          <Code data-testid="client-id">{tenant.clientId}</Code>
          <CopyButton value={tenant.clientId}>
            {({ copied, copy }) => (
              <Button size="compact-xs" variant="light" onClick={copy}>
                {copied ? 'Copied' : 'Copy Client Id'}
              </Button>
            )}
          </CopyButton>
        </Group>
        <Text size="sm" c="dimmed">
          The API secret is never shown again after it is made. Rotate it to get a new one; the old one keeps working for the grace period
          you choose, so the robots can be given the new one without stopping.
        </Text>
        <Group align="flex-end">
          <Select
            label="Old secret keeps working for"
            data={GRACES}
            value={grace}
            onChange={(v) => setGrace(v ?? '86400')}
            allowDeselect={false}
            w={300}
          />
          <Button color="red" variant="light" onClick={() => setAsking(true)}>
            Rotate API secret
          </Button>
        </Group>
      </Stack>
      <Confirm
        opened={asking}
        title="Rotate the API secret?"
        confirmLabel="Rotate"
        color="red"
        onClose={() => setAsking(false)}
        onConfirm={async () => {
          const r = await api<RotatedSecret>('/v1/tenant/api-secret', { method: 'POST', body: { graceSeconds: Number(grace) } });
          setAsking(false);
          setRotated(r);
        }}
      >
        <Text>
          A new API secret is made and shown once.{' '}
          {grace === '0'
            ? 'The old one stops working at once, and every Mate must get the new one before it can sign in again.'
            : `The old one keeps working for ${GRACES.find((g) => g.value === grace)?.label.replace(/ \(.*\)/, '')}.`}
        </Text>
      </Confirm>
      <Modal opened={rotated !== null} onClose={() => setRotated(null)} title="New API secret" centered size="lg">
        {rotated && (
          <Stack>
            <ShownOnce label="API secret" value={rotated.apiSecret}>
              <Text size="sm" data-testid="grace">
                {graceWords(rotated.previousValidUntil, tenant.timeZone)}
              </Text>
            </ShownOnce>
            <Group justify="flex-end">
              <Button onClick={() => setRotated(null)}>Done</Button>
            </Group>
          </Stack>
        )}
      </Modal>
    </Card>
  );
}

function TenantScreen() {
  const tenant = useQuery(tenantQuery());
  if (tenant.isPending) return <Text>Loading the tenant…</Text>;
  if (tenant.isError) return <ErrorAlert error={tenant.error} title="Could not load the tenant" retry={() => tenant.refetch()} />;
  return (
    <Stack maw={760}>
      <SettingsForm tenant={tenant.data} />
      <ApiKey tenant={tenant.data} />
    </Stack>
  );
}

export function TenantPage() {
  return (
    <Allowed permission="tenant.manage" what="The tenant's settings and API key">
      <TenantScreen />
    </Allowed>
  );
}
