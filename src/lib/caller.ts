/** Who makes a change, for whom and when: every domain operation takes a Caller. */
import type { NumberFormat } from './values.js';

export type ActorType = 'mate' | 'user' | 'system';

/** The author of a change as history, comments and events record it. */
export interface Actor {
  type: ActorType;
  /** the Mate's or user's id; null for the system */
  id: number | null;
  /** display name at the time of the change (history keeps it even if the account is renamed) */
  name: string;
}

export const SYSTEM_ACTOR: Actor = { type: 'system', id: null, name: 'system' };

export interface Caller {
  tenantId: number;
  /** the tenant's IANA time zone: dates without an offset are read in it (docs/product.md §4) */
  timeZone: string;
  /** how the tenant's numbers in strings are read (src/lib/values.ts); absent: `point` */
  numberFormat?: NumberFormat;
  actor: Actor;
  /** the request that caused the change, kept in history; null for background jobs */
  requestId: string | null;
  now: Date;
}

/** The Mate behind a caller, or null when a person or the system acts. */
export function callerMateId(caller: Caller): number | null {
  return caller.actor.type === 'mate' ? caller.actor.id : null;
}

/** The user behind a caller, or null when a Mate or the system acts. */
export function callerUserId(caller: Caller): number | null {
  return caller.actor.type === 'user' ? caller.actor.id : null;
}

export function systemCaller(tenantId: number, now: Date, timeZone = 'UTC'): Caller {
  return { tenantId, timeZone, actor: SYSTEM_ACTOR, requestId: null, now };
}
