/**
 * STUB, for the browser tests only, of the people's API routes that are not on this branch yet
 * (processes, tasks, bulk jobs; the binding shapes of docs/people-api contract). The browser's
 * requests to those paths are answered here through Playwright's request interception, and only
 * for a request whose session cookie the real server accepts (GET /v1/session). Everything else
 * (the page, its assets, sign-in, the session) is the real server. Remove a route from here as
 * soon as the real one exists: `REAL` lists what passes through.
 */
import type { BrowserContext, Route } from 'playwright-core';

export interface FakeTask {
  id: number;
  processId: number;
  queue: string;
  error: boolean;
  reason: string | null;
  urgent: boolean;
  retryCount: number;
  activationDate: string;
  deadline: string | null;
  lockedBy: null | { type: 'mate' | 'user'; id: number; name: string };
  lockedUntil: string | null;
  createdAt: string;
  updatedAt: string;
  data: Record<string, unknown>;
  history: {
    id: number;
    at: string;
    action: string;
    actorName: string;
    fromQueue: string | null;
    toQueue: string | null;
    error: boolean;
    reason: string | null;
    comment: string | null;
    retryCount: number;
  }[];
  comments: { id: number; at: string; text: string; authorName: string }[];
}

export interface FakeProcess {
  id: number;
  key: string;
  name: string;
  gateOpen: boolean;
  fields: { name: string; label: string; type: string; required?: boolean; options?: string[] }[];
  lastMateContactAt: string | null;
}

export class FakeV1 {
  processes: FakeProcess[] = [];
  tasks: FakeTask[] = [];
  jobs = new Map<string, { id: string; status: string; total: number; done: number; failed: number; errors: unknown[] }>();
  private nextId = 1000;
  private nextEvent = 1;

  addTask(processId: number, queue: string, data: Record<string, unknown>, extra: Partial<FakeTask> = {}): FakeTask {
    const now = new Date().toISOString();
    const t: FakeTask = {
      id: this.nextId++,
      processId,
      queue,
      error: false,
      reason: null,
      urgent: false,
      retryCount: 0,
      activationDate: now,
      deadline: null,
      lockedBy: null,
      lockedUntil: null,
      createdAt: now,
      updatedAt: now,
      data,
      history: [
        {
          id: this.nextEvent++,
          at: now,
          action: 'created',
          actorName: 'invoice-bot',
          fromQueue: null,
          toQueue: queue,
          error: false,
          reason: null,
          comment: null,
          retryCount: 0,
        },
      ],
      comments: [],
      ...extra,
    };
    this.tasks.push(t);
    return t;
  }

  move(t: FakeTask, queue: string, error: boolean, action: string, actor: string, comment?: string): void {
    t.history.push({
      id: this.nextEvent++,
      at: new Date().toISOString(),
      action,
      actorName: actor,
      fromQueue: t.queue,
      toQueue: queue,
      error,
      reason: t.reason,
      comment: comment ?? null,
      retryCount: t.retryCount,
    });
    t.queue = queue;
    t.error = error;
    t.lockedBy = null;
    t.lockedUntil = null;
    t.updatedAt = new Date().toISOString();
    if (comment) t.comments.push({ id: this.nextEvent++, at: t.updatedAt, text: comment, authorName: actor });
  }

