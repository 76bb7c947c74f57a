/**
 * The tasks this server process handed out, as the take wrote them (row and version), so that
 * their hand-back need not read them again: the hand-back's optimistic write checks the version
 * (funnel.ts), and a row that changed since (lock extended, recovered, moved, taken through
 * another server process) is read again. Process settings are those of the take; any process
 * change this server process hears of forgets everything.
 */
import type { ChangeNotifier } from '../lib/notifier.js';
import type { ProcessDef } from '../processes/store.js';
import type { ReadTaskRow, TaskRow } from './store.js';

/** Bounds the memory: about 1 KB per entry. */
const MAX_ENTRIES = 10_000;

export class RecentTakes {
  private readonly rows = new Map<number, ReadTaskRow>();
  private readonly unsubscribe: () => void;

  constructor(notifier: ChangeNotifier) {
    this.unsubscribe = notifier.subscribe((c) => {
      if (c.kind === 'process') this.rows.clear();
    });
  }

  remember(proc: ProcessDef, taken: (TaskRow & { version: string })[]): void {
    for (const row of taken) {
      if (this.rows.size >= MAX_ENTRIES) this.rows.delete(this.rows.keys().next().value!);
      this.rows.set(row.id, {
        ...row,
        process_key: proc.processKey,
        retry_allowed: proc.retryAllowed,
        max_retries: proc.maxRetries,
        kpi: proc.kpi,
        lock_timeout_seconds: proc.lockTimeoutSeconds,
      });
    }
  }

  /** The remembered rows of these tasks, forgotten here (a hand-back uses a row once). */
  take(ids: Iterable<number>): Map<number, ReadTaskRow> {
    const out = new Map<number, ReadTaskRow>();
    for (const id of ids) {
      const row = this.rows.get(id);
      if (row) {
        out.set(id, row);
        this.rows.delete(id);
      }
    }
    return out;
  }

  close(): void {
    this.unsubscribe();
    this.rows.clear();
  }
}
