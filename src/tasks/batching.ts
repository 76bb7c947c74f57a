/**
 * The take and hand-back hot paths with concurrent callers coalesced: TakeNext/TakeMany calls on
 * one process share one SKIP LOCKED pick and one transaction; Solved/Manual/Error/Retry calls of
 * one tenant share one commit, each caller answered after it.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import type { ProcessDef } from '../processes/store.js';
import { Coalescer } from '../lib/coalescer.js';
import { takeForCallers, handBack, type HandBackItem, type HandBackResult, type TakeRequest, type TakeResult } from './service.js';

export interface TaskBatchers {
  take(proc: ProcessDef, req: TakeRequest): Promise<TakeResult>;
  handBack(item: HandBackItem): Promise<HandBackResult>;
}

export function createTaskBatchers(db: Kysely<Database>): TaskBatchers {
  const takes = new Coalescer<{ proc: ProcessDef; req: TakeRequest }, TakeResult>((batch) => takeForCallers(db, batch[0].proc, batch.map((b) => b.req)));
  const handBacks = new Coalescer<HandBackItem, HandBackResult>((batch) => handBack(db, batch));
  return {
    take: (proc, req) => takes.submit(`${proc.tenantId}:${proc.id}`, { proc, req }),
    handBack: (item) => handBacks.submit(String(item.call.tenantId), item),
  };
}
