/**
 * A counting TCP proxy in front of PostgreSQL, for the bench's wire accounting (bench/README.md):
 * it forwards every byte unchanged and reads the server's side of the protocol for
 * ReadyForQuery messages. Each request a client sends (a simple query, or an extended-protocol
 * batch ending in Sync) is answered by exactly one ReadyForQuery, so their number is the number
 * of round trips; one whose transaction status is idle ('I') ends a transaction (an autocommitted
 * statement, a COMMIT or ROLLBACK), so those count the transactions.
 */
import net from 'node:net';

const READY_FOR_QUERY = 0x5a; // 'Z'
const IDLE = 0x49; // 'I'

export interface WireCounts {
  roundTrips: number;
  transactions: number;
}

/** Reads a server-to-client stream of typed messages (after the startup packet, which the server never sends). */
function counter(counts: WireCounts): (chunk: Buffer) => void {
  let header = Buffer.alloc(0);
  let left = 0; // bytes of the current message's body still to come
  let statusNext = false; // the next body byte is a ReadyForQuery's status
  return (buf) => {
    let i = 0;
    while (i < buf.length) {
      if (left > 0) {
        if (statusNext) {
          counts.roundTrips++;
          if (buf[i] === IDLE) counts.transactions++;
          statusNext = false;
        }
        const n = Math.min(left, buf.length - i);
        left -= n;
        i += n;
        continue;
      }
      const n = Math.min(5 - header.length, buf.length - i);
      header = Buffer.concat([header, buf.subarray(i, i + n)]);
      i += n;
      if (header.length === 5) {
        left = header.readInt32BE(1) - 4;
        statusNext = header[0] === READY_FOR_QUERY && left > 0;
        header = Buffer.alloc(0);
      }
    }
  };
}

export class CountingProxy {
  readonly counts: WireCounts = { roundTrips: 0, transactions: 0 };
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();

  constructor(private readonly target: { host: string; port: number }) {}

  /** Listens on an ephemeral port of 127.0.0.1; resolves with it. */
  async start(): Promise<number> {
    this.server = net.createServer((client) => {
      const upstream = net.connect(this.target);
      const count = counter(this.counts);
      this.sockets.add(client).add(upstream);
      client.setNoDelay(true);
      upstream.setNoDelay(true);
      client.on('data', (d) => upstream.write(d));
      upstream.on('data', (d) => {
        count(d);
        client.write(d);
      });
      const end = () => {
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      for (const s of [client, upstream]) {
        s.on('close', end);
        s.on('error', end);
      }
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as net.AddressInfo).port;
  }

  reset(): void {
    this.counts.roundTrips = 0;
    this.counts.transactions = 0;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((r) => this.server?.close(r));
  }
}
