/**
 * MateClient: one typed method per Mate API endpoint (docs/mate-api.md §7), with the token handled
 * (src/tokens.ts) and retries where they are safe (src/http.ts). Business refusals (`succeeded:
 * false`, HTTP 200) are answers, returned as values unless `throwOnRefusal` is set; every other
 * failure throws a QueuemateError.
 */
import { QueuemateError } from './errors.js';
import { answerError, DEFAULT_RETRY, parseJson, Transport, type CallOptions, type RetryPolicy } from './http.js';
import { systemClock, TokenSource, type Clock } from './tokens.js';
import {
  isTask,
  toJson,
  type CreateTaskReply,
  type CreateTasksReply,
  type DummyTask,
  type ExtendLockReply,
  type Fields,
  type HandBackReply,
  type OkToRunReply,
  type Reply,
  type RetryAction,
  type ReturnItem,
  type ReturnReply,
  type Rules,
  type RunReply,
  type Task,
  type TaskAction,
  type TaskInput,
  type UpdateInput,
} from './types.js';

export interface MateClientOptions {
  /** the server's origin, e.g. https://queue.example.com */
  baseUrl: string;
  clientId: string;
  /** the tenant's API secret */
  clientSecret: string;
  /** the Mate's username and password */
  username: string;
  password: string;
  /** where /connect/token is served; default baseUrl */
  authUrl?: string;
  /** ms one attempt of a call may take (default 30,000) */
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  /** throw a QueuemateError on `succeeded: false` instead of returning it (default false) */
  throwOnRefusal?: boolean;
  /** another fetch (a proxy agent, instrumentation); default the global fetch */
  fetch?: typeof fetch;
  /** the clock that decides when the token is renewed (tests move it by hand) */
  clock?: Clock;
}

export interface MateCallOptions extends CallOptions {
  throwOnRefusal?: boolean;
}

export interface CreateOptions extends MateCallOptions {
  /**
   * The Idempotency-Key (docs/mate-api.md §8). The client makes one per call when none is given,
   * so a create repeated after a lost answer creates nothing twice; give your own to make a
   * re-run of the whole program safe too (within the server's 24 hours).
   */
  idempotencyKey?: string;
}

export interface HandBackOptions extends MateCallOptions {
  /** a ProcessKey: after the hand-back, take that process's next task and answer it in `next` (docs/mate-api.md §7.10) */
  takeNext?: string;
}

// 30 s: the server's own request timeout; a slower answer will not come.
const DEFAULT_TIMEOUT_MS = 30_000;

type Method = 'GET' | 'POST';

export class MateClient {
  readonly baseUrl: string;
  readonly #transport: Transport;
  readonly #tokens: TokenSource;
  readonly #throwOnRefusal: boolean;

