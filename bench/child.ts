/**
 * What the bench scripts share: a keep-alive JSON client over node:http, and a server started as a
 * child process, resolved with its address once it prints its listening line.
 */
import http from 'node:http';
import { spawn, type ChildProcess } from 'node:child_process';

export class HttpClient {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  token: string | null = null;
  constructor(readonly base: string) {}
  call(method: string, p: string, body?: unknown, type = 'application/json'): Promise<any> {
    const data = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = http.request(
        `${this.base}${p}`,
        {
          method,
          agent: this.agent,
          // content-length and one write: a chunked body's terminator sent as a second small
          // segment waits for the server's delayed ACK (40 ms per request on Linux)
          headers: {
            ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
            ...(data ? { 'content-type': type, 'content-length': Buffer.byteLength(data) } : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (d) => chunks.push(d));
          res.on('end', () => {
            try {
              resolve(JSON.parse(Buffer.concat(chunks).toString()));
            } catch (e) {
              reject(e);
            }
          });
        },
      );
      req.on('error', reject);
      req.on('socket', (s) => s.setNoDelay(true));
      req.end(data);
    });
  }
  close() {
    this.agent.destroy();
  }
}

/** Starts `node <args>` and resolves once it prints "listening on <url>"; rejects if it exits first. Pushes it on `children`. */
export function startChild(
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
  children: ChildProcess[] = [],
): Promise<{ child: ChildProcess; base: string }> {
  const child = spawn(process.execPath, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve({ child, base: m[1] });
    });
    child.on('exit', (code) => reject(new Error(`server exited ${code}: ${err.slice(-2000)}`)));
  });
}
