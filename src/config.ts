/**
 * Configuration: one table of settings, parsed once at start-up from the environment and
 * command-line flags (flags win). Nothing else in the code reads process.env.
 */
import os from 'node:os';
import path from 'node:path';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface Config {
  port: number;
  host: string;
  databaseUrl: string | null;
  dataDir: string;
  logLevel: LogLevel;
  publicUrl: string;
  tokenIssuer: string;
  tokenKeyFile: string | null;
  tokenSecret: string | null;
  bodyLimit: number;
  lockSweepIntervalSeconds: number;
  bulkLeaseSeconds: number;
  dbPoolSize: number;
  embeddedFsync: 'on' | 'off';
  embeddedThread: 'worker' | 'main';
  dbLockTimeoutMs: number;
  requestTimeoutMs: number;
  headersTimeoutMs: number;
  maxConnections: number;
  dbStatementTimeoutMs: number;
  shutdownTimeoutSeconds: number;
  signInMaxFailuresPerUser: number;
  signInMaxFailuresPerAddress: number;
  signInWindowSeconds: number;
  trustProxy: boolean | number | string;
  metrics: 'on' | 'off';
  metricsToken: string | null;
  sseHeartbeatSeconds: number;
  eventRetentionHours: number;
  webhookTimeoutSeconds: number;
  webhookDisableAfterFailures: number;
  processes: number;
  dbSessionUrl: string | null;
  dbPreparedStatements: 'on' | 'off';
  dbGenericPlans: 'on' | 'off';
}

type Kind = 'int' | 'string' | 'url' | 'enum' | 'path' | 'proxy' | 'processes';

export interface Setting {
  key: keyof Config;
  env: string;
  flag: string;
  kind: Kind;
  default: string | number | boolean | null;
  min?: number;
  max?: number;
  values?: readonly string[];
  description: string;
}

