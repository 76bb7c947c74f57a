/**
 * The fields editor's effect on tasks (docs/product.md §3), in the transaction of the field change:
 *
 * - A renamed field's values follow it: one set-based statement renames the key in every task of
 *   the process (Solved and deleted tasks too, so that their values stay under a field that
 *   exists), with one history row "Field renamed" per task by the acting person. A key rename
 *   changes no queue, flag, count or KPI, so it needs none of the funnel's derived writes; a
 *   statement instead of a change per task keeps a rename over 1M tasks one UPDATE, not 1M rows
 *   read into memory.
 * - NeedsData tasks that the new fields make complete (a required field made optional or removed)
 *   move to Ready through the funnel (applyChanges), as an edit that fills them would, with a
 *   history row "Fields changed" by the acting person. Tasks a Mate or person holds stay where
 *   they are until they are next edited.
 */
import type { Tx } from '../db/tx.js';
import type { Caller } from '../lib/caller.js';
import { replaceFields, type FieldEdit } from '../processes/editing.js';
import type { FieldView } from '../processes/summary.js';
import { applyChanges } from './funnel.js';
import { fieldsCompleted } from './changes.js';
import { completeNeedsDataIds, renameDataKey, selectTasksForUpdate } from './store.js';

/** NeedsData tasks are read and moved this many a statement. */
const BATCH = 500;

export interface FieldsEdited {
  fields: FieldView[];
  /** each rename with the number of tasks whose values followed */
  renamed: { from: string; to: string; tasks: number }[];
  /** NeedsData tasks now complete, moved to Ready */
  movedToReady: number;
}

export async function editFields(tx: Tx, caller: Caller, processId: number, input: FieldEdit[]): Promise<FieldsEdited> {
  const fields = await replaceFields(tx, caller.tenantId, processId, input, caller.timeZone);
  const renamed: FieldsEdited['renamed'] = [];
  for (const f of input) {
    if (f.renamedFrom === undefined || f.renamedFrom === f.name) continue;
    renamed.push({ from: f.renamedFrom, to: f.name, tasks: await renameDataKey(tx.db, caller, processId, f.renamedFrom, f.name) });
  }
  const required = fields.filter((f) => f.required).map((f) => f.name);
  const ids = await completeNeedsDataIds(tx.db, caller.tenantId, processId, required, caller.now);
  for (let i = 0; i < ids.length; i += BATCH) {
    const rows = await selectTasksForUpdate(tx.db, caller.tenantId, ids.slice(i, i + BATCH));
    await applyChanges(
      tx,
      [...rows.values()].map((row) => fieldsCompleted(row, caller)),
    );
  }
  return { fields, renamed, movedToReady: ids.length };
}
