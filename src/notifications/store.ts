/**
 * Notifications shown to people (docs/product.md §7): Failures reported by Mates and other
 * events per process, with a read/unread state shared by the tenant's people.
 */
import type { Kysely } from 'kysely';
import type { Database, NotificationKind } from '../db/types.js';
import { Refusal } from '../lib/errors.js';

export interface NotificationView {
  id: number;
  processId: number | null;
  kind: NotificationKind;
  message: string;
  mateId: number | null;
  createdAt: Date;
  readAt: Date | null;
}

export async function listNotifications(
  db: Kysely<Database>,
  tenantId: number,
  filter: { processId?: number; unread?: boolean; before?: number; limit: number },
): Promise<{ items: NotificationView[]; unread: number }> {
  let q = db.selectFrom('notifications').selectAll().where('tenant_id', '=', tenantId);
  if (filter.processId !== undefined) q = q.where('process_id', '=', filter.processId);
  if (filter.unread) q = q.where('read_at', 'is', null);
  if (filter.before !== undefined) q = q.where('id', '<', filter.before);
  const rows = await q.orderBy('id', 'desc').limit(filter.limit).execute();
  let u = db
    .selectFrom('notifications')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('tenant_id', '=', tenantId)
    .where('read_at', 'is', null);
  if (filter.processId !== undefined) u = u.where('process_id', '=', filter.processId);
  const unread = Number((await u.executeTakeFirstOrThrow()).n);
  return {
    items: rows.map((r) => ({
      id: r.id,
      processId: r.process_id,
      kind: r.kind,
      message: r.message,
      mateId: r.mate_id,
      createdAt: r.created_at,
      readAt: r.read_at,
    })),
    unread,
  };
}

/** Marks one notification read (or unread again). */
export async function markNotification(db: Kysely<Database>, tenantId: number, id: number, read: boolean, now: Date): Promise<void> {
  const r = await db
    .updateTable('notifications')
    .set({ read_at: read ? now : null })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .executeTakeFirst();
  if (Number(r.numUpdatedRows) === 0) throw new Refusal('not_found', `No notification ${id}`);
}

/** Marks every unread notification (of one process, or all) read; answers how many. */
export async function markAllRead(db: Kysely<Database>, tenantId: number, now: Date, processId?: number): Promise<number> {
  let q = db.updateTable('notifications').set({ read_at: now }).where('tenant_id', '=', tenantId).where('read_at', 'is', null);
  if (processId !== undefined) q = q.where('process_id', '=', processId);
  return Number((await q.executeTakeFirst()).numUpdatedRows);
}
