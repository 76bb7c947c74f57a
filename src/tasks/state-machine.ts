/**
 * The task life cycle (docs/product.md §5) as one table: from, action, condition → to, effects.
 * The change constructors (changes.ts) pick the first row whose action matches and whose guard
 * holds, and build the change from its target; docs/state-machine.md is rendered from this table
 * (test/state-machine-doc.test.ts keeps the two equal, test/changes.test.ts drives every row
 * through its constructor).
 */
import type { QueueName } from '../db/types.js';
import type { KpiOutcomeName } from '../kpis/rules.js';

/** The queues (tasks.queue, whose CHECK constraint lists them: db/types.ts QueueName). */
export type Queue = QueueName;
export const QUEUES: readonly Queue[] = ['Ready', 'NeedsData', 'NeedsApproval', 'Manual', 'Solved'];

export type Action =
  | 'create'
  | 'take'
  | 'Solved'
  | 'Manual'
  | 'Error'
  | 'Retry'
  | 'lockExpired'
  | 'update'
  | 'extendLock'
  // people (docs/product.md §5.6): changes.ts personAction
  | PeopleAction;
export type PeopleAction = 'move' | 'edit' | 'comment' | 'approve' | 'reject' | 'clearError' | 'setUrgent' | 'unlock' | 'reopen' | 'delete';
export type HandBackAction = 'Solved' | 'Manual' | 'Error' | 'Retry';
/** The outcomes a Mate's hand-back logs (a run's KPI event is the other one). */
export type KpiOutcome = Exclude<KpiOutcomeName, 'Run'>;

/** What a guard may look at. */
export interface Facts {
  source?: 'mate' | 'user';
  requireApproval?: 'none' | 'mateCreated' | 'all';
  requiredMissing?: boolean;
  retryAllowed?: boolean;
  retryCount?: number;
  maxRetries?: number;
  /** people: the task's Error flag before the action */
  fromError?: boolean;
  /** people's move: the Error flag asked for (only with Manual) */
  targetError?: boolean;
}

export interface Target {
  /** 'requested': the queue the person asked for (move, reopen) */
  queue: Queue | 'unchanged' | 'requested';
  /** the Error flag afterwards; with queue 'unchanged' the flag is left as it is too */
  error: boolean;
  /** retryCount + 1 and queue position at the bottom (or the given activation date) */
  retried?: boolean;
  /** text added to the history row (and the answer's message) */
  note?: string;
  /** the KPI outcome logged for a Mate hand-back */
  kpi?: KpiOutcome;
}

export interface Transition {
  from: string;
  action: Action;
  condition: string;
  guard: (f: Facts) => boolean;
  to: Target;
  effects: string;
}

const always = () => true;
const HELD = 'Ready, locked by the caller (live lease)';
const retryOk = (f: Facts) => f.retryAllowed === true && (f.retryCount ?? 0) < (f.maxRetries ?? 0);
const notAllowed = (f: Facts) => f.retryAllowed !== true;
const limitReached = (f: Facts) => f.retryAllowed === true && (f.retryCount ?? 0) >= (f.maxRetries ?? 0);
const HANDBACK_EFFECTS = 'unlock; store reason; append comment; history; KPI event; run count';

export const RETRY_NOT_ALLOWED = 'Retry not allowed: converted to Error';
export const RETRY_LIMIT_REACHED = 'Retry limit reached: converted to Error';
export const LOCK_EXPIRED = 'Lock expired';
export const ERROR_RESOLVED = 'Error resolved';
/** Where people act: any task no Mate (or other person) holds. */
const FREE = 'any queue, not locked';

