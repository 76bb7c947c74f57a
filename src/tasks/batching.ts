/**
 * The take and hand-back hot paths with concurrent callers coalesced (group commit): TakeNext /
 * TakeMany calls on one process share one SKIP LOCKED pick; Solved/Manual/Error/Retry calls of one
 * tenant share one optimistic autocommitted write. One statement of each kind is in flight per
 * key; everything that arrived meanwhile goes in the next one, sent the moment the previous one
 * returns (no timers: a lone request runs at once).
 */
import type { Units } from '../db/tx.js';
import type { Outcome } from '../lib/errors.js';
import { Coalescer } from '../lib/coalescer.js';
import type { ProcessDef } from '../processes/store.js';
import { handBackBatch, type HandBackItem, type HandedBack } from './hand-back.js';

export { handBackBatch, HAND_BACK_LOCK_TIMEOUT_MS } from './hand-back.js';
import { Takes, type CombinedAnswer, type ProcessWork, type TakeRequest, type TakeResult } from './take.js';
import { RecentTakes } from './recent-takes.js';
import type { ChangeNotifier } from '../lib/notifier.js';

export class TaskBatchers {
  /** takes and combined calls of one process share a batch: one take statement in flight per process */
  private readonly takes: Coalescer<{ proc: ProcessDef; work: ProcessWork }, TakeResult | CombinedAnswer>;
  private readonly handBacks: Coalescer<HandBackItem, Outcome<HandedBack>>;

  private readonly recent: RecentTakes;

  constructor(units: Units, notifier: ChangeNotifier) {
    const takes = new Takes(units);
    const recent = (this.recent = new RecentTakes(notifier));
    this.takes = new Coalescer((batch) =>
      takes.forWork(
        units,
        batch[0].proc,
        batch.map((b) => b.work),
        recent,
      ),
    );
    this.handBacks = new Coalescer((batch) => handBackBatch(units, batch, recent));
  }

  close(): void {
    this.recent.close();
  }

  take(proc: ProcessDef, req: TakeRequest): Promise<TakeResult> {
    return this.takes.submit(`${proc.tenantId}:${proc.id}`, { proc, work: { take: req } }) as Promise<TakeResult>;
  }

  handBack(item: HandBackItem): Promise<Outcome<HandedBack>> {
    return this.handBacks.submit(String(item.caller.tenantId), item);
  }

  /** The combined call: the hand-back, then the next task of `proc` (take.ts forWork). */
  handBackAndTake(proc: ProcessDef, item: HandBackItem): Promise<CombinedAnswer> {
    return this.takes.submit(`${proc.tenantId}:${proc.id}`, { proc, work: { handBack: item } }) as Promise<CombinedAnswer>;
  }
}
