/**
 * What the Administration screens add to the signed-in layout: the Administration link (only for a
 * role with a section), the notifications bell with its unread badge, and the account menu's items.
 */
import { forwardRef } from 'react';
import { ActionIcon, Indicator, Menu, VisuallyHidden, type ActionIconProps } from '@mantine/core';
import { createLink, useNavigate } from '@tanstack/react-router';
import { useSession } from '../../api/session';
import { useLiveQuery } from '../../api/live';
import { notificationsQuery } from '../../api/queries';
import { adminSections } from '../../lib/admin-nav';
import { AnchorLink } from '../links';

export function AdminNavLink() {
  const { user } = useSession();
  if (adminSections(user.role).length === 0) return null;
  return (
    <AnchorLink to="/admin" activeProps={{ 'aria-current': 'page', fw: 600 }} visibleFrom="sm">
      Administration
    </AnchorLink>
  );
}

const ActionIconA = forwardRef<HTMLAnchorElement, ActionIconProps & React.AnchorHTMLAttributes<HTMLAnchorElement>>((props, ref) => (
  <ActionIcon component="a" ref={ref} {...props} />
));
const ActionIconLink = createLink(ActionIconA);

function BellIcon() {
  return (
    <svg width="20" height="20" viewBox="0 0 24 24" fill="none" stroke="currentColor" strokeWidth="2" aria-hidden="true">
      <path d="M18 8a6 6 0 0 0-12 0c0 7-3 9-3 9h18s-3-2-3-9" />
      <path d="M13.73 21a2 2 0 0 1-3.46 0" />
    </svg>
  );
}

export function NotificationsBell() {
  // without the stream a 30 s poll is enough for a badge (the views poll every 2 s for counts)
  const unread = useLiveQuery(notificationsQuery({ unread: true }), 30_000).data?.unread ?? 0;
  return (
    <Indicator
      label={unread > 99 ? '99+' : unread}
      size={16}
      color="red"
      disabled={unread === 0}
      offset={4}
      data-testid="notifications-badge"
    >
      <ActionIconLink to="/notifications" variant="subtle" color="gray" size="lg">
        <BellIcon />
        <VisuallyHidden>{unread ? `Notifications: ${unread} unread` : 'Notifications'}</VisuallyHidden>
      </ActionIconLink>
    </Indicator>
  );
}

export function AccountMenuItems() {
  const { user } = useSession();
  const navigate = useNavigate();
  return (
    <>
      <Menu.Item onClick={() => void navigate({ to: '/account' })}>Your account and tokens</Menu.Item>
      <Menu.Item onClick={() => void navigate({ to: '/notifications' })}>Notifications</Menu.Item>
      {adminSections(user.role).length > 0 && <Menu.Item onClick={() => void navigate({ to: '/admin' })}>Administration</Menu.Item>}
    </>
  );
}