  constructor(options: MateClientOptions) {
    for (const key of ['baseUrl', 'clientId', 'clientSecret', 'username', 'password'] as const) {
      if (typeof options[key] !== 'string' || options[key] === '') throw new TypeError(`MateClient: ${key} is required`);
    }
    this.baseUrl = trimUrl(options.baseUrl);
    const f = options.fetch ?? globalThis.fetch;
    if (typeof f !== 'function') throw new TypeError('MateClient: no fetch (Node.js 20 or later has one)');
    this.#transport = new Transport({
      fetch: f,
      timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      retry: { ...DEFAULT_RETRY, ...options.retry },
    });
    this.#tokens = new TokenSource(
      this.#transport,
      {
        tokenUrl: `${trimUrl(options.authUrl ?? options.baseUrl)}/connect/token`,
        clientId: options.clientId,
        clientSecret: options.clientSecret,
        username: options.username,
        password: options.password,
      },
      options.clock ?? systemClock,
    );
    this.#throwOnRefusal = options.throwOnRefusal ?? false;
  }

  /**
   * A client configured from environment variables: QUEUEMATE_URL, QUEUEMATE_CLIENT_ID,
   * QUEUEMATE_API_SECRET, QUEUEMATE_MATE and QUEUEMATE_PASSWORD (and QUEUEMATE_AUTH_URL when the
   * token is served elsewhere). `MateClient.fromEnv(process.env)`.
   */
  static fromEnv(env: Record<string, string | undefined>, options: Partial<MateClientOptions> = {}): MateClient {
    const names = {
      baseUrl: 'QUEUEMATE_URL',
      clientId: 'QUEUEMATE_CLIENT_ID',
      clientSecret: 'QUEUEMATE_API_SECRET',
      username: 'QUEUEMATE_MATE',
      password: 'QUEUEMATE_PASSWORD',
    };
    const missing = Object.values(names).filter((n) => !env[n]);
    if (missing.length > 0) throw new TypeError(`MateClient.fromEnv: set ${missing.join(', ')}`);
    return new MateClient({
      baseUrl: env.QUEUEMATE_URL!,
      authUrl: env.QUEUEMATE_AUTH_URL || undefined,
      clientId: env.QUEUEMATE_CLIENT_ID!,
      clientSecret: env.QUEUEMATE_API_SECRET!,
      username: env.QUEUEMATE_MATE!,
      password: env.QUEUEMATE_PASSWORD!,
      ...options,
    });
  }

  /** A view of one process with its fields typed: `client.process<InvoiceFields>("invoices")`. */
  process<F extends Fields = Record<string, unknown>>(processKey: string): ProcessClient<F> {
    return new ProcessClient<F>(this, processKey);
  }

  /** GET OkToRun (§7.1): may Mates work the process now? */
  okToRun(processKey: string, o: MateCallOptions = {}): Promise<OkToRunReply> {
    return this.#call('GET', `/api/OkToRun/${key(processKey)}`, undefined, true, o);
  }

  /** GET StartOrGetRun (§7.2): opens or resumes the process's run. */
  startOrGetRun(processKey: string, o: MateCallOptions = {}): Promise<RunReply> {
    return this.#call('GET', `/api/StartOrGetRun/${key(processKey)}`, undefined, true, o);
  }

  /** POST FinishRun (§7.3). */
  finishRun(run: { runId: number; overwriteSecondsSaved?: number; overwriteEntries?: number }, o: MateCallOptions = {}): Promise<Reply> {
    return this.#refusable(this.#call('POST', '/api/FinishRun', run, false, o), o);
  }

  /** POST Failure (§7.4): the robot itself failed (not a task); shown to people as the process's Failure state. */
  failure(processKey: string, message: string | Error = '', o: MateCallOptions = {}): Promise<Reply> {
    const text = message instanceof Error ? (message.stack ?? message.message) : message;
    return this.#refusable(this.#call('POST', '/api/Failure', { processKey, message: text }, false, o), o);
  }

  /** GET GetRules (§7.5): the process's rules, typed by the caller. */
  getRules<R extends object = Record<string, unknown>>(processKey: string, o: MateCallOptions = {}): Promise<Rules<R>> {
    return this.#call('GET', `/api/GetRules/${key(processKey)}`, undefined, true, o);
  }

  /** GET TakeNext (§7.6): a task, or the dummy task (`isTask` tells them apart). Never repeated: a lost answer leaves a task locked until its lease ends. */
  takeNext<F extends Fields = Record<string, unknown>>(processKey: string, o: MateCallOptions = {}): Promise<Task<F> | DummyTask> {
    return this.#call('GET', `/api/TakeNext/${key(processKey)}`, undefined, false, o);
  }

  /** GET TakeMany (§7.6): up to `count` tasks (1–100, default 10), [] when there is none to take. */
  takeMany<F extends Fields = Record<string, unknown>>(processKey: string, count?: number, o: MateCallOptions = {}): Promise<Task<F>[]> {
    const q = count === undefined ? '' : `?count=${encodeURIComponent(String(count))}`;
    return this.#call('GET', `/api/TakeMany/${key(processKey)}${q}`, undefined, false, o);
  }

  /** POST CreateTask (§7.7), with an Idempotency-Key. */
  createTask<F extends Fields = Record<string, unknown>>(
    processKey: string,
    data: TaskInput<F>,
    o: CreateOptions = {},
  ): Promise<CreateTaskReply> {
    return this.#refusable(this.#create('CreateTask', processKey, data, o), o);
  }

  /** POST CreateTasks (§7.7): all or nothing, at most 10,000; createTasksInChunks for more. */
  createTasks<F extends Fields = Record<string, unknown>>(
    processKey: string,
    items: TaskInput<F>[],
    o: CreateOptions = {},
  ): Promise<CreateTasksReply> {
    return this.#refusable(this.#create('CreateTasks', processKey, items, o), o);
  }

  /** POST CreateAndTakeTask (§7.8): the new task, locked by this Mate, or the dummy task saying why none was created. */
  async createAndTakeTask<F extends Fields = Record<string, unknown>>(
    processKey: string,
    data: TaskInput<F>,
    o: CreateOptions = {},
  ): Promise<Task<F> | DummyTask> {
    const t = await this.#create<Task<F> | DummyTask>('CreateAndTakeTask', processKey, data, o);
    if (!isTask(t) && (o.throwOnRefusal ?? this.#throwOnRefusal)) throw refusalError(t);
    return t;
  }

  /** POST UpdateTask (§7.9): change fields, add a comment; extends the lock. */
  updateTask<F extends Fields = Record<string, unknown>>(taskId: number, data: UpdateInput<F>, o: MateCallOptions = {}): Promise<Reply> {
    return this.#refusable(this.#call('POST', '/api/UpdateTask', { ...data, taskId }, false, o), o);
  }

  /** POST Solved (§7.10). */
  solved<F extends Fields = Record<string, unknown>>(action: TaskAction, o: HandBackOptions = {}): Promise<HandBackReply<F>> {
    return this.#handBack('Solved', action, o);
  }

  /** POST Manual (§7.10): for a person to handle. */
  manual<F extends Fields = Record<string, unknown>>(action: TaskAction, o: HandBackOptions = {}): Promise<HandBackReply<F>> {
    return this.#handBack('Manual', action, o);
  }

  /** POST Error (§7.10). */
  error<F extends Fields = Record<string, unknown>>(action: TaskAction, o: HandBackOptions = {}): Promise<HandBackReply<F>> {
    return this.#handBack('Error', action, o);
  }

  /** POST Retry (§7.11): back to Ready (at `activationDate`), or an Error past the retry limit. */
  retry<F extends Fields = Record<string, unknown>>(action: RetryAction, o: HandBackOptions = {}): Promise<HandBackReply<F>> {
    return this.#handBack('Retry', action, o);
  }

  /** POST Return (§7.13): several hand-backs, each with its action, each on its own. */
  returnTasks(items: ReturnItem[], o: MateCallOptions = {}): Promise<ReturnReply> {
    return this.#refusable(this.#call('POST', '/api/Return', items, false, o), o);
  }

  /** POST ExtendLock (§7.14): the lease becomes at least now + `seconds` (default the process's lease). */
  extendLock(taskId: number, seconds?: number, o: MateCallOptions = {}): Promise<ExtendLockReply> {
    return this.#refusable(this.#call('POST', '/api/ExtendLock', seconds === undefined ? { taskId } : { taskId, seconds }, false, o), o);
  }

  #handBack<F extends Fields, R>(name: string, action: TaskAction & { activationDate?: Date | string }, o: HandBackOptions): Promise<R> {
    const body = o.takeNext === undefined ? action : { ...action, takeNext: o.takeNext };
    return this.#refusable(this.#call<HandBackReply<F>>('POST', `/api/${name}`, body, false, o), o) as Promise<R>;
  }

  #create<T>(name: string, processKey: string, body: unknown, o: CreateOptions): Promise<T> {
    const idempotencyKey = o.idempotencyKey ?? globalThis.crypto.randomUUID();
    return this.#call<T>('POST', `/api/${name}/${key(processKey)}`, body, true, o, { 'idempotency-key': idempotencyKey });
  }

  async #refusable<T extends Reply>(p: Promise<T>, o: MateCallOptions): Promise<T> {
    const r = await p;
    if (r.succeeded === false && (o.throwOnRefusal ?? this.#throwOnRefusal)) throw refusalError(r);
    return r;
  }

  /** One call: a token, the exchange (with retries when `safe`), once more with a new token after a 401, the answer's JSON. */
  async #call<T>(
    method: Method,
    path: string,
    body: unknown,
    safe: boolean,
    o: CallOptions,
    extra: Record<string, string> = {},
  ): Promise<T> {
    const payload = body === undefined ? undefined : toJson(body);
    const what = `${method} ${path.split('?')[0]}`;
    for (let signIns = 0; ; signIns++) {
      const token = await this.#tokens.get(o);
      const answer = await this.#transport.send(
        {
          method,
          url: this.baseUrl + path,
          headers: {
            authorization: `Bearer ${token}`,
            accept: 'application/json',
            ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
            ...extra,
          },
          body: payload,
          safe,
        },
        o,
      );
      const parsed = parseJson(answer, what);
      // a 401 did nothing: sign in again once (the token was revoked, or the clocks disagree), then send again
      if (answer.status === 401 && signIns === 0) {
        this.#tokens.invalidate(token);
        continue;
      }
      if (answer.status !== 200) throw answerError(answer, parsed, what);
      if (parsed === undefined) throw answerError(answer, parsed, what);
      return parsed as T;
    }
  }
}

