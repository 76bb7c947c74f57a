/**
 * The package a robot developer installs: `npm pack -w client` makes a tarball holding the built
 * dist (ESM and type declarations), the README and the LICENSE, and nothing else; it installs into
 * an empty project outside the checkout with no registry (no runtime dependency), its types check
 * there, and the worker example runs there against a real server, resolving @queuemate/client from
 * that project's node_modules.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { clientServer, tasksOf, type ClientServer } from '../helpers/client-server.js';
import { tempDir } from '../foundation-support.js';
import { createTasksInChunks } from '../../client/src/index.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');

let s: ClientServer;
let project: string;

before(async () => {
  s = await clientServer('pk', [
    {
      processKey: 'invoices',
      fields: [
        { name: 'invoiceNo', type: 'text' },
        { name: 'amount', type: 'number' },
      ],
    },
  ]);
});
after(() => s.close());

test('npm pack -w client: dist, README and LICENSE only', async () => {
  const packDir = tempDir('client-pack-');
  const { stdout } = await run('npm', ['pack', '-w', 'client', '--json', '--pack-destination', packDir], {
    cwd: ROOT,
    maxBuffer: 16 * 1024 * 1024,
  });
  const [info] = JSON.parse(stdout.slice(stdout.indexOf('['))) as { filename: string; files: { path: string }[] }[];
  const files = info.files.map((f) => f.path).sort();
  assert.ok(
    files.every((f) => f.startsWith('dist/') || ['README.md', 'LICENSE', 'package.json'].includes(f)),
    files.join(', '),
  );
  for (const f of ['dist/index.js', 'dist/index.d.ts', 'dist/worker.js', 'dist/schema.d.ts', 'README.md', 'LICENSE'])
    assert.ok(files.includes(f), f);

  // an empty project elsewhere (the temporary directory is outside the checkout), installing offline
  project = tempDir('client-project-');
  fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'robot', private: true, type: 'module' }));
  await run('npm', ['install', '--offline', '--no-audit', '--no-fund', path.join(packDir, info.filename)], { cwd: project });
  const installed = JSON.parse(fs.readFileSync(path.join(project, 'node_modules/@queuemate/client/package.json'), 'utf8'));
  assert.equal(installed.dependencies, undefined, 'no runtime dependency');
  assert.deepEqual(fs.readdirSync(path.join(project, 'node_modules')), ['.package-lock.json', '@queuemate']);

  const { stdout: resolved } = await run(
    process.execPath,
    ['--input-type=module', '-e', "console.log(import.meta.resolve('@queuemate/client'))"],
    {
      cwd: project,
    },
  );
  assert.equal(resolved.trim(), `file://${fs.realpathSync(project)}/node_modules/@queuemate/client/dist/index.js`);
});

test("the package's types check in the project", () => {
  assert.ok(project, 'the pack test ran');
  const file = path.join(project, 'check.ts');
  fs.writeFileSync(
    file,
    `import { MateClient, runWorker, isTask, ManualError, type Task } from '@queuemate/client';
interface Invoice { invoiceNo: string; amount: number }
const client = new MateClient({ baseUrl: 'http://x', clientId: 'c', clientSecret: 's', username: 'u', password: 'p' });
export async function f(): Promise<number> {
  const t = await client.process<Invoice>('invoices').takeNext();
  if (isTask(t)) { const x: Task<Invoice> = t; return x.amount ?? 0; }
  await runWorker<Invoice>(client, 'invoices', (task) => { if (!task.invoiceNo) throw new ManualError('no'); }, { concurrency: 2 });
  return t.taskId;
}
`,
  );
  const program = ts.createProgram([file], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
    types: [],
    strict: true,
    noEmit: true,
  });
  const problems = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  assert.deepEqual(problems, []);
  const used = program
    .getSourceFiles()
    .map((f) => f.fileName)
    .filter((f) => f.includes('@queuemate/client'));
  assert.ok(used.length > 0 && used.every((f) => f.startsWith(fs.realpathSync(project)) && f.includes('/dist/')), used.join('\n'));
});

test('the worker example runs in the project, from the installed package', async () => {
  assert.ok(project, 'the pack test ran');
  // the example as a robot developer would ship it: its types stripped, nothing else changed
  const source = fs.readFileSync(path.join(ROOT, 'client/examples/worker.ts'), 'utf8');
  const js = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
  fs.writeFileSync(path.join(project, 'worker.js'), js);

  const client = s.client();
  await createTasksInChunks(
    client,
    'invoices',
    Array.from({ length: 40 }, (_, i) => ({ invoiceNo: `P-${i}`, amount: i === 3 ? 50_000 : 10 + i })),
  );
  const child = spawn(process.execPath, ['worker.js'], {
    cwd: project,
    env: {
      PATH: process.env.PATH,
      QUEUEMATE_URL: s.base,
      QUEUEMATE_CLIENT_ID: s.tenant.clientId,
      QUEUEMATE_API_SECRET: s.tenant.apiSecret,
      QUEUEMATE_MATE: s.tenant.mateUsername,
      QUEUEMATE_PASSWORD: s.tenant.matePassword,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));

  const id = await s.processId('invoices');
  let rows = await tasksOf(s.t, s.tenant.tenantId, id);
  for (let i = 0; i < 600 && rows.some((r) => r.queue === 'Ready') && child.exitCode === null; i++) {
    await new Promise((r) => setTimeout(r, 100));
    rows = await tasksOf(s.t, s.tenant.tenantId, id);
  }
  child.kill('SIGTERM');
  assert.equal(await exited, 0, out);
  assert.equal(rows.filter((r) => r.queue === 'Solved').length, 39, out);
  assert.equal(rows.find((r) => r.data.invoiceNo === 'P-3')?.queue, 'Manual');
});
