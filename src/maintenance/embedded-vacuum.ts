/**
 * Keeps the embedded store (PGlite) fast as tasks churn. PGlite has no autovacuum and keeps no
 * table statistics of its own between statements, so dead row versions pile up and the planner's
 * estimates go stale: the take and hand-back slowed by a quarter over 8,000 life cycles (bench).
 * This job counts the task rows changed in this server process (the change notifier) and, once
 * enough changed since the last pass, runs `VACUUM (ANALYZE)` on the hot tables, one table per
 * statement so requests are served between them (the embedded store runs one statement at a
 * time). Triggered by the changes themselves, not by a timer: an idle store is left alone.
 */
import { sql, type Kysely } from 'kysely';
import type { MaintenanceLog } from './scheduler.js';
import type { Database } from '../db/types.js';
import type { ChangeNotifier } from '../lib/notifier.js';

/**
 * The tables every task change writes to (the funnel's derived writes included). The queue counters
 * churn most for their size: deltas are inserted by every change and deleted by every fold.
 */
export const HOT_TABLES = ['tasks', 'task_history', 'kpi_events', 'runs', 'task_comments', 'queue_count_deltas', 'queue_counts'] as const;

/** A pass runs once this many task rows changed, plus this share of the tasks table's rows. */
export const VACUUM_MIN_CHANGES = 2000;
export const VACUUM_SCALE = 0.1;

export class EmbeddedVacuum {
  private changed = 0;
  private tableRows = 0;
  private running: Promise<void> | null = null;
  private closed = false;
  private readonly unsubscribe: () => void;
  /** passes completed (tests and logs) */
  passes = 0;

  constructor(
    private readonly db: Kysely<Database>,
    notifier: ChangeNotifier,
    private readonly log: MaintenanceLog,
    private readonly minChanges = VACUUM_MIN_CHANGES,
  ) {
    this.unsubscribe = notifier.subscribe((c) => {
      if (c.kind !== 'tasks') return;
      this.changed += c.rows ?? c.processIds.length;
      if (!this.running && !this.closed && this.changed >= this.minChanges + VACUUM_SCALE * this.tableRows) {
        this.running = this.pass().finally(() => (this.running = null));
      }
    });
  }

  /** One pass over the hot tables (also what a start after an unclean stop may call). */
  async pass(): Promise<void> {
    this.changed = 0;
    const started = performance.now();
    try {
      for (const table of HOT_TABLES) {
        if (this.closed) return;
        // one statement per table: requests queued meanwhile run between them
        await sql`VACUUM (ANALYZE) ${sql.table(table)}`.execute(this.db);
      }
      const { rows } = await sql<{ n: number }>`SELECT greatest(reltuples, 0)::float8 AS n FROM pg_class WHERE relname = 'tasks'`.execute(
        this.db,
      );
      this.tableRows = rows[0]?.n ?? 0;
      this.passes++;
      this.log.debug({ ms: Math.round(performance.now() - started), tasks: this.tableRows }, 'embedded store vacuumed');
    } catch (err) {
      this.log.warn({ err }, 'embedded store vacuum failed; it runs again after the next changes');
    }
  }

  /**
   * After an unclean stop (the data directory's lock was taken over from a dead process): one pass
   * right away, in the background. The dead process's changes since its last pass were never
   * counted by this one, so the tables may carry thousands of dead row versions and stale
   * statistics; the data itself is already consistent (PGlite replayed its write-ahead log when it
   * opened), so serving need not wait. A pass over a large store takes seconds (0.9 s after 8,000
   * life cycles, bench), and runs one table per statement, so requests are served between tables.
   */
  afterUncleanStop(): void {
    if (this.running || this.closed) return;
    this.log.info({}, 'the embedded store was not closed cleanly last time: vacuuming its hot tables in the background');
    this.running = this.pass().finally(() => (this.running = null));
  }

  /** Resolves when no pass is running. */
  async settled(): Promise<void> {
    await this.running;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.unsubscribe();
    await this.running;
  }
}
