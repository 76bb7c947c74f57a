/**
 * The log test's scanner (scripts/log-scan.ts, issue 7): a secret recorded in secrets.txt and
 * found in a log line is reported with its file and line, as are token-looking strings; a clean
 * log is not; secrets too short to search for are counted as skipped.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { scanLogs, describeScan } from '../scripts/log-scan.js';

function logDir(files: Record<string, string>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qm-log-scan-'));
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
  return dir;
}

const line = (msg: string) => JSON.stringify({ level: 30, time: 1, msg }) + '\n';

test('a recorded secret in a log line is reported with its file and line', (t) => {
  const dir = logDir({
    'secrets.txt': 'Sup3r.Secret(value)+\nshort\nanother-secret-value\n',
    'a-1.log': line('request completed') + line('oops Sup3r.Secret(value)+ leaked'),
    'b-2.log': line('all fine'),
  });
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const scan = scanLogs(dir);
  assert.equal(scan.files, 2);
  assert.equal(scan.lines, 3);
  assert.equal(scan.secrets, 2);
  assert.equal(scan.skipped, 1, '"short" is under 8 characters');
  assert.equal(scan.hits.length, 1);
  assert.equal(scan.hits[0].file, 'a-1.log');
  assert.equal(scan.hits[0].line, 2);
  assert.ok(!scan.hits[0].match.includes('Sup3r.Secret(value)+'), 'the report does not print the secret whole');
  assert.match(describeScan(scan).join('\n'), /3 log lines in 2 files, 2 secrets checked .*1 found\n {2}a-1\.log:2: /);
});

test('token-looking strings are reported though not recorded', (t) => {
  const dir = logDir({
    'c-3.log': line('Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl') + line('token qmp_abcdefghijklmnop'),
  });
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const scan = scanLogs(dir);
  assert.deepEqual(
    scan.hits.map((h) => h.line),
    [1, 2],
  );
});

test('a clean log is not reported', (t) => {
  const dir = logDir({
    'secrets.txt': 'another-secret-value\n',
    'a-1.log': line('request completed for /api/OkToRun/UK?access_token=[redacted]'),
    'ignored.txt': 'another-secret-value\n',
  });
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const scan = scanLogs(dir);
  assert.equal(scan.lines, 1);
  assert.deepEqual(scan.hits, []);
});