export const SETTINGS: readonly Setting[] = [
  {
    key: 'port',
    env: 'PORT',
    flag: '--port',
    kind: 'int',
    default: 8080,
    min: 0,
    max: 65535,
    description: 'TCP port to listen on (0 picks a free port).',
  },
  {
    key: 'host',
    env: 'HOST',
    flag: '--host',
    kind: 'string',
    default: '127.0.0.1',
    description: 'Address to bind. Loopback by default so a first start is not exposed; use 0.0.0.0 behind a proxy or in a container.',
  },
  {
    key: 'databaseUrl',
    env: 'DATABASE_URL',
    flag: '--database-url',
    kind: 'url',
    default: null,
    description: 'PostgreSQL connection string (postgres://…). When unset, the embedded store (PGlite) in the data directory is used.',
  },
  {
    key: 'processes',
    env: 'QUEUEMATE_PROCESSES',
    flag: '--processes',
    kind: 'processes',
    default: 1,
    min: 1,
    max: 256,
    description:
      'Server processes `start` runs on the port (`auto`: one per CPU core). PostgreSQL only; see docs/deployment.md, "Several server processes".',
  },
  {
    key: 'dbSessionUrl',
    env: 'QUEUEMATE_DB_SESSION_URL',
    flag: '--db-session-url',
    kind: 'url',
    default: null,
    description:
      'PostgreSQL connection string for the connections that need a session of their own (the events LISTEN, migrations): set it to the database itself when DATABASE_URL points at a pooler in transaction mode. Default DATABASE_URL.',
  },
  {
    key: 'dbPreparedStatements',
    env: 'QUEUEMATE_DB_PREPARED_STATEMENTS',
    flag: '--db-prepared-statements',
    kind: 'enum',
    default: 'on',
    values: ['on', 'off'],
    description:
      'PostgreSQL: send the hot statements as named prepared statements (`off` behind PgBouncer older than 1.21 in transaction mode, or without its max_prepared_statements).',
  },
  {
    key: 'dbGenericPlans',
    env: 'QUEUEMATE_DB_GENERIC_PLANS',
    flag: '--db-generic-plans',
    kind: 'enum',
    default: 'on',
    values: ['on', 'off'],
    description:
      "PostgreSQL, with prepared statements on: half of the pool's connections serve the Mate API's takes and hand-backs with `plan_cache_mode = force_generic_plan`, so their statements are planned once per connection (`off` behind a pooler that refuses the start-up parameter `options`, such as PgBouncer).",
  },
  {
    key: 'dataDir',
    env: 'QUEUEMATE_DATA_DIR',
    flag: '--data-dir',
    kind: 'path',
    default: './data',
    description: 'Directory of the embedded store. Ignored when DATABASE_URL is set.',
  },
  {
    key: 'logLevel',
    env: 'LOG_LEVEL',
    flag: '--log-level',
    kind: 'enum',
    default: 'info',
    values: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
    description: 'Minimum level of the JSON log lines written to stdout.',
  },
  {
    key: 'publicUrl',
    env: 'QUEUEMATE_PUBLIC_URL',
    flag: '--public-url',
    kind: 'url',
    default: null,
    description: 'Address people and robots use to reach the service; printed at start-up. Default http://<host>:<port>.',
  },
  {
    key: 'tokenIssuer',
    env: 'QUEUEMATE_TOKEN_ISSUER',
    flag: '--token-issuer',
    kind: 'string',
    default: 'queuemate',
    description: 'The `iss` claim of access tokens.',
  },
  {
    key: 'tokenKeyFile',
    env: 'QUEUEMATE_TOKEN_KEY_FILE',
    flag: '--token-key-file',
    kind: 'path',
    default: null,
    description:
      'PEM file with an Ed25519 private key (PKCS#8) to sign access tokens. Default: a key generated at first start and kept in the store.',
  },
  {
    key: 'tokenSecret',
    env: 'QUEUEMATE_TOKEN_SECRET',
    flag: '--token-secret',
    kind: 'string',
    default: null,
    description: 'Shared secret (at least 32 characters) to sign access tokens with HS256 instead of Ed25519.',
  },
  {
    key: 'bodyLimit',
    env: 'QUEUEMATE_BODY_LIMIT',
    flag: '--body-limit',
    kind: 'int',
    default: 1048576,
    min: 1024,
    max: 104857600,
    description: 'Largest accepted request body in bytes; larger bodies get 413.',
  },
  {
    key: 'lockSweepIntervalSeconds',
    env: 'QUEUEMATE_LOCK_SWEEP_INTERVAL',
    flag: '--lock-sweep-interval',
    kind: 'int',
    default: 5,
    min: 1,
    max: 3600,
    description:
      "Seconds between sweeps that recover expired task locks. A crashed robot's task is back in Ready at most this long after its lease ends.",
  },
  {
    key: 'bulkLeaseSeconds',
    env: 'QUEUEMATE_BULK_LEASE',
    flag: '--bulk-lease',
    kind: 'int',
    default: 60,
    min: 5,
    max: 3600,
    description:
      "Seconds a server process holds a people's bulk job past its last chunk; a process that died leaves its jobs to another this long after. Keep it above the longest chunk (a chunk's statements are bounded by QUEUEMATE_DB_STATEMENT_TIMEOUT): a live process whose lease ran out mid-chunk rolls the chunk back and another resumes the job.",
  },
  {
    key: 'dbPoolSize',
    env: 'QUEUEMATE_DB_POOL_SIZE',
    flag: '--db-pool-size',
    kind: 'int',
    default: 10,
    min: 1,
    max: 200,
    description: 'PostgreSQL connections per server process (the embedded store always uses one).',
  },
  {
    key: 'embeddedFsync',
    env: 'QUEUEMATE_EMBEDDED_FSYNC',
    flag: '--embedded-fsync',
    kind: 'enum',
    default: 'on',
    values: ['on', 'off'],
    description:
      'Embedded store: flush the write-ahead log to disk before an acknowledged change is answered (`off`: faster, but an operating-system crash can lose recent acknowledged changes). Ignored when DATABASE_URL is set.',
  },
  {
    key: 'embeddedThread',
    env: 'QUEUEMATE_EMBEDDED_THREAD',
    flag: '--embedded-thread',
    kind: 'enum',
    default: 'worker',
    values: ['worker', 'main'],
    description:
      "Embedded store: where the database runs. `worker`: a thread of its own, beside the thread that serves HTTP (two cores in use); `main`: the server's own thread, taking turns with HTTP (one core). Ignored when DATABASE_URL is set.",
  },
  {
    key: 'requestTimeoutMs',
    env: 'QUEUEMATE_REQUEST_TIMEOUT',
    flag: '--request-timeout',
    kind: 'int',
    default: 30000,
    min: 1000,
    max: 600000,
    description:
      'Milliseconds a client has to send a whole request (its headers within `QUEUEMATE_HEADERS_TIMEOUT`); a slower one gets 408 and its connection is closed.',
  },
  {
    key: 'headersTimeoutMs',
    env: 'QUEUEMATE_HEADERS_TIMEOUT',
    flag: '--headers-timeout',
    kind: 'int',
    default: 5000,
    min: 500,
    max: 600000,
    description:
      "Milliseconds a client has to send a request's headers (at most the request timeout); a slower one (slowloris) gets 408 and its connection is closed.",
  },
  {
    key: 'maxConnections',
    env: 'QUEUEMATE_MAX_CONNECTIONS',
    flag: '--max-connections',
    kind: 'int',
    default: 1000,
    min: 1,
    max: 1000000,
    description:
      'Open connections a server process keeps at once. Nearing it, the longest-idle keep-alive connections are closed to make room; at it, a connection still without its headers after a second is closed for a new one; a new connection is closed at once only when every other is answering a request.',
  },
  {
    key: 'dbLockTimeoutMs',
    env: 'QUEUEMATE_DB_LOCK_TIMEOUT',
    flag: '--db-lock-timeout',
    kind: 'int',
    default: 5000,
    min: 0,
    max: 600000,
    description:
      "PostgreSQL: milliseconds a statement waits for a locked row before the request is answered 503 with Retry-After (0: Queuemate sets none and the database's own lock_timeout applies, none by default).",
  },
  {
    key: 'dbStatementTimeoutMs',
    env: 'QUEUEMATE_DB_STATEMENT_TIMEOUT',
    flag: '--db-statement-timeout',
    kind: 'int',
    default: 30000,
    min: 0,
    max: 3600000,
    description:
      "PostgreSQL: milliseconds a statement may run before it is cancelled and the request answered 503 (0: Queuemate sets none and the database's own statement_timeout applies, none by default).",
  },
  {
    key: 'shutdownTimeoutSeconds',
    env: 'QUEUEMATE_SHUTDOWN_TIMEOUT',
    flag: '--shutdown-timeout',
    kind: 'int',
    default: 10,
    min: 1,
    max: 600,
    description: 'On SIGTERM/SIGINT, how long in-flight requests may take to finish before the process exits anyway.',
  },
  {
    key: 'signInMaxFailuresPerUser',
    env: 'QUEUEMATE_SIGNIN_MAX_FAILURES_USER',
    flag: '--signin-max-failures-user',
    kind: 'int',
    default: 10,
    min: 1,
    max: 100000,
    description: 'Failed sign-ins for one username within the window before it is throttled (429).',
  },
  {
    key: 'signInMaxFailuresPerAddress',
    env: 'QUEUEMATE_SIGNIN_MAX_FAILURES_ADDRESS',
    flag: '--signin-max-failures-address',
    kind: 'int',
    default: 300,
    min: 1,
    max: 1000000,
    description: 'Failed sign-ins from one client address within the window before it is throttled (429).',
  },
  {
    key: 'trustProxy',
    env: 'QUEUEMATE_TRUST_PROXY',
    flag: '--trust-proxy',
    kind: 'proxy',
    default: false,
    description:
      "Behind a reverse proxy: `true`, the number of proxy hops, or a comma-separated list of proxy addresses/CIDRs whose X-Forwarded-For is believed. Client addresses (sign-in throttling, logs) come from it; with `false` the proxy's own address is used.",
  },
  {
    key: 'signInWindowSeconds',
    env: 'QUEUEMATE_SIGNIN_WINDOW',
    flag: '--signin-window',
    kind: 'int',
    default: 900,
    min: 1,
    max: 86400,
    description: 'Length of the sign-in throttling window in seconds.',
  },
  {
    key: 'metrics',
    env: 'QUEUEMATE_METRICS',
    flag: '--metrics',
    kind: 'enum',
    default: 'on',
    values: ['on', 'off'],
    description: 'Serve Prometheus metrics at /metrics (`off`: the route answers 404). See docs/events.md.',
  },
  {
    key: 'metricsToken',
    env: 'QUEUEMATE_METRICS_TOKEN',
    flag: '--metrics-token',
    kind: 'string',
    default: null,
    description:
      'When set, /metrics requires `Authorization: Bearer <token>` (401 otherwise); set it whenever the port is reachable by others. Unset while HOST is beyond loopback, the queue depth is labelled by process id, not process key.',
  },
  {
    key: 'sseHeartbeatSeconds',
    env: 'QUEUEMATE_SSE_HEARTBEAT',
    flag: '--sse-heartbeat',
    kind: 'int',
    default: 15,
    min: 1,
    max: 300,
    description: 'Seconds between heartbeat comments on GET /v1/events, so proxies do not close an idle stream (most close after 30-60 s).',
  },
  {
    key: 'eventRetentionHours',
    env: 'QUEUEMATE_EVENT_RETENTION_HOURS',
    flag: '--event-retention-hours',
    kind: 'int',
    default: 168,
    min: 25,
    max: 87600,
    description:
      'Hours outbox events and webhook delivery logs are kept (more than the 24 h retry window); a stream resuming from an older id starts at the oldest kept event.',
  },
  {
    key: 'webhookTimeoutSeconds',
    env: 'QUEUEMATE_WEBHOOK_TIMEOUT',
    flag: '--webhook-timeout',
    kind: 'int',
    default: 10,
    min: 1,
    max: 60,
    description: 'Seconds a webhook endpoint has to answer one delivery attempt before it counts as failed and is retried.',
  },
  {
    key: 'webhookDisableAfterFailures',
    env: 'QUEUEMATE_WEBHOOK_DISABLE_AFTER',
    flag: '--webhook-disable-after',
    kind: 'int',
    default: 1,
    min: 1,
    max: 1000,
    description:
      'Deliveries in a row that fail for good (every retry for 24 h) before a webhook endpoint is disabled and admins are notified.',
  },
];

