/** A server-sent events client for tests: parses the stream and waits for events. */
import http from 'node:http';

export interface SseEvent {
  id: number | null;
  event: string;
  data: any;
}

export class SseClient {
  readonly events: SseEvent[] = [];
  comments = 0;
  status = 0;
  private buffer = '';
  private waiters: (() => void)[] = [];
  private req: http.ClientRequest | null = null;
  ended = false;

  static connect(url: string, headers: Record<string, string>): Promise<SseClient> {
    const c = new SseClient();
    return new Promise((resolve, reject) => {
      c.req = http.get(url, { headers: { accept: 'text/event-stream', ...headers } }, (res) => {
        c.status = res.statusCode ?? 0;
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => c.feed(chunk));
        res.on('end', () => {
          c.ended = true;
          c.notify();
        });
        res.on('error', () => {});
        resolve(c);
      });
      c.req.on('error', reject);
    });
  }

  private feed(chunk: string): void {
    this.buffer += chunk;
    let i: number;
    while ((i = this.buffer.indexOf('\n\n')) >= 0) {
      const block = this.buffer.slice(0, i);
      this.buffer = this.buffer.slice(i + 2);
      let id: number | null = null;
      let event = 'message';
      let data = '';
      let isEvent = false;
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) this.comments++;
        else if (line.startsWith('id: ')) id = Number(line.slice(4));
        else if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) {
          data += line.slice(6);
          isEvent = true;
        }
      }
      if (isEvent) this.events.push({ id, event, data: JSON.parse(data) });
    }
    this.notify();
  }

  private notify(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** Resolves when `ok()` holds; rejects after `ms`. */
  async until(ok: () => boolean, ms = 10000, what = 'the expected events'): Promise<void> {
    const deadline = Date.now() + ms;
    while (!ok()) {
      const left = deadline - Date.now();
      if (left <= 0 || this.ended)
        throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(this.events.map((e) => [e.id, e.event]))}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  close(): void {
    this.req?.destroy();
  }
}
