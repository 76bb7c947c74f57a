/**
 * The task life cycle (docs/product.md §5) as one table: from, action, condition → to, effects.
 * The services pick the first row whose action matches and whose guard holds; docs/state-machine.md
 * is rendered from this table (test/state-machine-doc.test.ts keeps the two equal).
 */
export type Queue = 'Ready' | 'NeedsData' | 'NeedsApproval' | 'Manual' | 'Solved';
export const QUEUES: readonly Queue[] = ['Ready', 'NeedsData', 'NeedsApproval', 'Manual', 'Solved'];

export type Action = 'create' | 'take' | 'Solved' | 'Manual' | 'Error' | 'Retry' | 'lockExpired' | 'update' | 'extendLock';
export type HandBackAction = 'Solved' | 'Manual' | 'Error' | 'Retry';
export type KpiOutcome = 'Solved' | 'Manual' | 'Error' | 'Retry';

/** What a guard may look at. */
export interface Facts {
  source?: 'mate' | 'user';
  requireApproval?: 'none' | 'mateCreated' | 'all';
  requiredMissing?: boolean;
  retryAllowed?: boolean;
  retryCount?: number;
  maxRetries?: number;
}

export interface Target {
  queue: Queue | 'unchanged';
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
];

/** How often each row was taken in this process: lets the tests prove that they walk every row. */
export const rowsTaken = new Map<Transition, number>();

/** The first row for `action` whose guard holds. Every action has an unconditional last row or complete guards. */
export function transition(action: Action, facts: Facts): Transition {
  const row = TRANSITIONS.find((t) => t.action === action && t.guard(facts));
  if (!row) throw new Error(`no transition for ${action} with ${JSON.stringify(facts)}`);
  rowsTaken.set(row, (rowsTaken.get(row) ?? 0) + 1);
  return row;
}

export function renderStateMachineTable(): string {
  const esc = (s: string) => s.replace(/\|/g, '\\|');
  const to = (t: Target) =>
    [
      t.queue === 'unchanged' ? '(unchanged)' : t.queue,
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
