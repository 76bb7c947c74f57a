/**
 * Keeps the embedded store (PGlite) fast as tasks churn. PGlite has no autovacuum and keeps no
 * table statistics of its own between statements, so dead row versions pile up and the planner's
 * estimates go stale: the take and hand-back slowed by a quarter over 8,000 life cycles (bench).
 * This job counts the task rows changed in this server process (the change notifier) and, once
 * enough changed since the last pass, runs `VACUUM (ANALYZE)` on the hot tables, one table per
 * statement so requests are served between them (the embedded store runs one statement at a
 * time). Triggered by the changes themselves, not by a timer: an idle store is left alone.
 * Embedded store only (PostgreSQL has its autovacuum), and one process per data directory.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import type { ChangeNotifier } from '../lib/notifier.js';
import type { Job, LogLine, RunContext } from './runner.js';

/**
 * The tables every task change writes to (the funnel's derived writes included). The queue counters
 * churn most for their size: deltas are inserted by every change and deleted by every fold.
 */
export const HOT_TABLES = ['tasks', 'task_history', 'kpi_events', 'runs', 'task_comments', 'queue_count_deltas', 'queue_counts'] as const;

/** A pass runs once this many task rows changed, plus this share of the tasks table's rows. */
export const VACUUM_MIN_CHANGES = 2000;
export const VACUUM_SCALE = 0.1;

export interface EmbeddedVacuumOptions {
  /** task rows changed before a pass (plus VACUUM_SCALE of the table); default VACUUM_MIN_CHANGES */
  minChanges?: number;
  /** the data directory's lock was taken over from a dead process: one pass right at start */
  afterUncleanStop?: boolean;
}

/** What a pass reports: how long it took and the tasks table's estimated rows after it. */
export type VacuumPass = { ms: number; tasks: number } | null;

export class EmbeddedVacuum implements Job<VacuumPass> {
  readonly name = 'embedded-vacuum';
  readonly everyMs = null;
  /**
   * After an unclean stop: one pass right away, in the background. The dead process's changes
   * since its last pass were never counted by this one, so the tables may carry thousands of dead
   * row versions and stale statistics; the data itself is already consistent (PGlite replayed its
   * write-ahead log when it opened), so serving need not wait. A pass over a large store takes
   * seconds (0.9 s after 8,000 life cycles, bench), and runs one table per statement, so requests
   * are served between tables.
   */
  readonly atStart?: string;
  private changed = 0;
  private tableRows = 0;
  private readonly minChanges: number;
  /** passes completed (tests) */
  passes = 0;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly notifier: ChangeNotifier,
    opts: EmbeddedVacuumOptions = {},
  ) {
    this.minChanges = opts.minChanges ?? VACUUM_MIN_CHANGES;
    if (opts.afterUncleanStop)
      this.atStart = 'the embedded store was not closed cleanly last time: vacuuming its hot tables in the background';
  }

  triggers(soon: () => void): () => void {
    return this.notifier.subscribe((c) => {
      if (c.kind !== 'tasks') return;
      this.changed += c.rows ?? c.processIds.length;
      if (this.changed >= this.minChanges + VACUUM_SCALE * this.tableRows) soon();
    });
  }

  /** One pass over the hot tables; stops between tables at shutdown (null then). */
  async run(_now: Date, { signal }: RunContext): Promise<VacuumPass> {
    this.changed = 0;
    const started = performance.now();
    for (const table of HOT_TABLES) {
      if (signal.aborted) return null;
      // one statement per table: requests queued meanwhile run between them
      await sql`VACUUM (ANALYZE) ${sql.table(table)}`.execute(this.db);
    }
    const { rows } = await sql<{ n: number }>`SELECT greatest(reltuples, 0)::float8 AS n FROM pg_class WHERE relname = 'tasks'`.execute(
      this.db,
    );
    this.tableRows = rows[0]?.n ?? 0;
    this.passes++;
    return { ms: Math.round(performance.now() - started), tasks: this.tableRows };
  }

  report(pass: VacuumPass): LogLine | null {
    return pass ? { msg: 'embedded store vacuumed', level: 'debug' } : null;
  }
}
