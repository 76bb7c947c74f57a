/**
 * @queuemate/client: the Mate API client for robots (MateClient, runWorker, createTasksInChunks),
 * the people's API client for scripts (PeopleClient), and the people's API types and permission
 * table generated from the server (client/generate.ts, `npm run client`).
 */
export type { paths, components } from './schema.js';
export { PERMISSIONS, type Permission } from './permissions.js';
export { QueuemateError, ManualError, RetryError, type Problem, type HandBackDetails } from './errors.js';
export {
  MateClient,
  ProcessClient,
  type MateClientOptions,
  type MateCallOptions,
  type CreateOptions,
  type HandBackOptions,
  type ProcessHandBackOptions,
} from './mate.js';
export type { Clock } from './tokens.js';
export type { RetryPolicy, CallOptions } from './http.js';
export { runWorker, type Handler, type HandlerContext, type WorkerOptions, type WorkerStats } from './worker.js';
export { createTasksInChunks, type ChunkOptions, type ChunkResult } from './allocate.js';
export { PeopleClient, type PeopleClientOptions, type PathsWith, type PeopleRequest, type ResponseOf } from './people.js';
export {
  isTask,
  type Fields,
  type FieldInput,
  type TaskInput,
  type UpdateInput,
  type TaskMeta,
  type Task,
  type DummyTask,
  type DummyCode,
  type Reply,
  type OkToRunReply,
  type RunReply,
  type Queue,
  type CreateTaskReply,
  type CreateTasksReply,
  type HandBackReply,
  type ExtendLockReply,
  type ReturnResult,
  type ReturnReply,
  type Rules,
  type TaskAction,
  type RetryAction,
  type ReturnItem,
} from './types.js';
