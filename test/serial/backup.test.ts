/**
 * `queuemate backup` and `queuemate restore` (docs/operations.md, "Backups and restores"): a backup
 * taken from a running server under a stream of creates and solves, restored into a new data
 * directory, holds every change acknowledged before the backup's instant and is consistent (each
 * writer's changes are a prefix of what it did). Then the refusals, each one clear line. The
 * commands are for the embedded store; on PostgreSQL only the refusal runs.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { openStore } from '../../src/db/store.js';
import { DATABASE_URL } from '../helpers/db.js';
import { spawnCli, runCli, killAll, tempDir, oneLineError, type CliProcess } from '../foundation-support.js';
import { recordSecret } from '../helpers/log-sink.js';

after(killAll);

const LISTENING = /Queuemate is listening on (http:\/\/127\.0\.0\.1:\d+) \(store: ([^)]*)\)/;

async function startServer(dataDir: string): Promise<{ proc: CliProcess; url: string }> {
  const proc = spawnCli(['start', '--port', '0', '--data-dir', dataDir, '--shutdown-timeout', '60'], { timeoutMs: 300_000 });
  const m = await proc.waitFor(LISTENING, 240_000);
  return { proc, url: m[1] };
}

async function token(url: string, out: string): Promise<string> {
  const secret = out.match(/^ {2}API secret: +(\S+)$/m)![1];
  const password = out.match(/^ {2}Mate: +demo-mate \/ (\S+)$/m)![1];
  recordSecret(secret, password);
  const res = await fetch(`${url}/connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'password', client_id: 'demo', client_secret: secret, username: 'demo-mate', password }),
  });
  assert.equal(res.status, 200);
  const t = ((await res.json()) as { access_token: string }).access_token;
  recordSecret(t);
  return t;
}

interface Ack {
  worker: number;
  n: number;
  kind: 'create' | 'solve';
  taskId: number;
  at: number;
}

test('backup with DATABASE_URL set: one line naming pg_dump', async () => {
  const r = await runCli(['backup', '--to', path.join(tempDir('qm-backup-pg-'), 'b.tar.gz')], {
    env: { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' },
  });
  assert.equal(r.code, 2);
  assert.match(oneLineError(r.stderr), /^queuemate: backup copies the embedded store; on PostgreSQL .* use pg_dump/);
  const r2 = await runCli(['restore', '--from', 'x.tar.gz'], { env: { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' } });
  assert.equal(r2.code, 2);
  assert.match(oneLineError(r2.stderr), /^queuemate: restore fills an embedded store; on PostgreSQL .* use pg_restore/);
});

test(
  'an online backup under load holds every acknowledged change; restore refuses what it must',
  { skip: DATABASE_URL ? 'backup and restore are for the embedded store; PostgreSQL backups use pg_dump (docs/operations.md)' : false },
  async () => {
    const dir = tempDir('qm-backup-');
    const dataDir = path.join(dir, 'data');
    const file = path.join(dir, 'backup.tar.gz');
    const server = await startServer(dataDir);
    const bearer = await token(server.url, server.proc.stdout());
    const api = async (method: string, route: string, body?: unknown) => {
      const res = await fetch(`${server.url}${route}`, {
        method,
        headers: { authorization: `Bearer ${bearer}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      return { status: res.status, body: (await res.json()) as Record<string, any> };
    };

    // three writers, each a sequence of creates, every third followed by a solve of that task
    const acks: Ack[] = [];
    let stop = false;
    const writer = async (worker: number) => {
      for (let n = 0; !stop; n++) {
        const created = await api('POST', '/api/CreateTask/demo', { coreSystemKey: `w${worker}-${n}`, textField: `n ${n}` });
        assert.equal(created.status, 200, JSON.stringify(created.body));
        assert.equal(created.body.succeeded, true, JSON.stringify(created.body));
        acks.push({ worker, n, kind: 'create', taskId: created.body.taskId, at: Date.now() });
        if (n % 3 === 2) {
          const taken = await api('GET', '/api/TakeNext/demo');
          assert.equal(taken.status, 200);
          if (taken.body.taskId > 0) {
            const solved = await api('POST', '/api/Solved', { taskId: taken.body.taskId });
            assert.equal(solved.body.succeeded, true, JSON.stringify(solved.body));
            acks.push({ worker, n, kind: 'solve', taskId: taken.body.taskId, at: Date.now() });
          }
        }
      }
    };
    const writers = [0, 1, 2].map(writer);
    while (acks.length < 30) await new Promise((r) => setTimeout(r, 50));

    const backup = await runCli(['backup', '--to', file, '--data-dir', dataDir, '--json'], { timeoutMs: 120_000 });
    const acksDuringBackup = acks.length;
    assert.equal(backup.code, 0, backup.stderr);
    const report = JSON.parse(backup.stdout) as { file: string; bytes: number; files: number; takenAt: string; online: boolean };
    assert.equal(report.online, true, 'taken from the running server');
    assert.equal(report.file, file);
    assert.equal(report.bytes, fs.statSync(file).size);
    const takenAt = Date.parse(report.takenAt);
    // the server kept answering while the backup was made, and the writers go on after it
    while (acks.length < acksDuringBackup + 10) await new Promise((r) => setTimeout(r, 50));
    stop = true;
    await Promise.all(writers);
    assert.deepEqual(await (server.proc.child.kill('SIGTERM'), server.proc.exited), { code: 0, signal: null });
    assert.equal(fs.existsSync(path.join(dataDir, 'queuemate.sock')), false, 'the socket goes with the server');
    assert.deepEqual(
      fs.readdirSync(dataDir).filter((n) => n.startsWith('backup-')),
      [],
      'no copy is left in the data directory',
    );

    const before = acks.filter((a) => a.at < takenAt);
    const later = acks.filter((a) => a.at > takenAt);
    assert.ok(before.length >= 30, `changes acknowledged before the backup: ${before.length}`);
    assert.ok(later.length >= 10, `changes acknowledged after it: ${later.length}`);

    // restore into a new directory, then read what it holds
    const restoredDir = path.join(dir, 'restored');
    const restored = await runCli(['restore', '--from', file, '--data-dir', restoredDir, '--json'], { timeoutMs: 120_000 });
    assert.equal(restored.code, 0, restored.stderr);
    const rr = JSON.parse(restored.stdout) as { takenAt: string; tenants: number; tasks: number };
    assert.equal(rr.takenAt, report.takenAt);
    assert.equal(rr.tenants, 1);
    const store = await openStore({ databaseUrl: null, dataDir: restoredDir });
    let tasks: Map<number, { key: string; queue: string }>;
    try {
      const { rows } = await store.pool.query<{ id: number; key: string; queue: string }>(
        `SELECT id, data->>'coreSystemKey' AS key, queue FROM tasks`,
      );
      tasks = new Map(rows.map((r) => [r.id, r]));
      assert.equal(rr.tasks, rows.length);
    } finally {
      await store.close();
    }
    for (const a of before) {
      const t = tasks.get(a.taskId);
      assert.ok(t, `task ${a.taskId} (${a.kind} by writer ${a.worker}, #${a.n}) acknowledged before the backup is in it`);
      if (a.kind === 'solve') assert.equal(t.queue, 'Solved', `the solve of ${a.taskId} acknowledged before the backup is in it`);
    }
    // consistency: each writer's creates in the backup are its first k creates, no gaps
    for (const w of [0, 1, 2]) {
      const created = acks.filter((a) => a.worker === w && a.kind === 'create').sort((x, y) => x.n - y.n);
      const present = created.map((a) => tasks.has(a.taskId));
      const k = present.indexOf(false);
      if (k >= 0)
        assert.ok(
          present.slice(k).every((p) => !p),
          `writer ${w}: the backup holds a prefix of its creates`,
        );
    }
    assert.ok(
      acks.some((a) => a.kind === 'create' && a.at > takenAt && !tasks.has(a.taskId)),
      'changes made after the backup are not in it (it is a copy of one instant)',
    );

    // the restored store serves
    const again = await startServer(restoredDir);
    const health = await fetch(`${again.url}/readyz`);
    assert.equal(health.status, 200);
    assert.deepEqual(await (again.proc.child.kill('SIGTERM'), again.proc.exited), { code: 0, signal: null });

    // a stopped store is backed up directly
    const offline = await runCli(['backup', '--to', path.join(dir, 'offline.tar.gz'), '--data-dir', dataDir], { timeoutMs: 120_000 });
    assert.equal(offline.code, 0, offline.stderr);
    assert.match(offline.stdout, /^Backup of .* written to .*offline\.tar\.gz \(.* files\), taken at \S+ from the stopped store\.\n$/);

    // refusals: one line each, nothing overwritten
    const exists = await runCli(['backup', '--to', file, '--data-dir', dataDir]);
    assert.equal(exists.code, 2);
    assert.equal(oneLineError(exists.stderr), `queuemate: ${file} exists; choose a new file name (a backup never overwrites a file)`);
    const notEmpty = await runCli(['restore', '--from', file, '--data-dir', restoredDir]);
    assert.equal(notEmpty.code, 2);
    assert.match(
      oneLineError(notEmpty.stderr),
      /^queuemate: data directory .* is not empty \(.*\); restore into an empty or new directory$/,
    );
    const bogus = path.join(dir, 'bogus.tar.gz');
    fs.writeFileSync(bogus, zlib.gzipSync(Buffer.from('not a tar archive'.repeat(100))));
    const bad = await runCli(['restore', '--from', bogus, '--data-dir', path.join(dir, 'bad')]);
    assert.equal(bad.code, 2);
    assert.match(oneLineError(bad.stderr), /^queuemate: cannot restore .*bogus\.tar\.gz: not a Queuemate backup/);
    assert.equal(fs.existsSync(path.join(dir, 'bad', 'pgdata')), false, 'a failed restore leaves no store behind');
    // a backup cut short is refused whole
    const cut = path.join(dir, 'cut.tar.gz');
    const whole = zlib.gunzipSync(fs.readFileSync(file));
    fs.writeFileSync(cut, zlib.gzipSync(whole.subarray(0, Math.floor(whole.length / 2))));
    const short = await runCli(['restore', '--from', cut, '--data-dir', path.join(dir, 'cut')]);
    assert.equal(short.code, 2);
    assert.match(oneLineError(short.stderr), /^queuemate: cannot restore .*cut\.tar\.gz: the backup is incomplete/);
    assert.equal(fs.existsSync(path.join(dir, 'cut', 'pgdata')), false);
  },
);
