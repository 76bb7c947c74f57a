/**
 * THE one permission table of the people's API (docs/product.md §1 roles): each permission and the
 * roles that hold it. Every /v1 route declares one permission (route.ts); the plugin refuses to
 * register a route without one, and docs/people-api.md shows this table (a test keeps them equal).
 */
import { ROLES, type Role } from '../accounts/service.js';

export const PERMISSIONS = {
  /** sign in: anyone, no credentials */
  'session.create': 'public',
  /** one's own session, personal access tokens and password */
  self: ['admin', 'developer', 'agent', 'viewer'],
  'tenant.read': ['admin', 'developer', 'agent', 'viewer'],
  /** tenant name, time zone, API secret rotation */
  'tenant.manage': ['admin'],
  'users.manage': ['admin'],
  'mates.manage': ['admin', 'developer'],
  'processes.read': ['admin', 'developer', 'agent', 'viewer'],
  /** create, rename, archive, settings, fields, rule definitions */
  'processes.manage': ['admin', 'developer'],
  /** Stop/Start (the gate) */
  'processes.gate': ['admin', 'developer', 'agent'],
  /** the developer view: ProcessKey and ready-to-paste requests */
  'processes.develop': ['admin', 'developer'],
  /** edit rule values (not names or types) */
  'rules.values': ['admin', 'developer', 'agent'],
  'tasks.read': ['admin', 'developer', 'agent', 'viewer'],
  /** create, edit, comment, move, approve, reject, clear errors, unlock, reopen, bulk */
  'tasks.work': ['admin', 'agent'],
  /** soft delete */
  'tasks.delete': ['admin'],
} as const satisfies Record<string, 'public' | readonly Role[]>;

export type Permission = keyof typeof PERMISSIONS;

export function isPublic(p: Permission): boolean {
  return PERMISSIONS[p] === 'public';
}

export function allows(p: Permission, role: Role): boolean {
  const roles = PERMISSIONS[p];
  return roles !== 'public' && (roles as readonly Role[]).includes(role);
}

/** The roles holding a permission, for the OpenAPI description and the docs. */
export function rolesOf(p: Permission): string {
  const roles = PERMISSIONS[p];
  return roles === 'public' ? 'anyone (no credentials)' : ROLES.filter((r) => (roles as readonly Role[]).includes(r)).join(', ');
}
