/**
 * What a role is offered in the app: the server's permission table (src/people-api/permissions.ts,
 * generated into client/src/permissions.ts by `npm run client`). The server still decides; this only
 * leaves out what it would refuse.
 */
import { PERMISSIONS, type Permission } from '@queuemate/client';
import type { Role } from './api-types';

export type { Permission };

export function can(role: Role | undefined, permission: Permission): boolean {
  const holders = PERMISSIONS[permission] as 'public' | readonly string[];
  return holders === 'public' || (!!role && holders.includes(role));
}
