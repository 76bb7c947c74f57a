/** What a person sees at an address their role may not open: words, not an error or a blank page. */
import { Center, Stack, Text, Title } from '@mantine/core';
import type { ReactNode } from 'react';
import { useSession } from '../../api/session';
import { can, type Permission } from '../../lib/roles';
import { AnchorLink } from '../links';

export function NotAllowed({ what }: { what: string }) {
  const { user } = useSession();
  return (
    <Center mih="50vh">
      <Stack align="center" gap="xs" maw={480} data-testid="not-allowed">
        <Title order={1} size="h2">
          Not allowed
        </Title>
        <Text ta="center">
          {what} is for other roles: you are signed in as {user.role === 'agent' ? 'an' : 'a'} {user.role}. Ask an administrator if you need
          it.
        </Text>
        <AnchorLink to="/">Go to the overview</AnchorLink>
      </Stack>
    </Center>
  );
}

/** Its children when the signed-in role holds the permission, else the "not allowed" screen. */
export function Allowed({ permission, what, children }: { permission: Permission; what: string; children: ReactNode }) {
  const { user } = useSession();
  return can(user.role, permission) ? children : <NotAllowed what={what} />;
}
