/**
 * Runs the real `queuemate` CLI in child processes for the foundation tests. Every child is bounded
 * by a timeout (SIGKILL when it passes) and killed by killAll(), which each test file calls from
 * after(), so that a failing test never leaves a server behind.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeLogLines } from './helpers/log-sink.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const live = new Set<ChildProcess>();

/** The environment of a child: this one's, minus every Queuemate setting, plus `env`. */
export function childEnv(env: Record<string, string> = {}): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k === 'DATABASE_URL' || k === 'PORT' || k === 'HOST' || k === 'LOG_LEVEL' || k.startsWith('QUEUEMATE_')) continue;
    // node:test marks its children; a CLI child is not a test file
    if (k === 'NODE_TEST_CONTEXT') continue;
    out[k] = v;
  }
  return { ...out, ...env };
}

export interface CliProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  stdout(): string;
  stderr(): string;
  /** Resolves when the process has exited (after its output is read). */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Waits until stdout matches `re`; rejects when the process exits first or after `ms`. */
  waitFor(re: RegExp, ms?: number): Promise<RegExpMatchArray>;
}

export function spawnCli(args: string[], opts: { env?: Record<string, string>; timeoutMs?: number } = {}): CliProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', ...args], {
    cwd: ROOT,
    env: childEnv(opts.env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      live.delete(child);
      // the server's log lines (pino JSON on stdout) go to the suite's log sink (test/helpers/log-sink.ts)
      writeLogLines(
        out
          .split('\n')
          .filter((l) => l.startsWith('{"level":'))
          .join('\n'),
      );
      resolve({ code, signal });
    });
  });
  return {
    child,
    pid: child.pid!,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitFor(re, ms = 20_000) {
      return new Promise((resolve, reject) => {
        let done = false;
        const finish = (fn: () => void) => {
          if (done) return;
          done = true;
          clearInterval(poll);
          clearTimeout(limit);
          fn();
        };
        const check = () => {
          const m = out.match(re);
          if (m) finish(() => resolve(m));
        };
        const poll = setInterval(check, 25);
        const limit = setTimeout(() => finish(() => reject(new Error(`timed out waiting for ${re}\nstdout: ${out}\nstderr: ${err}`))), ms);
        void exited.then(() => {
          check();
          finish(() => reject(new Error(`exited before printing ${re}\nstdout: ${out}\nstderr: ${err}`)));
        });
      });
    },
  };
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs a CLI command to completion. */
export async function runCli(args: string[], opts: { env?: Record<string, string>; timeoutMs?: number } = {}): Promise<CliResult> {
  const started = Date.now();
  const p = spawnCli(args, opts);
  const { code } = await p.exited;
  return { code, stdout: p.stdout(), stderr: p.stderr(), ms: Date.now() - started };
}

/** Kills every child still running (SIGKILL) and waits for them. */
export async function killAll(): Promise<void> {
  const waits = [...live].map(
    (c) =>
      new Promise<void>((resolve) => {
        if (c.exitCode !== null || c.signalCode !== null) return resolve();
        c.once('close', () => resolve());
        c.kill('SIGKILL');
      }),
  );
  await Promise.all(waits);
}

const tempDirs = new Set<string>();
// Removed when the test file's process exits: after every after() hook, so after killAll() has
// stopped the children that wrote into them. Synchronous, as an 'exit' listener must be.
process.once('exit', () => {
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
});

/** A new directory under the system temp folder, removed when the test file's process exits. */
export function tempDir(prefix = 'qm-test-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  tempDirs.add(dir);
  return dir;
}

/** A known failure: exactly one line on stderr, prefixed "queuemate:", no stack trace. */
export function oneLineError(stderr: string): string {
  const lines = stderr.trim().split('\n');
  if (lines.length !== 1 || !lines[0].startsWith('queuemate: ') || /\n\s+at /.test(stderr)) {
    throw new Error(`expected one "queuemate: …" line on stderr, got:\n${stderr}`);
  }
  return lines[0];
}

/** A PID that is not running: a child that has already exited. */
export async function deadPid(): Promise<number> {
  const c = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
  const pid = c.pid!;
  await new Promise((resolve) => c.on('close', resolve));
  return pid;
}

/** The tables of the domain (docs/product.md), all created by the migrations. */
export const EXPECTED_TABLES: readonly string[] = [
  'audit_log',
  'bulk_job_rows',
  'bulk_jobs',
  'idempotency_keys',
  'kpi_events',
  'mates',
  'notifications',
  'outbox_events',
  'process_fields',
  'process_rules',
  'processes',
  'queue_count_deltas',
  'queue_counts',
  'runs',
  'schema_migrations',
  'sign_in_failures',
  'signing_keys',
  'task_comments',
  'task_history',
  'tasks',
  'tenant_api_secrets',
  'tenants',
  'user_tokens',
  'users',
  'webhook_attempts',
  'webhook_deliveries',
  'webhook_subscriptions',
];
