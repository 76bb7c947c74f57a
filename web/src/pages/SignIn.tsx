/** Sign in with the tenant's Client Id, a username and a password; then back to where the person was. */
import { useState } from 'react';
import { Alert, Button, Center, Paper, PasswordInput, Stack, Text, TextInput, Title } from '@mantine/core';
import { useForm } from 'react-hook-form';
import { useQueryClient } from '@tanstack/react-query';
import { getRouteApi, useNavigate, useRouter } from '@tanstack/react-router';
import { sessionQuery } from '../api/queries';
import { signIn } from '../api/session';
import { ApiError, errorMessage } from '../lib/http';
import { safeRedirect } from '../lib/url';

interface Form {
  clientId: string;
  username: string;
  password: string;
}

const CLIENT_ID_KEY = 'qm-client-id';
const route = getRouteApi('/sign-in');

export function SignInPage() {
  const { redirect } = route.useSearch();
  const qc = useQueryClient();
  const router = useRouter();
  const navigate = useNavigate();
  const [failure, setFailure] = useState<string | null>(null);
  const form = useForm<Form>({ defaultValues: { clientId: localStorage.getItem(CLIENT_ID_KEY) ?? '', username: '', password: '' } });
  const { errors, isSubmitting } = form.formState;

  const onSubmit = form.handleSubmit(async (values) => {
    setFailure(null);
    try {
      const session = await signIn({ clientId: values.clientId.trim(), username: values.username.trim(), password: values.password });
      localStorage.setItem(CLIENT_ID_KEY, values.clientId.trim());
      qc.setQueryData(sessionQuery().queryKey, session);
      const target = safeRedirect(redirect);
      if (target === '/') await navigate({ to: '/' });
      else router.history.push(target);
    } catch (err) {
      form.setValue('password', '');
      if (err instanceof ApiError && err.code === 'invalid_credentials') setFailure('The Client Id, username or password is not right.');
      else setFailure(errorMessage(err));
    }
  });

  return (
    <Center mih="100vh" p="md">
      <Paper withBorder shadow="sm" p="xl" w="100%" maw={420} component="main">
        <form onSubmit={onSubmit} noValidate>
          <Stack>
            <div>
              <Title order={1} size="h2">
                Sign in to Queuemate
              </Title>
              {redirect && (
                <Text size="sm" c="dimmed" mt={4}>
                  Your session has ended. Sign in to continue where you were.
                </Text>
              )}
            </div>
            {failure && (
              <Alert color="red" role="alert" title="Not signed in">
                {failure}
              </Alert>
            )}
            <TextInput
              label="Client Id"
              description="Your organisation's Client Id"
              autoComplete="organization"
              error={errors.clientId?.message}
              {...form.register('clientId', { required: 'Enter the Client Id' })}
            />
            <TextInput
              label="Username"
              autoComplete="username"
              error={errors.username?.message}
              {...form.register('username', { required: 'Enter your username' })}
            />
            <PasswordInput
              label="Password"
              autoComplete="current-password"
              error={errors.password?.message}
              {...form.register('password', { required: 'Enter your password' })}
            />
            <Button type="submit" loading={isSubmitting} fullWidth>
              Sign in
            </Button>
          </Stack>
        </form>
      </Paper>
    </Center>
  );
}
