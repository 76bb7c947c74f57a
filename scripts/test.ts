/**
 * `npm test`: the suite in two passes, then a check that it left no temporary directory behind.
 *
 * 1. test/*.test.ts run several files at a time (`--test-concurrency`, default the machine's
 *    available parallelism, at least 2; QUEUEMATE_TEST_CONCURRENCY overrides). Each file has its
 *    own database (test/helpers/db.ts), so files do not see each other.
 * 2. test/serial/*.test.ts run one at a time, after the first pass: the files that start real
 *    server processes and kill them, put the machine under load, or bound how long something
 *    takes (see test/serial/README.md). Running them beside others would make them flaky.
 *    test/browser/*.test.ts (the web app in a real chromium) run in this pass too.
 *
 * Both passes run with TMPDIR set to a directory of their own; whatever the tests leave in it
 * (other than tsx's compile cache) is listed and fails the run. With file arguments
 * (`npm test -- test/kpi.test.ts`) only those files run, in one pass.
 *
 * The log test (issue 7): the passes run with QUEUEMATE_TEST_LOG_DIR set to a directory inside that
 * TMPDIR, where every app the tests build writes its log lines and the helpers record each secret
 * they make or receive (test/helpers/log-sink.ts). Afterwards scripts/log-scan.ts searches every
 * log line for every secret and for token-looking strings; any hit fails the run.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describeScan, scanLogs } from './log-scan.js';

function testFiles(dir: string): string[] {
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.test.ts'))
    .sort()
    .map((f) => path.join(dir, f));
}

function run(files: string[], concurrency: number, env: NodeJS.ProcessEnv): number {
  if (files.length === 0) return 0;
  const args = ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, ...files];
  const r = spawnSync(process.execPath, args, { stdio: 'inherit', env });
  return r.status ?? 1;
}

const concurrency = Number(process.env.QUEUEMATE_TEST_CONCURRENCY) || Math.max(2, os.availableParallelism());
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'queuemate-test-run-'));
const logDir = path.join(tmp, 'logs');
fs.mkdirSync(logDir);
const env = { ...process.env, TMPDIR: tmp, TMP: tmp, TEMP: tmp, QUEUEMATE_TEST_LOG_DIR: logDir };

let status: number;
const started = Date.now();
const given = process.argv.slice(2);
if (given.length > 0) {
  status = run(given, concurrency, env);
} else {
  const parallel = run(testFiles('test'), concurrency, env);
  const serial = run([...testFiles('test/serial'), ...testFiles('test/browser')], 1, env);
  status = parallel || serial;
}

const scan = scanLogs(logDir);
console.error(`\n${describeScan(scan).join('\n')}`);
if (scan.hits.length > 0) {
  console.error('A secret reached the log (see above): the file is the test file and its process id.');
  status ||= 1;
}
fs.rmSync(logDir, { recursive: true, force: true });

const left = fs.readdirSync(tmp).filter((name) => !name.startsWith('tsx-'));
fs.rmSync(tmp, { recursive: true, force: true });
if (left.length > 0) {
  console.error(`\nThe tests left ${left.length} temporary director${left.length === 1 ? 'y' : 'ies'} behind: ${left.join(', ')}`);
  status ||= 1;
}
console.error(`\nnpm test: ${((Date.now() - started) / 1000).toFixed(1)} s, --test-concurrency=${concurrency} for test/*.test.ts`);
process.exit(status);
