/**
 * What the signed-in layout and the router need of the Administration screens, kept apart from
 * lib/admin.ts so that the first load carries only this: the sections a role is offered and the
 * audit log's URL filters.
 */
import { can, type Permission } from './roles';
import type { Role } from './api-types';

/** Administration sections and the permission each needs (the server still decides). */
export const ADMIN_SECTIONS = [
  { path: '/admin/users', label: 'Users and roles', permission: 'users.manage' },
  { path: '/admin/mates', label: 'Mates', permission: 'mates.manage' },
  { path: '/admin/tenant', label: 'Tenant and API key', permission: 'tenant.manage' },
  { path: '/admin/webhooks', label: 'Webhooks', permission: 'webhooks.read' },
  { path: '/admin/audit', label: 'Audit log', permission: 'users.manage' },
] as const satisfies readonly { path: string; label: string; permission: Permission }[];

export type AdminPath = (typeof ADMIN_SECTIONS)[number]['path'];

/** The sections a role is offered; none: the Administration link is not shown. */
export function adminSections(role: Role | undefined) {
  return ADMIN_SECTIONS.filter((s) => can(role, s.permission));
}

/** The audit log's filters as URL keys (`?action=user.update&target=user`). */
export interface AuditSearch {
  action?: string;
  target?: string;
}

export function parseAuditSearch(s: Record<string, unknown>): AuditSearch {
  const out: AuditSearch = {};
  if (typeof s.action === 'string' && /^[\w.]{1,100}$/.test(s.action)) out.action = s.action;
  if (typeof s.target === 'string' && /^\w{1,100}$/.test(s.target)) out.target = s.target;
  return out;
}
