/**
 * createTasksInChunks: an allocator robot's bulk create. The list goes in CreateTasks calls of
 * `chunkSize` items, one after another, each with an Idempotency-Key of its own (`<key>:<chunk>`),
 * so a call repeated after a lost answer, or the whole run repeated with the same `idempotencyKey`
 * within 24 hours, creates nothing twice. Each chunk is all or nothing; a refused chunk stops the
 * run with a QueuemateError whose problems' `index` points into the whole list.
 */
import { QueuemateError } from './errors.js';
import type { MateClient } from './mate.js';
import type { Fields, TaskInput } from './types.js';

export interface ChunkOptions {
  /** items per CreateTasks call (default 1,000; the server takes up to 10,000 and 1 MiB per body) */
  chunkSize?: number;
  /** the run's key; each chunk sends `<key>:<chunk number>`. Default: a new random key per run */
  idempotencyKey?: string;
  /** after each chunk: tasks created so far and in all */
  onProgress?: (progress: { created: number; total: number; chunk: number; chunks: number }) => void;
  signal?: AbortSignal;
  timeoutMs?: number;
}

export interface ChunkResult {
  /** the new tasks' ids, in the order of the items */
  taskIds: number[];
}

// 1,000 tasks of a few fields is about 100 kB: well inside the 1 MiB body limit, and one short transaction.
const DEFAULT_CHUNK = 1_000;

export async function createTasksInChunks<F extends Fields = Record<string, unknown>>(
  client: MateClient,
  processKey: string,
  items: TaskInput<F>[],
  options: ChunkOptions = {},
): Promise<ChunkResult> {
  const size = Math.max(1, Math.min(10_000, Math.floor(options.chunkSize ?? DEFAULT_CHUNK)));
  const key = options.idempotencyKey ?? globalThis.crypto.randomUUID();
  const chunks = Math.ceil(items.length / size);
  const taskIds: number[] = [];
  for (let c = 0; c < chunks; c++) {
    const offset = c * size;
    const r = await client.createTasks<F>(processKey, items.slice(offset, offset + size), {
      idempotencyKey: `${key}:${c + 1}`,
      signal: options.signal,
      timeoutMs: options.timeoutMs,
    });
    if (!r.succeeded) {
      throw new QueuemateError({
        status: 200,
        code: r.code ?? 'refused',
        message: `Chunk ${c + 1} of ${chunks} (items ${offset}–${Math.min(items.length, offset + size) - 1}) was refused, ${taskIds.length} tasks were created before it: ${r.message}`,
        requestId: r.requestId,
        errors: (r.errors ?? []).map((p) => (p.index === undefined ? p : { ...p, index: p.index + offset })),
        body: { ...r, createdTaskIds: taskIds },
      });
    }
    taskIds.push(...r.taskIds);
    options.onProgress?.({ created: taskIds.length, total: items.length, chunk: c + 1, chunks });
  }
  return { taskIds };
}
