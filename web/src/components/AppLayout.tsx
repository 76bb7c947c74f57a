/** The signed-in frame: header with navigation, tenant, person menu and theme; sends a signed-out person to sign-in and back. */
import { useEffect } from 'react';
import {
  AppShell,
  Avatar,
  Badge,
  Center,
  Group,
  Loader,
  Menu,
  Text,
  UnstyledButton,
  VisuallyHidden,
  useMantineColorScheme,
  Alert,
  Button,
} from '@mantine/core';
import { Outlet, useNavigate, useRouterState } from '@tanstack/react-router';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { sessionQuery } from '../api/queries';
import { SessionContext, useSignOut } from '../api/session';
import { LiveProvider, useLive } from '../api/live';
import { onSessionEnded, errorMessage } from '../lib/http';
import { AnchorLink } from './links';
import { AccountMenuItems, AdminNavLink, NotificationsBell } from './admin/LayoutLinks';

function LiveBadge() {
  const { live } = useLive();
  return (
    <Badge
      variant="dot"
      color={live ? 'teal' : 'gray'}
      title={live ? 'Updates arrive as they happen' : 'Refreshing every 2 seconds'}
      visibleFrom="sm"
    >
      {live ? 'Live' : 'Auto-refresh'}
    </Badge>
  );
}

/** Once, on mount: to sign-in, remembering where the person was (Navigate would repeat while the location changes). */
function ToSignIn({ from }: { from: string }) {
  const navigate = useNavigate();
  useEffect(() => {
    void navigate({ to: '/sign-in', search: from === '/' ? {} : { redirect: from }, replace: true });
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);
  return (
    <Center h="100vh">
      <Loader aria-label="Going to sign-in" />
    </Center>
  );
}

export function AppLayout() {
  const session = useQuery(sessionQuery());
  const qc = useQueryClient();
  const signOut = useSignOut();
  const { colorScheme, setColorScheme } = useMantineColorScheme();
  const href = useRouterState({ select: (s) => s.location.href });

  useEffect(() => {
    // any request answering 401: the session has ended; back to sign-in, then here again
    onSessionEnded(() => qc.setQueryData(sessionQuery().queryKey, null));
    return () => onSessionEnded(null);
  }, [qc]);

  if (session.isPending)
    return (
      <Center h="100vh">
        <Loader aria-label="Loading" />
      </Center>
    );
  if (session.isError)
    return (
      <Center h="100vh" p="md">
        <Alert color="red" title="Queuemate cannot be reached">
          <Text mb="sm">{errorMessage(session.error)}</Text>
          <Button onClick={() => session.refetch()}>Try again</Button>
        </Alert>
      </Center>
    );
  if (!session.data) return <ToSignIn from={href} />;
  const s = session.data;

  return (
    <SessionContext.Provider value={s}>
      <LiveProvider>
        <AppShell header={{ height: 56 }} padding="md">
          <AppShell.Header>
            <Group h="100%" px="md" justify="space-between" wrap="nowrap">
              <Group gap="lg" wrap="nowrap">
                {/* on a phone the Overview link leads home: the name would push the account menu off screen */}
                <AnchorLink to="/" fw={700} size="lg" underline="never" c="var(--mantine-color-text)" visibleFrom="sm">
                  Queuemate
                </AnchorLink>
                <nav aria-label="Main">
                  <Group gap="md" wrap="nowrap">
                    <AnchorLink to="/" activeProps={{ 'aria-current': 'page', fw: 600 }}>
                      Overview
                    </AnchorLink>
                    <AnchorLink to="/kpis" activeProps={{ 'aria-current': 'page', fw: 600 }}>
                      KPIs
                    </AnchorLink>
                    <AdminNavLink />
                  </Group>
                </nav>
              </Group>
              <Group gap="sm" wrap="nowrap">
                <LiveBadge />
                <NotificationsBell />
                <Menu position="bottom-end" withinPortal>
                  <Menu.Target>
                    <UnstyledButton>
                      <Group gap={8} wrap="nowrap">
                        <Avatar size="sm" radius="xl" color="blue" aria-hidden>
                          {(s.user.name || s.user.username).slice(0, 1).toUpperCase()}
                        </Avatar>
                        <VisuallyHidden>Account menu: {s.user.name || s.user.username}</VisuallyHidden>
                        {/* on a phone the avatar's initial stands for the name (room for the bell) */}
                        <Text size="sm" visibleFrom="xs" aria-hidden>
                          {s.user.name || s.user.username}
                        </Text>
                      </Group>
                    </UnstyledButton>
                  </Menu.Target>
                  <Menu.Dropdown>
                    <Menu.Label>
                      {s.tenant.name} · {s.user.role}
                    </Menu.Label>
                    <AccountMenuItems />
                    <Menu.Item onClick={() => setColorScheme(colorScheme === 'dark' ? 'light' : 'dark')}>
                      {colorScheme === 'dark' ? 'Light theme' : 'Dark theme'}
                    </Menu.Item>
                    <Menu.Divider />
                    <Menu.Item color="red" onClick={() => void signOut()}>
                      Sign out
                    </Menu.Item>
                  </Menu.Dropdown>
                </Menu>
              </Group>
            </Group>
          </AppShell.Header>
          <AppShell.Main>
            <Outlet />
          </AppShell.Main>
        </AppShell>
      </LiveProvider>
    </SessionContext.Provider>
  );
}
