/**
 * `queuemate start --processes N` (docs/deployment.md, "Several server processes"): a primary
 * process that serves nothing itself runs N server processes (node:cluster), which share the port.
 *
 * - The primary restarts a server process that dies, with a line on stderr; one that dies before
 *   it was ever ready at the first start stops them all (a start that fails would fail again).
 * - SIGTERM or SIGINT to the primary is passed to every server process, each drains as a single
 *   process does; the primary exits once all have (0 when all exited 0), or after the shutdown
 *   timeout and a second of margin, killing what is left.
 * - `/metrics` and `/readyz` answer for the whole, from whichever process the request reaches:
 *   that process asks the primary, which collects every ready process's metrics over IPC and sums
 *   them (the figures read from the database are taken once), and says how many processes run.
 */
import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry, Counter, Gauge, Registry } from 'prom-client';

/** One process's metrics as prom-client's getMetricsAsJSON gives them. */
type MetricsJson = object[];

/** The tag of every IPC message of this file (a worker's channel also carries node:cluster's own). */
const TAG = 'queuemate:cluster';

/** What the primary says about its server processes (in /readyz). */
export interface ClusterStatus {
  /** processes asked for (--processes) */
  wanted: number;
  /** processes listening now */
  running: number;
  /** processes started again since the primary started, after one died */
  restarts: number;
}

type Message =
  | { tag: typeof TAG; kind: 'metrics' | 'status'; id: number }
  | { tag: typeof TAG; kind: 'collect'; id: number }
  | { tag: typeof TAG; kind: 'collected'; id: number; metrics: MetricsJson }
  | { tag: typeof TAG; kind: 'answer'; id: number; text?: string; status?: ClusterStatus; error?: string };

function isMessage(m: unknown): m is Message {
  return typeof m === 'object' && m !== null && (m as { tag?: unknown }).tag === TAG;
}

/** How long the primary waits for one process's metrics; a process that does not answer is left out. */
const COLLECT_TIMEOUT_MS = 3000;

export interface SuperviseOptions {
  processes: number;
  shutdownTimeoutSeconds: number;
  /** one line for the operator (stderr) */
  log(line: string): void;
  /** every process listens (once, at the first start), on this port */
  onReady(port: number): void;
}