  summary(p: FakeProcess) {
    const ts = this.tasks.filter((t) => t.processId === p.id);
    const n = (f: (t: FakeTask) => boolean) => ts.filter(f).length;
    const errors = n((t) => t.queue === 'Manual' && t.error);
    return {
      id: p.id,
      key: p.key,
      name: p.name,
      archived: false,
      description: 'Incoming supplier invoices, booked by the invoice robot.',
      tasksEnabled: true,
      state: { gateOpen: p.gateOpen, blockedToday: false, stoppedByErrors: false, okToRun: p.gateOpen, failure: null },
      counts: {
        ready: n((t) => t.queue === 'Ready'),
        needsData: n((t) => t.queue === 'NeedsData'),
        needsApproval: n((t) => t.queue === 'NeedsApproval'),
        manual: n((t) => t.queue === 'Manual' && !t.error),
        error: errors,
        solved: n((t) => t.queue === 'Solved'),
        locked: n((t) => t.lockedBy !== null),
        urgent: n((t) => t.urgent && t.queue !== 'Solved'),
        overdue: 0,
        notActiveYet: 0,
      },
      openRun: p.lastMateContactAt ? { id: 1, startedAt: p.lastMateContactAt, lastActivityAt: p.lastMateContactAt } : null,
      lastMateContactAt: p.lastMateContactAt,
    };
  }

  private list(processId: number, q: URLSearchParams): FakeTask[] {
    const text = q.get('q')?.toLowerCase();
    return this.tasks.filter(
      (t) =>
        t.processId === processId &&
        (!q.get('queue') || t.queue === q.get('queue')) &&
        (!q.has('error') || String(t.error) === q.get('error')) &&
        (!text || JSON.stringify(t.data).toLowerCase().includes(text)) &&
        [...q.keys()].filter((k) => k.startsWith('f.')).every((k) => String(t.data[k.slice(2)] ?? '') === q.get(k)),
    );
  }

