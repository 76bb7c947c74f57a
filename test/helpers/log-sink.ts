/**
 * The suite's log sink (issue 7, the log test): when QUEUEMATE_TEST_LOG_DIR is set (scripts/test.ts
 * sets it), every app the tests build writes its log lines to a file in that directory, and the
 * helpers that make or receive a secret (passwords, API secrets, tokens, session cookies, unique key
 * values) append it to `secrets.txt` there. After the run, scripts/log-scan.ts looks for every
 * recorded secret in every log line. Without the variable nothing is written and nothing changes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { AppDeps } from '../../src/app.js';
import type { Config, LogLevel } from '../../src/config.js';

export const LOG_DIR_ENV = 'QUEUEMATE_TEST_LOG_DIR';
export const SECRETS_FILE = 'secrets.txt';

function logDir(): string | undefined {
  return process.env[LOG_DIR_ENV] || undefined;
}

let fd: number | undefined;
function logFd(dir: string): number {
  // one file per test process; appends are synchronous so nothing is lost when the process exits
  fd ??= fs.openSync(path.join(dir, `${path.basename(process.argv[1] ?? 'test', '.ts')}-${process.pid}.log`), 'a');
  return fd;
}

/** Appends log lines to this process's file in the sink (no-op without the variable). */
export function writeLogLines(text: string): void {
  const dir = logDir();
  if (!dir || text.length === 0) return;
  fs.writeSync(logFd(dir), text.endsWith('\n') ? text : `${text}\n`);
}

/**
 * The log stream and level for an app a test builds: unchanged without the sink; with it, the
 * sink (teed to the test's own stream when it passed one), at `info` unless the test chose a level.
 */
export function suiteLog(
  own: NodeJS.WritableStream | undefined,
  level: LogLevel,
): { logStream: NodeJS.WritableStream | undefined; logLevel: LogLevel } {
  if (!logDir()) return { logStream: own, logLevel: level };
  const sink = new Writable({
    write(chunk, _enc, done) {
      writeLogLines(String(chunk));
      if (own) own.write(chunk, done);
      else done();
    },
  });
  return { logStream: sink, logLevel: level === 'silent' ? 'info' : level };
}

/** Records secrets the suite made or received, for the scan (no-op without the variable). */
export function recordSecret(...values: Array<string | null | undefined>): void {
  const dir = logDir();
  if (!dir) return;
  const lines = values.filter((v): v is string => typeof v === 'string' && v.length > 0 && !/[\r\n]/.test(v));
  if (lines.length > 0) fs.appendFileSync(path.join(dir, SECRETS_FILE), lines.map((v) => `${v}\n`).join(''));
}

/** Field names declared unique by the seed helpers: their values in request bodies are secrets. */
const uniqueFields = new Set<string>();
export function recordUniqueFields(processes: Array<{ fields?: Array<{ name: string; unique?: boolean }> }>): void {
  if (!logDir()) return;
  for (const p of processes) for (const f of p.fields ?? []) if (f.unique) uniqueFields.add(f.name);
}

/** Records the values of unique fields found at the top level of a request body (or each element of an array). */
export function recordBodySecrets(body: unknown): void {
  if (!logDir() || uniqueFields.size === 0) return;
  for (const item of Array.isArray(body) ? body : [body]) {
    if (item === null || typeof item !== 'object') continue;
    for (const name of uniqueFields) {
      const v = (item as Record<string, unknown>)[name];
      if (typeof v === 'string') recordSecret(v);
    }
  }
}

/** createApp's arguments with the suite's log sink, for tests that build a second app themselves. */
export function withSuiteLog(config: Config, deps: AppDeps): [Config, AppDeps] {
  const log = suiteLog(deps.logStream, config.logLevel);
  return [
    { ...config, logLevel: log.logLevel },
    { ...deps, logStream: log.logStream },
  ];
}
