/**
 * The take and hand-back hot paths with concurrent callers coalesced: TakeNext/TakeMany calls on
 * one process share one SKIP LOCKED pick; Solved/Manual/Error/Retry calls of one tenant share
 * one transaction, each caller answered after its commit.
 */
import type { Units } from '../db/tx.js';
import type { Outcome } from '../lib/errors.js';
import { Coalescer } from '../lib/coalescer.js';
import type { ProcessDef } from '../processes/store.js';
import { handBack, type HandBackItem, type HandedBack } from './hand-back.js';
import { Takes, type TakeRequest, type TakeResult } from './take.js';

export class TaskBatchers {
  private readonly takes: Coalescer<{ proc: ProcessDef; req: TakeRequest }, TakeResult>;
  private readonly handBacks: Coalescer<HandBackItem, Outcome<HandedBack>>;

  constructor(units: Units) {
    const takes = new Takes(units);
    this.takes = new Coalescer((batch) =>
      takes.forCallers(
        batch[0].proc,
        batch.map((b) => b.req),
      ),
    );
    this.handBacks = new Coalescer((batch) => units.transaction((tx) => handBack(tx, batch)));
  }

  take(proc: ProcessDef, req: TakeRequest): Promise<TakeResult> {
    return this.takes.submit(`${proc.tenantId}:${proc.id}`, { proc, req });
  }

  handBack(item: HandBackItem): Promise<Outcome<HandedBack>> {
    return this.handBacks.submit(String(item.caller.tenantId), item);
  }
}
