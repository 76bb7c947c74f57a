/**
 * Group commit for hot paths: requests for the same key that arrive while `maxInFlight` batches
 * for that key are running wait for one to finish and then run together as the next batch. A lone
 * caller runs at once (no added latency); under load N waiting callers share one transaction.
 */
export class Coalescer<Req, Res> {
  private readonly queues = new Map<string, Queue<Req, Res>>();

  constructor(
    private readonly run: (batch: Req[]) => Promise<Res[]>,
    /** bounds one transaction's size and lock footprint */
    private readonly maxBatch = 64,
    /** batches of one key running at once: overlaps one batch's commit with the next one's work */
    private readonly maxInFlight = 1,
  ) {}

  submit(key: string, req: Req): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      let q = this.queues.get(key);
      if (!q) {
        q = { waiting: [], running: 0 };
        this.queues.set(key, q);
      }
      q.waiting.push({ req, resolve, reject });
      if (q.running < this.maxInFlight) void this.drain(key, q);
    });
  }

  private async drain(key: string, q: Queue<Req, Res>): Promise<void> {
    q.running++;
    while (q.waiting.length) {
      const batch = q.waiting.splice(0, this.maxBatch);
      try {
        const results = await this.run(batch.map((e) => e.req));
        batch.forEach((e, i) => e.resolve(results[i]));
      } catch (err) {
        if (batch.length === 1) {
          batch[0].reject(err);
          continue;
        }
        // one failing request must not fail the others: run them one by one
        for (const e of batch) {
          try {
            e.resolve((await this.run([e.req]))[0]);
          } catch (one) {
            e.reject(one);
          }
        }
      }
    }
    q.running--;
    if (q.running === 0) this.queues.delete(key);
  }
}

interface Queue<Req, Res> {
  waiting: Entry<Req, Res>[];
  running: number;
}

interface Entry<Req, Res> {
  req: Req;
  resolve: (r: Res) => void;
  reject: (e: unknown) => void;
}
