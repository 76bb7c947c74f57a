/**
 * The audit log of administrative actions (settings, users, Mates, secrets, processes, fields,
 * rules): who, when, which request, what changed. Written in the transaction of the action, so an
 * action that rolls back leaves no entry. Never holds a secret or a password.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import type { Tx } from '../db/tx.js';
import type { Caller } from '../lib/caller.js';

export interface AuditEntry {
  action: string;
  targetType: string;
  targetId: string | number | null;
  /** before/after or the facts of the action; never secrets */
  details?: Record<string, unknown>;
}

export async function audit(tx: Tx, caller: Caller, entry: AuditEntry): Promise<void> {
  await tx.db
    .insertInto('audit_log')
    .values({
      tenant_id: caller.tenantId,
      at: caller.now,
      actor_type: caller.actor.type,
      actor_id: caller.actor.id,
      action: entry.action,
      target_type: entry.targetType,
      target_id: entry.targetId === null ? null : String(entry.targetId),
      details: entry.details === undefined ? null : JSON.stringify({ actorName: caller.actor.name, ...entry.details }),
      request_id: caller.requestId,
    })
    .execute();
}

export interface AuditRow {
  id: number;
  at: Date;
  actor: { type: string; id: number | null; name: string | null };
  action: string;
  targetType: string;
  targetId: string | null;
  details: Record<string, unknown> | null;
  requestId: string | null;
}

/** Newest first; `before` (an entry id) pages back. */
export async function listAudit(
  db: Kysely<Database>,
  tenantId: number,
  filter: { action?: string; targetType?: string; before?: number; limit: number },
): Promise<AuditRow[]> {
  let q = db.selectFrom('audit_log').selectAll().where('tenant_id', '=', tenantId);
  if (filter.action) q = q.where('action', '=', filter.action);
  if (filter.targetType) q = q.where('target_type', '=', filter.targetType);
  if (filter.before) q = q.where('id', '<', filter.before);
  const rows = await q.orderBy('id', 'desc').limit(filter.limit).execute();
  return rows.map((r) => {
    const details = (r.details ?? null) as Record<string, unknown> | null;
    const { actorName, ...rest } = details ?? {};
    return {
      id: r.id,
      at: r.at,
      actor: { type: r.actor_type, id: r.actor_id, name: typeof actorName === 'string' ? actorName : null },
      action: r.action,
      targetType: r.target_type,
      targetId: r.target_id,
      details: details ? rest : null,
      requestId: r.request_id,
    };
  });
}