  private filterQuery(filter: Record<string, unknown>): URLSearchParams {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(filter)) if (v !== undefined && v !== null) q.set(k, String(v));
    return q;
  }

  /** Answers one intercepted request; null = not stubbed (passes to the real server). */
  answer(method: string, url: URL, body: any, actor: string): { status: number; body?: unknown } | null {
    const path = url.pathname;
    let m: RegExpMatchArray | null;
    if (method === 'GET' && path === '/v1/processes') return { status: 200, body: { items: this.processes.map((p) => this.summary(p)) } };
    if ((m = path.match(/^\/v1\/processes\/(\d+)$/)) && method === 'GET') {
      const p = this.processes.find((x) => x.id === Number(m![1]));
      if (!p) return { status: 404, body: { code: 'process_not_found', message: 'No such process', requestId: 'fake' } };
      return {
        status: 200,
        body: { ...this.summary(p), fields: p.fields, settings: { lockTimeoutSeconds: 3600, stopOnErrors: false, errorLimit: 10 } },
      };
    }
    if ((m = path.match(/^\/v1\/processes\/(\d+)\/gate$/)) && method === 'POST') {
      const p = this.processes.find((x) => x.id === Number(m![1]))!;
      p.gateOpen = !!body.open;
      return { status: 200, body: this.summary(p) };
    }
    if ((m = path.match(/^\/v1\/processes\/(\d+)\/tasks$/)) && method === 'GET') {
      const all = this.list(Number(m[1]), url.searchParams);
      const sort = url.searchParams.get('sort');
      if (sort) {
        const key = sort.replace(/^-/, '');
        const dir = sort.startsWith('-') ? -1 : 1;
        all.sort((a, b) => {
          const av = (a as any)[key] ?? a.data[key];
          const bv = (b as any)[key] ?? b.data[key];
          return (av > bv ? 1 : av < bv ? -1 : 0) * dir;
        });
      }
      const limit = Number(url.searchParams.get('limit') ?? 50);
      const start = Number(url.searchParams.get('cursor') ?? 0);
      const items = all.slice(start, start + limit).map(({ history: _h, comments: _c, ...t }) => t);
      return { status: 200, body: { items, total: all.length, nextCursor: start + limit < all.length ? String(start + limit) : null } };
    }
    if ((m = path.match(/^\/v1\/processes\/(\d+)\/tasks\/bulk(\/count)?$/)) && method === 'POST') {
      const targets = body.ids
        ? this.tasks.filter((t) => body.ids.includes(t.id))
        : this.list(Number(m[1]), this.filterQuery(body.filter ?? {}));
      if (m[2]) return { status: 200, body: { total: targets.length } };
      for (const t of targets) {
        if (body.action === 'move') this.move(t, body.queue, false, 'moved', actor);
        if (body.action === 'clearError') this.move(t, t.queue, false, 'clear_error', actor);
        if (body.action === 'urgent') t.urgent = !!body.urgent;
      }
      const id = `job-${this.nextEvent++}`;
      this.jobs.set(id, { id, status: 'running', total: targets.length, done: 0, failed: 0, errors: [] });
      return { status: 202, body: { jobId: id, total: targets.length } };
    }
    if ((m = path.match(/^\/v1\/jobs\/(.+)$/)) && method === 'GET') {
      const job = this.jobs.get(m[1]);
      if (!job) return { status: 404, body: { code: 'not_found', message: 'No such job', requestId: 'fake' } };
      // a job advances in two steps, so the page shows progress before the end
      job.done = Math.min(job.total, job.done + Math.ceil(job.total / 2));
      if (job.done >= job.total) job.status = 'done';
      return { status: 200, body: job };
    }
    if ((m = path.match(/^\/v1\/tasks\/(\d+)(\/[a-z-]+)?$/))) {
      const t = this.tasks.find((x) => x.id === Number(m![1]));
      if (!t) return { status: 404, body: { code: 'task_not_found', message: `Task ${m[1]} was not found`, requestId: 'fake' } };
      const { history, comments, ...plain } = t;
      const detail = () => ({ ...t, history: [...t.history].reverse(), comments: t.comments, kpiEvents: [] });
      const sub = m[2] ?? '';
      if (method === 'GET' && !sub) return { status: 200, body: detail() };
      if (method === 'POST' && sub === '/move')
        this.move(t, body.queue, !!body.error && body.queue === 'Manual', 'moved', actor, body.comment);
      else if (method === 'POST' && sub === '/clear-error') this.move(t, t.queue, false, 'clear_error', actor, body?.comment);
      else if (method === 'POST' && sub === '/comments')
        t.comments.push({ id: this.nextEvent++, at: new Date().toISOString(), text: body.text, authorName: actor });
      else if (method === 'PATCH' && !sub) {
        if (body.data) Object.assign(t.data, body.data);
        if (typeof body.urgent === 'boolean') t.urgent = body.urgent;
      } else return null;
      void history;
      void comments;
      void plain;
      return { status: 200, body: detail() };
    }
    return null;
  }

  /** Intercepts the stubbed /v1 routes for a browser context; origin = the real server. */
  async install(context: BrowserContext, origin: string): Promise<void> {
    await context.route(`${origin}/v1/**`, async (route: Route) => {
      const req = route.request();
      const url = new URL(req.url());
      if (url.pathname.startsWith('/v1/session') || url.pathname.startsWith('/v1/me') || url.pathname === '/v1/events')
        return route.fallback();
      // only for a session the real server accepts
      const headers = await req.allHeaders();
      const who = await fetch(`${origin}/v1/session`, { headers: { cookie: headers.cookie ?? '' } });
      if (who.status !== 200)
        return route.fulfill({
          status: 401,
          contentType: 'application/json',
          body: JSON.stringify({ code: 'unauthenticated', message: 'Sign in first', requestId: 'fake' }),
        });
      const session = await who.json();
      if (req.method() !== 'GET' && headers['x-csrf-token'] !== session.csrfToken)
        return route.fulfill({
          status: 403,
          contentType: 'application/json',
          body: JSON.stringify({ code: 'csrf_failed', message: 'CSRF token missing', requestId: 'fake' }),
        });
      const answer = this.answer(
        req.method(),
        url,
        req.postData() ? JSON.parse(req.postData()!) : null,
        session.user.name || session.user.username,
      );
      if (!answer) return route.fallback();
      return route.fulfill({
        status: answer.status,
        contentType: 'application/json',
        body: answer.body === undefined ? '' : JSON.stringify(answer.body),
      });
    });
  }
}
