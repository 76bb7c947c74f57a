/** The Administration section: its heading, the sections the role is offered, and the screen. */
import { Group, Stack, Title } from '@mantine/core';
import { Navigate, Outlet, useRouterState } from '@tanstack/react-router';
import { useSession } from '../../api/session';
import { adminSections } from '../../lib/admin-nav';
import { ButtonLink } from '../../components/links';
import { NotAllowed } from '../../components/admin/NotAllowed';

export function AdminLayout() {
  const { user } = useSession();
  const sections = adminSections(user.role);
  const pathname = useRouterState({ select: (s) => s.location.pathname });
  if (sections.length === 0) return <NotAllowed what="The Administration section" />;
  return (
    <Stack>
      <Title order={1} size="h2">
        Administration
      </Title>
      <nav aria-label="Administration">
        <Group gap="xs">
          {sections.map((s) => {
            const active = pathname === s.path || pathname.startsWith(`${s.path}/`);
            return (
              <ButtonLink
                key={s.path}
                to={s.path}
                size="compact-md"
                variant={active ? 'light' : 'subtle'}
                aria-current={active ? 'page' : undefined}
              >
                {s.label}
              </ButtonLink>
            );
          })}
        </Group>
      </nav>
      <Outlet />
    </Stack>
  );
}

/** /admin opens the first section the role is offered. */
export function AdminIndexPage() {
  const { user } = useSession();
  const first = adminSections(user.role)[0];
  return first ? <Navigate to={first.path} replace /> : null;
}
