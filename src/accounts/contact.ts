/** A Mate's last contact time (docs/product.md §7), shown to people beside the Mate. */
import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';

// Written at most every 10 s per Mate: Mates call many times a second, and the time is shown to
// people at that resolution.
const CONTACT_WRITE_INTERVAL_MS = 10_000;

export class MateContact {
  /** when this server process last wrote each Mate's contact time (tenant:mate → ms) */
  private readonly lastWritten = new Map<string, number>();

  constructor(private readonly db: Kysely<Database>) {}

  async touch(tenantId: number, mateId: number, now: Date): Promise<void> {
    const key = `${tenantId}:${mateId}`;
    const last = this.lastWritten.get(key);
    const t = now.getTime();
    if (last !== undefined && t - last < CONTACT_WRITE_INTERVAL_MS && t >= last) return;
    this.lastWritten.set(key, t);
    await this.db.updateTable('mates').set({ last_contact_at: now }).where('tenant_id', '=', tenantId).where('id', '=', mateId).execute();
  }
}
