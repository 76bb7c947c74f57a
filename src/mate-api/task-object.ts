/** The task object and the dummy task of mate-api §6.1 and §6.2. */
import type { ProcessDef } from '../processes/store.js';
import type { TaskRow } from '../tasks/store.js';
import { formatTaskValues } from '../processes/task-data.js';
import { formatDateTime } from '../lib/time.js';

export function taskObject(row: TaskRow, proc: ProcessDef, timeZone: string): Record<string, unknown> {
  const out: Record<string, unknown> = { taskId: row.id, reason: row.reason, runId: row.run_id, processKey: proc.processKey };
  const values = formatTaskValues(proc.fields, row.data, timeZone);
  for (const [k, v] of Object.entries(values)) {
    // field names may be __proto__-like on processes without fields: define, never assign
    Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  }
  out.activationDate = formatDateTime(row.activation_date, timeZone);
  out.deadline = proc.deadlinesEnabled && row.deadline ? formatDateTime(row.deadline, timeZone) : null;
  out.urgent = row.urgent;
  out.retryCount = row.retry_count;
  return out;
}

export function dummyTask(processKey: string, code: string, message: string, requestId: string): Record<string, unknown> {
  return { taskId: -1, reason: null, runId: -1, processKey, message, code, requestId };
}
