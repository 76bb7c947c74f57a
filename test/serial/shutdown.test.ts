/**
 * Graceful shutdown under load (reliability plan #11): SIGTERM while creates are in flight. The
 * requests already being served finish and are answered; later ones are refused (503 or a refused
 * connection); every answered create is in the store and nothing else is; the exit status is 0.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { sql } from 'kysely';
import { spawnCli, killAll, tempDir } from '../foundation-support.js';
import { DATABASE_URL, emptyDatabase } from '../helpers/db.js';
import { openStore, type Store } from '../../src/db/store.js';

const REQUESTS = 30;
const ITEMS = 200;

const cleanups: Array<() => Promise<void>> = [];
after(async () => {
  await killAll();
  for (const c of cleanups) await c();
});

test('SIGTERM during a burst of creates: in-flight ones finish, nothing is half-written, exit 0', async () => {
  let args: string[] = [];
  let env: Record<string, string> = {};
  let open: () => Promise<Store>;
  if (DATABASE_URL) {
    const db = await emptyDatabase();
    cleanups.push(db.close);
    env = { DATABASE_URL: db.url! };
    open = async () => db.store;
  } else {
    const dir = tempDir('qm-shutdown-');
    args = ['--data-dir', dir];
    let store: Store | null = null;
    open = async () => (store = await openStore({ databaseUrl: null, dataDir: dir }));
    cleanups.push(async () => {
      await store?.close();
      fs.rmSync(dir, { recursive: true, force: true });
    });
  }
  const server = spawnCli(['start', '--port', '0', '--log-level', 'warn', ...args], { env, timeoutMs: 90_000 });
  const base = (await server.waitFor(/listening on (http:\/\/\S+)/, 60_000))[1];
  const out = server.stdout();
  const field = (label: string) => new RegExp(`${label}:\\s+(\\S+)`).exec(out)![1];
  const [mateName, matePassword] = /Mate:\s+(\S+) \/ (\S+)/.exec(out)!.slice(1);
  const form = new URLSearchParams({
    grant_type: 'password',
    client_id: field('Client Id'),
    client_secret: field('API secret'),
    username: mateName,
    password: matePassword,
  });
  const token = (await (await fetch(`${base}/connect/token`, { method: 'POST', body: form })).json()).access_token as string;

  const body = (r: number) => JSON.stringify(Array.from({ length: ITEMS }, (_, i) => ({ coreSystemKey: `R${r}-${i}`, numberField: i })));
  let firstAnswered!: () => void;
  const oneAnswered = new Promise<void>((resolve) => (firstAnswered = resolve));
  const results = await Promise.all([
    ...Array.from({ length: REQUESTS }, async (_, r) => {
      try {
        const res = await fetch(`${base}/api/CreateTasks/demo`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: body(r),
        });
        const json = await res.json().catch(() => null);
        firstAnswered();
        return { status: res.status, created: res.status === 200 && json?.succeeded ? (json.taskIds as number[]).length : 0 };
      } catch {
        return { status: 0, created: 0 }; // refused or closed before it was served
      }
    }),
    oneAnswered.then(() => {
      server.child.kill('SIGTERM');
      return { status: -1, created: 0 };
    }),
  ]);
  const { code } = await server.exited;
  assert.equal(code, 0, `exit status\n${server.stderr()}`);
  const answers = results.filter((r) => r.status !== -1);
  assert.ok(
    answers.every((r) => [0, 200, 503].includes(r.status)),
    `statuses: ${answers.map((r) => r.status)}`,
  );
  const acknowledged = answers.reduce((n, r) => n + r.created, 0);
  assert.ok(acknowledged >= ITEMS, 'at least the first create was answered');
  const store = await open();
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM tasks`.execute(store.db);
  assert.equal(rows[0].n, acknowledged, 'every answered create is stored, and no create that was not answered is half there');
});
