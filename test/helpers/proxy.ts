/** A TCP proxy in front of PostgreSQL that a test can cut and heal (fault tests). */
import net from 'node:net';

export interface FaultProxy {
  port: number;
  /** Drops every open connection and refuses new ones until heal(). */
  cut(): void;
  heal(): void;
  close(): Promise<void>;
}

export async function startProxy(targetHost: string, targetPort: number): Promise<FaultProxy> {
  let down = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    if (down) {
      client.destroy();
      return;
    }
    const upstream = net.connect(targetPort, targetHost);
    sockets.add(client);
    sockets.add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    cut() {
      down = true;
      for (const s of sockets) s.destroy();
      sockets.clear();
    },
    heal() {
      down = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
