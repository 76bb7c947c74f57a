/**
 * What each role is offered in the app (the server decides; this only hides what would be refused):
 * viewers read; agents work tasks and stop/start processes; developers and admins also configure
 * processes; only admins delete tasks.
 */
import type { Role } from '../api/types';

export type Ability = 'workTasks' | 'switchGate' | 'createTasks' | 'configure' | 'deleteTasks';

const ABILITIES: Record<Role, readonly Ability[]> = {
  viewer: [],
  agent: ['workTasks', 'switchGate', 'createTasks'],
  developer: ['workTasks', 'switchGate', 'createTasks', 'configure'],
  admin: ['workTasks', 'switchGate', 'createTasks', 'configure', 'deleteTasks'],
};

export function can(role: Role | undefined, ability: Ability): boolean {
  return !!role && ABILITIES[role].includes(ability);
}
