/**
 * GET /v1/events: the tenant's events as server-sent events (docs/events.md, "Live stream").
 * `id:` is the event id, `event:` its type, `data:` the JSON payload with its id. A client that
 * reconnects sends Last-Event-ID (browsers' EventSource does) and gets exactly what it missed.
 * With `?as=message` the `event:` line is left out: every event arrives as a plain `message` (its type
 * is in the data), so one EventSource `onmessage` handler gets every type, present and future.
 *
 * A stream ends with the credential that opened it: sign-out, a revoked token, the user disabled
 * or their password changed. This server process's own changes end it at once (the notifier's
 * user change); another process's within a heartbeat, when the credential is checked again.
 */
import { Type } from 'typebox';
import { Refusal } from '../../lib/errors.js';
import { startStream } from '../../events/stream.js';
import { credentialIsLive } from '../../accounts/sessions.js';
import { answer, defineRoute, ErrorBody, type PeopleRoute } from '../route.js';

function readLastEventId(header: unknown, query: unknown): number | null {
  const raw = typeof header === 'string' && header !== '' ? header : typeof query === 'string' && query !== '' ? query : null;
  if (raw === null) return null;
  if (!/^\d{1,16}$/.test(raw.trim()) || !Number.isSafeInteger(Number(raw.trim())))
    throw new Refusal('invalid_field', 'Last-Event-ID must be an event id (a whole number)', [
      { field: 'Last-Event-ID', code: 'invalid_field', message: 'Last-Event-ID must be an event id (a whole number)' },
    ]);
  return Number(raw.trim());
}

export const EVENT_ROUTES: PeopleRoute[] = [
  defineRoute({
    method: 'GET',
    url: '/events',
    permission: 'events.read',
    tag: 'Events',
    stream: true,
    summary:
      "The tenant's events as server-sent events (text/event-stream): task.*, process.*, run.* (and webhook.* for admins). Resume with the Last-Event-ID header (or ?lastEventId=); without it the stream starts with the next event. With ?as=message the `event:` line is left out (the type is in `data.type`), so a browser's EventSource gets every event with onmessage. A comment line every 15 s keeps the connection open.",
    curl: `curl -N $QM/v1/events -H "Authorization: Bearer $TOKEN" -H 'Last-Event-ID: 0'`,
    querystring: Type.Object(
      {
        lastEventId: Type.Optional(Type.String({ maxLength: 20 })),
        as: Type.Optional(Type.Union([Type.Literal('named'), Type.Literal('message')])),
      },
      { additionalProperties: false },
    ),
    response: { 200: Type.String({ description: 'text/event-stream' }), 400: ErrorBody },
    async handler({ req, reply, services, caller, person, query }) {
      const lastEventId = readLastEventId(req.headers['last-event-id'], query.lastEventId);
      const named = query.as !== 'message';
      const res = reply.raw;
      reply.hijack();
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        connection: 'keep-alive',
        // proxies (nginx) must pass events on at once, not buffer them
        'x-accel-buffering': 'no',
        'x-content-type-options': 'nosniff',
        'x-request-id': req.id,
      });
      // a browser reconnects after 3 s when the connection drops
      res.write('retry: 3000\n\n');
      const write = (chunk: string) =>
        new Promise<void>((resolve) => {
          if (res.write(chunk)) resolve();
          else res.once('drain', resolve);
        });
      let checking = false;
      const recheck = async () => {
        if (checking || res.writableEnded) return;
        checking = true;
        try {
          if (!(await credentialIsLive(services.db, caller.tenantId, person.credential.id, services.clock.now()))) {
            res.write(': session ended\n\n');
            close();
          }
        } catch (err) {
          req.log.warn({ err }, 'checking the event stream credential failed; asking again at the next heartbeat');
        } finally {
          checking = false;
        }
      };
      const stop = startStream({
        db: services.db,
        hub: services.events.hub,
        tenantId: caller.tenantId,
        role: person.user.role,
        lastEventId,
        heartbeatMs: services.config.sseHeartbeatSeconds * 1000,
        sink: {
          event: (e) => write(`id: ${e.id}\n${named ? `event: ${e.type}\n` : ''}data: ${JSON.stringify({ id: e.id, ...e.payload })}\n\n`),
          heartbeat: () => {
            res.write(': heartbeat\n\n');
            void recheck();
          },
        },
        onError: (err) => {
          req.log.warn({ err }, 'event stream failed; closing it (the client resumes with Last-Event-ID)');
          res.end();
        },
      });
      const unsubscribe = services.notifier.subscribe((c) => {
        if (c.kind === 'user' && c.tenantId === caller.tenantId && c.userId === person.user.id) void recheck();
      });
      const close = () => {
        stop();
        unsubscribe();
        services.events.streams.delete(close);
        if (!res.writableEnded) res.end();
      };
      services.events.streams.add(close);
      res.on('close', close);
      return answer(200);
    },
  }),
];