export const TRANSITIONS: readonly Transition[] = [
  {
    from: '(new)',
    action: 'create',
    condition: 'approval required for the source (requireApproval = all, or mateCreated and a Mate creates)',
    guard: (f) => f.requireApproval === 'all' || (f.requireApproval === 'mateCreated' && f.source === 'mate'),
    to: { queue: 'NeedsApproval', error: false },
    effects: 'history; first comment',
  },
  {
    from: '(new)',
    action: 'create',
    condition: 'a required field is missing or empty',
    guard: (f) => f.requiredMissing === true,
    to: { queue: 'NeedsData', error: false },
    effects: 'history; first comment',
  },
  {
    from: '(new)',
    action: 'create',
    condition: 'otherwise',
    guard: always,
    to: { queue: 'Ready', error: false },
    effects: 'history; first comment',
  },
  {
    from: 'Ready, free, activationDate <= now',
    action: 'take',
    condition:
      'process open for Mates (gate open, not a blocked day, not stopped by errors); order: urgent, deadline, queue position, taskId',
    guard: always,
    to: { queue: 'unchanged', error: false },
    effects: 'lock for lockTimeoutSeconds; open or resume the run; history',
  },
  {
    from: HELD,
    action: 'Solved',
    condition: '-',
    guard: always,
    to: { queue: 'Solved', error: false, kpi: 'Solved' },
    effects: HANDBACK_EFFECTS,
  },
  {
    from: HELD,
    action: 'Manual',
    condition: '-',
    guard: always,
    to: { queue: 'Manual', error: false, kpi: 'Manual' },
    effects: HANDBACK_EFFECTS,
  },
  {
    from: HELD,
    action: 'Error',
    condition: '-',
    guard: always,
    to: { queue: 'Manual', error: true, kpi: 'Error' },
    effects: HANDBACK_EFFECTS,
  },
  {
    from: HELD,
    action: 'Retry',
    condition: 'retryAllowed and retryCount < maxRetries',
    guard: retryOk,
    to: { queue: 'Ready', error: false, retried: true, kpi: 'Retry' },
    effects: `${HANDBACK_EFFECTS}; retryCount + 1; bottom of the queue or the given activationDate`,
  },
  {
    from: HELD,
    action: 'Retry',
    condition: 'retry not allowed',
    guard: notAllowed,
    to: { queue: 'Manual', error: true, note: RETRY_NOT_ALLOWED, kpi: 'Error' },
    effects: HANDBACK_EFFECTS,
  },
  {
    from: HELD,
    action: 'Retry',
    condition: 'retryCount >= maxRetries',
    guard: limitReached,
    to: { queue: 'Manual', error: true, note: RETRY_LIMIT_REACHED, kpi: 'Error' },
    effects: HANDBACK_EFFECTS,
  },
  {
    from: 'Ready, lease expired',
    action: 'lockExpired',
    condition: 'retryAllowed and retryCount < maxRetries',
    guard: retryOk,
    to: { queue: 'Ready', error: false, retried: true, note: LOCK_EXPIRED },
    effects:
      'system Retry by the sweeper: unlock; reason "Lock expired"; retryCount + 1; bottom of the queue; the former holder\'s hand-back is refused',
  },
  {
    from: 'Ready, lease expired',
    action: 'lockExpired',
    condition: 'retry not allowed',
    guard: notAllowed,
    to: { queue: 'Manual', error: true, note: `${LOCK_EXPIRED}; ${RETRY_NOT_ALLOWED}` },
    effects: 'as above, as an Error',
  },
  {
    from: 'Ready, lease expired',
    action: 'lockExpired',
    condition: 'retryCount >= maxRetries',
    guard: limitReached,
    to: { queue: 'Manual', error: true, note: `${LOCK_EXPIRED}; ${RETRY_LIMIT_REACHED}` },
    effects: 'as above, as an Error',
  },
  {
    from: 'NeedsData (free) or held by the caller',
    action: 'update',
    condition: 'NeedsData and every required field now filled',
    guard: (f) => f.requiredMissing === false,
    to: { queue: 'Ready', error: false },
    effects: "set fields; append comment; history; extend the caller's lock",
  },
  {
    from: `${HELD}, or Manual/NeedsData and free`,
    action: 'update',
    condition: 'otherwise',
    guard: always,
    to: { queue: 'unchanged', error: false },
    effects: "set fields; append comment; history; extend the caller's lock",
  },
  {
    from: HELD,
    action: 'extendLock',
    condition: '-',
    guard: always,
    to: { queue: 'unchanged', error: false },
    effects: 'lockedUntil = max(lockedUntil, now + seconds)',
  },
  // people (docs/product.md §5.4, docs/product.md §5.6): a person acts on a task nobody holds (unlock first)
  {
    from: FREE,
    action: 'move',
    condition: 'to Manual with the Error flag',
    guard: (f) => f.targetError === true,
    to: { queue: 'Manual', error: true },
    effects: 'history; append comment',
  },
  {
    from: FREE,
    action: 'move',
    condition: 'the task had the Error flag',
    guard: (f) => f.fromError === true,
    to: { queue: 'requested', error: false, note: ERROR_RESOLVED },
    effects: 'the Error is resolved (logged); history; append comment; to Ready: bottom of the queue',
  },
  {
    from: FREE,
    action: 'move',
    condition: 'otherwise',
    guard: always,
    to: { queue: 'requested', error: false },
    effects: 'history; append comment; to Ready: bottom of the queue',
  },
  {
    from: `${FREE}, not Solved`,
    action: 'edit',
    condition: 'NeedsData and every required field now filled',
    guard: (f) => f.requiredMissing === false,
    to: { queue: 'Ready', error: false },
    effects: 'set fields (and urgent); append comment; history',
  },
  {
    from: `${FREE}, not Solved (urgent alone: locked too)`,
    action: 'edit',
    condition: 'otherwise',
    guard: always,
    to: { queue: 'unchanged', error: false },
    effects: 'set fields (and urgent); append comment; history',
  },
  {
    from: 'any queue, locked or not',
    action: 'comment',
    condition: '-',
    guard: always,
    to: { queue: 'unchanged', error: false },
    effects: 'append comment; history',
  },
  {
    from: 'any queue, locked or not',
    action: 'setUrgent',
    condition: '-',
    guard: always,
    to: { queue: 'unchanged', error: false },
    effects: 'urgent = true/false; history',
  },
  {
    from: 'NeedsApproval',
    action: 'approve',
    condition: 'a required field is missing or empty',
    guard: (f) => f.requiredMissing === true,
    to: { queue: 'NeedsData', error: false },
    effects: 'history; append comment',
  },
  {
    from: 'NeedsApproval',
    action: 'approve',
    condition: 'otherwise',
    guard: always,
    to: { queue: 'Ready', error: false },
    effects: 'history; append comment; bottom of the queue',
  },
  {
    from: 'NeedsApproval',
    action: 'reject',
    condition: '-',
    guard: always,
    to: { queue: 'Manual', error: false },
    effects: 'history; append comment',
  },
  {
    from: 'Manual + Error flag',
    action: 'clearError',
    condition: '-',
    guard: always,
    to: { queue: 'Manual', error: false, note: ERROR_RESOLVED },
    effects: 'the Error is resolved (logged); history; append comment',
  },
  {
    from: 'locked by a Mate or a person (lease live or expired)',
    action: 'unlock',
    condition: '-',
    guard: always,
    to: { queue: 'unchanged', error: false },
    effects: "unlock; leave the run; the former Mate's hand-back is refused (lock_expired); history",
  },
  {
    from: 'Solved',
    action: 'reopen',
    condition: 'to Ready or Manual',
    guard: always,
    to: { queue: 'requested', error: false },
    effects: 'history (logged); append comment; a unique key taken meanwhile is refused (duplicate_key); to Ready: bottom of the queue',
  },
  {
    from: FREE,
    action: 'delete',
    condition: '-',
    guard: always,
    to: { queue: 'unchanged', error: false },
    effects: 'soft delete (deletedAt): gone from lists and the Mate API; history',
  },
];

/** The first row for `action` whose guard holds. Every action has an unconditional last row or complete guards. */
export function transition(action: Action, facts: Facts): Transition {
  const row = TRANSITIONS.find((t) => t.action === action && t.guard(facts));
  if (!row) throw new Error(`no transition for ${action} with ${JSON.stringify(facts)}`);
  return row;
}

export function renderStateMachineTable(): string {
  const esc = (s: string) => s.replace(/\|/g, '\\|');
  const to = (t: Target) =>
    [
      t.queue === 'unchanged' ? '(unchanged)' : t.queue === 'requested' ? '(the queue asked for)' : t.queue,
      t.error ? '+ Error flag' : '',
      t.note ? `("${t.note}")` : '',
      t.kpi ? `KPI: ${t.kpi}` : '',
    ]
      .filter(Boolean)
      .join(' ');
  return [
    '| from | action | condition | to | effects |',
    '| --- | --- | --- | --- | --- |',
    ...TRANSITIONS.map((t) => `| ${esc(t.from)} | ${t.action} | ${esc(t.condition)} | ${esc(to(t.to))} | ${esc(t.effects)} |`),
  ].join('\n');
}