export class ConfigError extends Error {}

function parseValue(s: Setting, raw: string, source: string): unknown {
  const where = `${source} (${s.env} / ${s.flag})`;
  switch (s.kind) {
    case 'int': {
      if (!/^-?\d+$/.test(raw.trim())) throw new ConfigError(`Invalid ${where}: "${raw}" is not a whole number`);
      const n = Number(raw);
      if ((s.min !== undefined && n < s.min) || (s.max !== undefined && n > s.max)) {
        throw new ConfigError(`Invalid ${where}: ${n} is outside ${s.min}..${s.max}`);
      }
      return n;
    }
    case 'enum':
      if (!s.values!.includes(raw)) throw new ConfigError(`Invalid ${where}: "${raw}" is not one of ${s.values!.join(', ')}`);
      return raw;
    case 'url': {
      let u: URL;
      try {
        u = new URL(raw);
      } catch {
        throw new ConfigError(`Invalid ${where}: "${redact(raw)}" is not a URL`);
      }
      if ((s.key === 'databaseUrl' || s.key === 'dbSessionUrl') && !['postgres:', 'postgresql:'].includes(u.protocol)) {
        throw new ConfigError(`Invalid ${where}: expected a postgres:// URL, got ${u.protocol}//`);
      }
      if (s.key === 'publicUrl' && !['http:', 'https:'].includes(u.protocol)) {
        throw new ConfigError(`Invalid ${where}: expected an http(s):// URL`);
      }
      return s.key === 'publicUrl' ? raw.replace(/\/+$/, '') : raw;
    }
    case 'proxy': {
      const v = raw.trim();
      if (v === 'true' || v === 'false') return v === 'true';
      if (/^\d+$/.test(v)) return Number(v);
      if (/^[0-9A-Fa-f.:/]+(\s*,\s*[0-9A-Fa-f.:/]+)*$/.test(v)) return v;
      throw new ConfigError(`Invalid ${where}: "${raw}" is not true, false, a number of hops or a list of addresses`);
    }
    case 'processes': {
      const v = raw.trim();
      if (v === 'auto') return Math.min(s.max!, os.availableParallelism());
      if (!/^\d+$/.test(v)) throw new ConfigError(`Invalid ${where}: "${raw}" is not a whole number or auto`);
      const n = Number(v);
      if (n < s.min! || n > s.max!) throw new ConfigError(`Invalid ${where}: ${n} is outside ${s.min}..${s.max}`);
      return n;
    }
    case 'path':
    case 'string':
      if (raw.trim() === '') throw new ConfigError(`Invalid ${where}: must not be empty`);
      return raw;
  }
}

