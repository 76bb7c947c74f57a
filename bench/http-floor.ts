/**
 * The minimal HTTP floor: a plain Fastify 5 server doing only the raw floor's statements on the
 * Queuemate tasks table, no auth, no history. What any HTTP service on this machine can reach.
 *
 *   GET  /take      one autocommitted take statement per request
 *   POST /complete  one autocommitted completion per request ({"id": n})
 *   GET  /gtake     group commit: all waiting takes in one `… LIMIT k FOR UPDATE SKIP LOCKED` statement
 *   POST /gcomplete group commit: all waiting completions in one `WHERE id = ANY(…)` statement
 *
 * One statement of each kind in flight, no timers. Prints `listening on <url>` when ready.
 * Arguments: DATABASE_URL, tenant id, process id, pool size.
 */
import Fastify from 'fastify';
import pg from 'pg';

const [url, tenant, proc, poolSize] = process.argv.slice(2);
const pool = new pg.Pool({ connectionString: url, max: Number(poolSize) || 10 });
const T = Number(tenant);
const P = Number(proc);

const TAKE = {
  name: 'floor_take',
  text: `UPDATE tasks SET locked_by_mate_id = 1, locked_until = now() + interval '1 hour', updated_at = now()
    WHERE tenant_id = $1 AND id = (SELECT id FROM tasks WHERE tenant_id = $1 AND process_id = $2 AND queue = 'Ready' AND locked_until IS NULL
      AND deleted_at IS NULL AND activation_date <= now() ORDER BY urgent DESC, queue_position, id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id`,
};
const COMPLETE = {
  name: 'floor_complete',
  text: `UPDATE tasks SET queue = 'Solved', locked_by_mate_id = NULL, locked_until = NULL, updated_at = now() WHERE tenant_id = $1 AND id = $2`,
};
const GTAKE = {
  name: 'floor_gtake',
  // the picked rows first (materialized), then the update by primary key: with \`id IN (subquery)\`
  // the planner may hash-join the subquery against a scan of the tenant's whole table, whose cost
  // grows with every solved task (5 ms of PostgreSQL CPU per task at M = 16)
  text: `WITH picked AS MATERIALIZED (SELECT id FROM tasks WHERE tenant_id = $1 AND process_id = $2 AND queue = 'Ready' AND locked_until IS NULL
      AND deleted_at IS NULL AND activation_date <= now() ORDER BY urgent DESC, queue_position, id LIMIT $3 FOR UPDATE SKIP LOCKED)
    UPDATE tasks t SET locked_by_mate_id = 1, locked_until = now() + interval '1 hour', updated_at = now()
    FROM picked WHERE t.tenant_id = $1 AND t.id = picked.id RETURNING t.id`,
};
const GCOMPLETE = {
  name: 'floor_gcomplete',
  text: `UPDATE tasks SET queue = 'Solved', locked_by_mate_id = NULL, locked_until = NULL, updated_at = now() WHERE tenant_id = $1 AND id = ANY($2::bigint[])`,
};

/** Everything waiting runs as one batch when the previous batch returns. */
function grouped<Req, Res>(run: (batch: Req[]) => Promise<Res[]>) {
  let waiting: { req: Req; resolve: (r: Res) => void; reject: (e: unknown) => void }[] = [];
  let running = false;
  const drain = async () => {
    running = true;
    while (waiting.length) {
      const batch = waiting;
      waiting = [];
      try {
        const res = await run(batch.map((b) => b.req));
        batch.forEach((b, i) => b.resolve(res[i]));
      } catch (err) {
        batch.forEach((b) => b.reject(err));
      }
    }
    running = false;
  };
  return (req: Req) =>
    new Promise<Res>((resolve, reject) => {
      waiting.push({ req, resolve, reject });
      if (!running) void drain();
    });
}

const gtake = grouped<null, number>(async (batch) => {
  const { rows } = await pool.query({ ...GTAKE, values: [T, P, batch.length] });
  return batch.map((_, i) => (rows[i] ? Number(rows[i].id) : -1));
});
const gcomplete = grouped<number, boolean>(async (ids) => {
  await pool.query({ ...GCOMPLETE, values: [T, ids] });
  return ids.map(() => true);
});

const app = Fastify({ logger: false });
app.get('/take', async () => {
  const { rows } = await pool.query({ ...TAKE, values: [T, P] });
  return { taskId: rows[0] ? Number(rows[0].id) : -1 };
});
app.post('/complete', async (req) => {
  await pool.query({ ...COMPLETE, values: [T, (req.body as { id: number }).id] });
  return { succeeded: true };
});
app.get('/gtake', async () => ({ taskId: await gtake(null) }));
app.post('/gcomplete', async (req) => ({ succeeded: await gcomplete((req.body as { id: number }).id) }));

await app.listen({ port: 0, host: '127.0.0.1' });
const a = app.server.address() as { port: number };
process.stdout.write(`listening on http://127.0.0.1:${a.port}\n`);
process.on('SIGTERM', () => {
  void app.close().then(() => pool.end().then(() => process.exit(0)));
});
