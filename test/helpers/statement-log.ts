/**
 * The statement log of a test run: loaded with `node --import ./test/helpers/statement-log.ts` and
 * QUEUEMATE_STATEMENT_LOG=<file>, it records the text of every statement sent through node-postgres
 * (both stores: PGlite is reached through its node-postgres adapter) and appends the distinct texts
 * to the file when the process exits, one JSON object a line: { sql, app }. `app` tells a statement
 * that Queuemate's own code sent (a frame under src/ in its stack, async frames included) from a
 * test's own look at the database, which is not checked (test/tenant-statements.test.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';

const file = process.env.QUEUEMATE_STATEMENT_LOG;
if (file) {
  Error.stackTraceLimit = Math.max(Error.stackTraceLimit, 60);
  const src = `${path.sep}src${path.sep}`;
  const store = path.join('src', 'db', 'store.ts');
  const seen = new Map<string, boolean>();
  const original = pg.Client.prototype.query as (...args: unknown[]) => unknown;
  (pg.Client.prototype as unknown as { query: unknown }).query = function (this: pg.Client, ...args: unknown[]) {
    const first = args[0];
    const text = typeof first === 'string' ? first : (first as { text?: string } | null)?.text;
    if (typeof text === 'string') {
      // the store's own wrapper of every connection (src/db/store.ts) is in every statement's stack
      const app = new Error().stack!.split('\n').some((l) => l.includes(src) && !l.includes('node_modules') && !l.includes(store));
      seen.set(text, (seen.get(text) ?? false) || app);
    }
    return original.apply(this, args);
  };
  process.on('exit', () => {
    const lines = [...seen].map(([sql, app]) => JSON.stringify({ sql, app }) + '\n').join('');
    fs.appendFileSync(file, lines);
  });
}