/** Hides the password of a connection string so it can appear in messages. */
export function redact(url: string): string {
  return url.replace(/\/\/([^:/@]*):([^@]*)@/, '//$1:***@');
}

/**
 * Parses flags of the form `--name value` or `--name=value`. Unknown flags are an error so
 * that a typo is not silently ignored.
 */
export function loadConfig(env: Record<string, string | undefined>, argv: readonly string[] = []): Config {
  const fromFlags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('--')) throw new ConfigError(`Unexpected argument "${arg}"`);
    const eq = arg.indexOf('=');
    const name = eq >= 0 ? arg.slice(0, eq) : arg;
    const setting = SETTINGS.find((s) => s.flag === name);
    if (!setting) throw new ConfigError(`Unknown option ${name}`);
    let value: string | undefined = eq >= 0 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined) throw new ConfigError(`Option ${name} needs a value`);
    fromFlags.set(setting.flag, value);
  }
  const out: Record<string, unknown> = {};
  for (const s of SETTINGS) {
    const flagValue = fromFlags.get(s.flag);
    const envValue = env[s.env];
    if (flagValue !== undefined) out[s.key] = parseValue(s, flagValue, 'option');
    else if (envValue !== undefined && envValue !== '') out[s.key] = parseValue(s, envValue, 'environment variable');
    else out[s.key] = s.default;
  }
  const config = out as unknown as Config;
  config.dataDir = path.resolve(config.dataDir);
  if (config.tokenKeyFile) config.tokenKeyFile = path.resolve(config.tokenKeyFile);
  if (config.tokenSecret !== null && config.tokenSecret.length < 32) {
    throw new ConfigError('Invalid QUEUEMATE_TOKEN_SECRET: must be at least 32 characters');
  }
  if (config.tokenSecret && config.tokenKeyFile) {
    throw new ConfigError('Set only one of QUEUEMATE_TOKEN_KEY_FILE and QUEUEMATE_TOKEN_SECRET');
  }
  if (!config.publicUrl) {
    const shownHost = config.host === '0.0.0.0' || config.host === '::' ? 'localhost' : config.host;
    config.publicUrl = `http://${shownHost.includes(':') ? `[${shownHost}]` : shownHost}:${config.port}`;
  }
  return config;
}

/** The configuration used by tests and embedded callers: defaults, quiet logs. */
export function testConfig(overrides: Partial<Config> = {}): Config {
  return { ...loadConfig({}), logLevel: 'silent', ...overrides };
}
