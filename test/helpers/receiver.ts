/** A webhook receiver on 127.0.0.1 for tests: records each request; answers as told. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  json: any;
}

/** What to do with a request: a status to answer, or 'hang' (never answer). */
export type Behaviour = number | 'hang';

export class Receiver {
  readonly received: Received[] = [];
  /** answers for the next requests, in order; then `otherwise` */
  plan: Behaviour[] = [];
  otherwise: Behaviour = 200;
  /** ms it waits before answering each request (a slow endpoint) */
  delayMs = 0;
  /** when each request arrived (performance.now()), in the order of `received` */
  readonly arrivedAt: number[] = [];
  private readonly hanging = new Set<http.ServerResponse>();
  private constructor(private readonly server: http.Server) {}

  static async start(): Promise<Receiver> {
    const server = http.createServer();
    const r = new Receiver(server);
    server.on('request', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        r.received.push({ headers: req.headers, body, json: JSON.parse(body) });
        r.arrivedAt.push(performance.now());
        const b = r.plan.length ? r.plan.shift()! : r.otherwise;
        if (b === 'hang') {
          r.hanging.add(res);
          return;
        }
        const answer = () => res.writeHead(b, { 'content-type': 'text/plain' }).end(b >= 200 && b < 300 ? 'thanks' : `receiver says ${b}`);
        if (r.delayMs > 0) {
          r.hanging.add(res);
          setTimeout(() => {
            r.hanging.delete(res);
            if (!res.destroyed) answer();
          }, r.delayMs);
        } else answer();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return r;
  }

  /**
   * Resolves once `n` requests have arrived: a delivery the server's own dispatcher timer started
   * may still be on its way when a test's kick finds nothing left to claim. Fails after `ms`.
   */
  async waitFor(n: number, ms = 10_000): Promise<void> {
    const until = Date.now() + ms;
    while (this.received.length < n) {
      if (Date.now() > until) throw new Error(`the receiver got ${this.received.length} requests, not ${n}, within ${ms} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