/** Runs in the primary: starts the server processes and looks after them until a signal stops them. */
export function superviseServers(o: SuperviseOptions): void {
  const live = new Set<Worker>();
  const ready = new Set<Worker>();
  let announced = false;
  let stopping = false;
  let failed = false;
  let restarts = 0;
  // dying before it listens, again and again (the database away, say): restarts wait longer each time
  let earlyDeaths = 0;

  const status = (): ClusterStatus => ({ wanted: o.processes, running: ready.size, restarts });

  const extra = new Registry();
  new Gauge({
    name: 'queuemate_server_processes',
    help: 'Server processes of this `queuemate start --processes N`: wanted (N) and running (listening).',
    labelNames: ['state'],
    registers: [extra],
    collect() {
      this.set({ state: 'wanted' }, o.processes);
      this.set({ state: 'running' }, ready.size);
    },
  });
  const restartCount = new Counter({
    name: 'queuemate_server_process_restarts_total',
    help: 'Server processes started again after one died.',
    registers: [extra],
  });

  let nextId = 0;
  const waiting = new Map<number, (metrics: MetricsJson) => void>();
  const collect = async (): Promise<string> => {
    const answers = await Promise.all(
      [...ready].map(
        (w) =>
          new Promise<MetricsJson | null>((resolve) => {
            const id = ++nextId;
            const timer = setTimeout(() => {
              waiting.delete(id);
              resolve(null);
            }, COLLECT_TIMEOUT_MS);
            waiting.set(id, (m) => {
              clearTimeout(timer);
              waiting.delete(id);
              resolve(m);
            });
            w.send({ tag: TAG, kind: 'collect', id } satisfies Message, (err) => {
              if (err) waiting.get(id)?.([]);
            });
          }),
      ),
    );
    const aggregated: Registry = AggregatorRegistry.aggregate(answers.filter((a): a is MetricsJson => a !== null && a.length > 0));
    return Registry.merge([aggregated, extra]).metrics();
  };

  const onMessage = (w: Worker, m: unknown) => {
    if (!isMessage(m)) return;
    if (m.kind === 'collected') return waiting.get(m.id)?.(m.metrics);
    const reply = (answer: Omit<Extract<Message, { kind: 'answer' }>, 'tag' | 'kind' | 'id'>) => {
      if (w.isConnected()) w.send({ tag: TAG, kind: 'answer', id: m.id, ...answer } satisfies Message);
    };
    if (m.kind === 'status') reply({ status: status() });
    else if (m.kind === 'metrics')
      collect().then(
        (text) => reply({ text }),
        (err: Error) => reply({ error: err.message }),
      );
  };

  const fork = () => {
    const w = cluster.fork();
    live.add(w);
    w.on('message', (m) => onMessage(w, m));
  };

  cluster.on('listening', (w, address) => {
    ready.add(w);
    earlyDeaths = 0;
    if (!announced && ready.size >= o.processes) {
      announced = true;
      o.onReady(address.port);
    }
  });

  cluster.on('exit', (w, code, signal) => {
    const wasReady = ready.delete(w);
    live.delete(w);
    if (stopping && code !== 0) failed = true;
    if (stopping) {
      if (live.size === 0) process.exit(failed ? 1 : 0);
      return;
    }
    const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
    if (!announced && !wasReady) {
      o.log(`server process ${w.process.pid} ${how} before it was ready; stopping`);
      failed = true;
      stop();
      return;
    }
    restarts++;
    restartCount.inc();
    if (!wasReady) earlyDeaths++;
    const delay = earlyDeaths === 0 ? 0 : Math.min(30_000, 500 * 2 ** earlyDeaths);
    o.log(`server process ${w.process.pid} ${how}; starting another${delay ? ` in ${delay / 1000} s` : ''}`);
    setTimeout(() => {
      if (!stopping) fork();
    }, delay);
  });

  const stop = () => {
    if (stopping) return;
    stopping = true;
    if (live.size === 0) process.exit(failed ? 1 : 0);
    // each process drains within the shutdown timeout or exits 1 by itself; the margin covers its start
    const timer = setTimeout(
      () => {
        o.log(`server processes still running ${o.shutdownTimeoutSeconds}s after the signal; killing them`);
        for (const w of live) w.process.kill('SIGKILL');
        process.exit(1);
      },
      o.shutdownTimeoutSeconds * 1000 + 1000,
    );
    timer.unref();
    for (const w of live) w.process.kill('SIGTERM');
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);

  for (let i = 0; i < o.processes; i++) fork();
}

/** What a server process asks the primary: the whole cluster's metrics and status. */
export interface ClusterLink {
  metrics(): Promise<string>;
  status(): Promise<ClusterStatus>;
}

/** How long a server process waits for the primary's answer (which may wait COLLECT_TIMEOUT_MS for a process). */
const ASK_TIMEOUT_MS = COLLECT_TIMEOUT_MS + 2000;

/**
 * Runs in a server process started by superviseServers: answers the primary's collection of this
 * process's metrics (from `registry`), and returns the link its /metrics and /readyz ask through.
 */
export function joinCluster(registry: () => Registry): ClusterLink {
  let nextId = 0;
  const waiting = new Map<number, (m: Extract<Message, { kind: 'answer' }>) => void>();
  process.on('message', (m: unknown) => {
    if (!isMessage(m)) return;
    if (m.kind === 'answer') return waiting.get(m.id)?.(m);
    if (m.kind === 'collect') {
      Promise.resolve()
        .then(() => registry().getMetricsAsJSON())
        .then(
          (metrics) => process.send?.({ tag: TAG, kind: 'collected', id: m.id, metrics } satisfies Message),
          () => process.send?.({ tag: TAG, kind: 'collected', id: m.id, metrics: [] } satisfies Message),
        );
    }
  });
  const ask = (kind: 'metrics' | 'status') =>
    new Promise<Extract<Message, { kind: 'answer' }>>((resolve, reject) => {
      const id = ++nextId;
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(new Error('the primary process did not answer'));
      }, ASK_TIMEOUT_MS);
      waiting.set(id, (m) => {
        clearTimeout(timer);
        waiting.delete(id);
        if (m.error !== undefined) reject(new Error(m.error));
        else resolve(m);
      });
      process.send!({ tag: TAG, kind, id } satisfies Message);
    });
  return {
    metrics: async () => (await ask('metrics')).text ?? '',
    status: async () => (await ask('status')).status!,
  };
}

export const isServerProcessOfCluster = (): boolean => cluster.isWorker;
