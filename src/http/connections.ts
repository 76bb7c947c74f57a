/**
 * The connection cap (docs/operations.md, "Slow and idle clients"): which connections a server
 * process closes when it nears QUEUEMATE_MAX_CONNECTIONS, so that whoever holds many sockets does
 * not lock new clients out.
 *
 * Each open connection is in one of three states:
 *
 * - waiting: connected, its first request's headers not complete yet;
 * - active: a request on it is being answered;
 * - idle: a keep-alive connection between a finished answer and its next request's headers.
 *
 * When a connection arrives and more than NEAR_CAP of the cap are open, the idle connections that
 * have waited longest are closed (oldest idle first) until it is below again: an idle keep-alive
 * connection is a convenience for its client, which opens another when it needs one. When the cap
 * itself is passed and nothing is idle, the connection that has waited longest for its headers
 * (at least WAITING_GRACE_MS: a normal client sends them at once) is closed instead. Only when every
 * open connection is answering a request, or waited less than that, is the new one closed at once.
 * A slow sender also gets the short headers timeout (QUEUEMATE_HEADERS_TIMEOUT, set on the server
 * in app.ts): 408 and closed.
 */
import type http from 'node:http';
import type { Socket } from 'node:net';

/** The share of the cap above which idle connections are closed as new ones arrive. */
export const NEAR_CAP = 0.9;
/** A connection still without its headers after this long may be closed for a new one when the cap is reached. */
export const WAITING_GRACE_MS = 1000;

export interface ConnectionCounts {
  open: number;
  waiting: number;
  active: number;
  idle: number;
}

export type ClosedReason = 'idle' | 'waiting' | 'refused';

export interface ConnectionGuardOptions {
  maxConnections: number;
  /** told of each connection the guard closes, and why */
  onClose?: (reason: ClosedReason) => void;
  now?: () => number;
}

interface Tracked {
  /** requests on it not answered yet (more than one when a client pipelines) */
  inFlight: number;
}

export class ConnectionGuard {
  private readonly sockets = new Map<Socket, Tracked>();
  /** connected, no request yet: when each connected, oldest first */
  private readonly waiting = new Map<Socket, number>();
  /** between an answer and the next request: oldest idle first (a socket moves to the end each time it becomes idle) */
  private readonly idle = new Set<Socket>();
  private readonly highWater: number;
  private readonly now: () => number;

  constructor(
    server: http.Server,
    private readonly opts: ConnectionGuardOptions,
  ) {
    this.now = opts.now ?? (() => performance.now());
    this.highWater = Math.max(1, Math.floor(opts.maxConnections * NEAR_CAP));
    server.on('connection', (socket: Socket) => this.connected(socket));
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => this.request(req.socket as Socket, res));
  }

  counts(): ConnectionCounts {
    return {
      open: this.sockets.size,
      waiting: this.waiting.size,
      active: this.sockets.size - this.waiting.size - this.idle.size,
      idle: this.idle.size,
    };
  }

  private connected(socket: Socket): void {
    this.sockets.set(socket, { inFlight: 0 });
    this.waiting.set(socket, this.now());
    socket.once('close', () => this.forget(socket));
    // nearing the cap: the oldest idle connections make room
    while (this.sockets.size > this.highWater && this.idle.size > 0) {
      this.close(this.idle.values().next().value!, 'idle');
    }
    if (this.sockets.size <= this.opts.maxConnections) return;
    // at the cap with nothing idle: the connection that has waited longest for its headers, if it had time enough
    const [oldest, since] = this.waiting.entries().next().value!;
    if (oldest !== socket && this.now() - since >= WAITING_GRACE_MS) {
      this.close(oldest, 'waiting');
      return;
    }
    this.close(socket, 'refused');
  }

  private request(socket: Socket, res: http.ServerResponse): void {
    const tracked = this.sockets.get(socket);
    if (!tracked) return;
    tracked.inFlight++;
    this.waiting.delete(socket);
    this.idle.delete(socket);
    res.once('close', () => {
      tracked.inFlight--;
      if (tracked.inFlight === 0 && this.sockets.has(socket) && !socket.destroyed) this.idle.add(socket);
    });
  }

  private close(socket: Socket, reason: ClosedReason): void {
    this.forget(socket);
    socket.destroy();
    this.opts.onClose?.(reason);
  }

  private forget(socket: Socket): void {
    this.sockets.delete(socket);
    this.waiting.delete(socket);
    this.idle.delete(socket);
  }
}
