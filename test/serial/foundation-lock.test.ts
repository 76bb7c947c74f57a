/**
 * The data-directory lock of the embedded store: one process per directory, a clear one-line
 * refusal for a second one, and a stale lock left by a killed process is taken over.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { lockDataDir, DataDirInUseError } from '../../src/db/lock.js';
import { spawnCli, runCli, killAll, tempDir, oneLineError, deadPid } from '../foundation-support.js';

after(killAll);

const lockFile = (dir: string) => path.join(dir, 'queuemate.lock');

test('the lock file holds our PID while held and is removed on release', () => {
  const dir = tempDir();
  const lock = lockDataDir(dir);
  assert.equal(fs.readFileSync(lockFile(dir), 'utf8').trim(), String(process.pid));
  assert.throws(() => lockDataDir(dir), DataDirInUseError, 'a second open in the same process is refused too');
  lock.release();
  assert.equal(fs.existsSync(lockFile(dir)), false);
  assert.deepEqual(fs.readdirSync(dir), [], 'no temporary files are left behind');
  lockDataDir(dir).release();
});

test('a lock held by a live process is refused with its PID', () => {
  const dir = tempDir();
  fs.writeFileSync(lockFile(dir), `${process.ppid}\n`);
  assert.throws(
    () => lockDataDir(dir),
    (err: unknown) => {
      assert.ok(err instanceof DataDirInUseError);
      assert.equal(err.pid, process.ppid);
      assert.equal(err.message, `data directory ${dir} in use by PID ${process.ppid}; stop that process or choose another --data-dir`);
      return true;
    },
  );
  assert.equal(fs.readFileSync(lockFile(dir), 'utf8').trim(), String(process.ppid), 'the holder keeps its lock');
});

test('a stale lock from a dead PID is taken over', async () => {
  const dir = tempDir();
  fs.writeFileSync(lockFile(dir), `${await deadPid()}\n`);
  const lock = lockDataDir(dir);
  assert.equal(fs.readFileSync(lockFile(dir), 'utf8').trim(), String(process.pid));
  lock.release();
});

test('a lock naming our own PID that we do not hold is stale (PID reuse after a container restart)', () => {
  const dir = tempDir();
  fs.writeFileSync(lockFile(dir), `${process.pid}\n`);
  const lock = lockDataDir(dir);
  lock.release();
  assert.equal(fs.existsSync(lockFile(dir)), false);
});

test('an empty or garbled lock file is stale', () => {
  for (const content of ['', 'not a pid\n']) {
    const dir = tempDir();
    fs.writeFileSync(lockFile(dir), content);
    lockDataDir(dir).release();
  }
});

test('a second process on a locked data directory fails fast with one line naming the PID', async () => {
  const dir = tempDir();
  // A live holder that is not a Queuemate: this test runner.
  fs.writeFileSync(lockFile(dir), `${process.pid}\n`);
  const results = await Promise.all([
    runCli(['start', '--data-dir', dir, '--port', '0'], { timeoutMs: 20_000 }),
    runCli(['migrate', '--data-dir', dir], { timeoutMs: 20_000 }),
  ]);
  for (const r of results) {
    assert.notEqual(r.code, 0);
    assert.equal(
      oneLineError(r.stderr),
      `queuemate: data directory ${dir} in use by PID ${process.pid}; stop that process or choose another --data-dir`,
    );
    assert.equal(r.stdout, '');
  }
  assert.equal(fs.readFileSync(lockFile(dir), 'utf8').trim(), String(process.pid), 'the refused process leaves the lock alone');
});

test('a process killed with SIGKILL leaves a stale lock that the next process takes over', async () => {
  const dir = tempDir();
  // `migrate` takes the lock first, then spends seconds opening a new PGlite directory: kill it there.
  const victim = spawnCli(['migrate', '--data-dir', dir], { timeoutMs: 20_000 });
  const deadline = Date.now() + 15_000;
  while (!fs.existsSync(lockFile(dir)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  assert.equal(fs.readFileSync(lockFile(dir), 'utf8').trim(), String(victim.pid));
  victim.child.kill('SIGKILL');
  await victim.exited;
  assert.equal(fs.readFileSync(lockFile(dir), 'utf8').trim(), String(victim.pid), 'the lock outlives a killed process');

  const next = await runCli(['migrate', '--data-dir', dir, '--json'], { timeoutMs: 30_000 });
  assert.equal(next.code, 0, next.stderr);
  assert.ok(Array.isArray(JSON.parse(next.stdout).applied));
  assert.equal(fs.existsSync(lockFile(dir)), false, 'released on exit');
});