/** MateClient's calls on one process, with its fields typed as `F`. */
export class ProcessClient<F extends Fields = Record<string, unknown>> {
  constructor(
    readonly client: MateClient,
    readonly processKey: string,
  ) {}

  okToRun(o?: MateCallOptions): Promise<OkToRunReply> {
    return this.client.okToRun(this.processKey, o);
  }
  startOrGetRun(o?: MateCallOptions): Promise<RunReply> {
    return this.client.startOrGetRun(this.processKey, o);
  }
  failure(message: string | Error = '', o?: MateCallOptions): Promise<Reply> {
    return this.client.failure(this.processKey, message, o);
  }
  getRules<R extends object = Record<string, unknown>>(o?: MateCallOptions): Promise<Rules<R>> {
    return this.client.getRules<R>(this.processKey, o);
  }
  takeNext(o?: MateCallOptions): Promise<Task<F> | DummyTask> {
    return this.client.takeNext<F>(this.processKey, o);
  }
  takeMany(count?: number, o?: MateCallOptions): Promise<Task<F>[]> {
    return this.client.takeMany<F>(this.processKey, count, o);
  }
  createTask(data: TaskInput<F>, o?: CreateOptions): Promise<CreateTaskReply> {
    return this.client.createTask<F>(this.processKey, data, o);
  }
  createTasks(items: TaskInput<F>[], o?: CreateOptions): Promise<CreateTasksReply> {
    return this.client.createTasks<F>(this.processKey, items, o);
  }
  createAndTakeTask(data: TaskInput<F>, o?: CreateOptions): Promise<Task<F> | DummyTask> {
    return this.client.createAndTakeTask<F>(this.processKey, data, o);
  }
  updateTask(taskId: number, data: UpdateInput<F>, o?: MateCallOptions): Promise<Reply> {
    return this.client.updateTask<F>(taskId, data, o);
  }
  /** Solved; with `takeNext: true`, this process's next task comes back in `next`. */
  solved(action: TaskAction, o: ProcessHandBackOptions = {}): Promise<HandBackReply<F>> {
    return this.client.solved<F>(action, this.#handBack(o));
  }
  manual(action: TaskAction, o: ProcessHandBackOptions = {}): Promise<HandBackReply<F>> {
    return this.client.manual<F>(action, this.#handBack(o));
  }
  error(action: TaskAction, o: ProcessHandBackOptions = {}): Promise<HandBackReply<F>> {
    return this.client.error<F>(action, this.#handBack(o));
  }
  retry(action: RetryAction, o: ProcessHandBackOptions = {}): Promise<HandBackReply<F>> {
    return this.client.retry<F>(action, this.#handBack(o));
  }
  extendLock(taskId: number, seconds?: number, o?: MateCallOptions): Promise<ExtendLockReply> {
    return this.client.extendLock(taskId, seconds, o);
  }
  returnTasks(items: ReturnItem[], o?: MateCallOptions): Promise<ReturnReply> {
    return this.client.returnTasks(items, o);
  }

  #handBack(o: ProcessHandBackOptions): HandBackOptions {
    const { takeNext, ...rest } = o;
    return takeNext ? { ...rest, takeNext: this.processKey } : rest;
  }
}

export interface ProcessHandBackOptions extends MateCallOptions {
  /** take this process's next task in the same request (answered in `next`) */
  takeNext?: boolean;
}

function refusalError(r: { message: string; code?: string; requestId?: string; errors?: QueuemateError['errors'] }): QueuemateError {
  return new QueuemateError({
    status: 200,
    code: r.code ?? 'refused',
    message: r.message,
    requestId: r.requestId ?? null,
    errors: r.errors ?? [],
    body: r,
  });
}

function key(processKey: string): string {
  return encodeURIComponent(processKey);
}

/** Clients trim spaces and one trailing slash (docs/mate-api.md §1). */
function trimUrl(url: string): string {
  return url.trim().replace(/\/$/, '');
}
