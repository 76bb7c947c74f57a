import { describe, expect, it } from 'vitest';
import { ApiError } from './http';
import { adminSections, parseAuditSearch } from './admin-nav';
import {
  attemptWords,
  auditChanges,
  deliveryWords,
  eventTypeProblem,
  graceWords,
  notificationKind,
  passwordProblem,
  placeFieldErrors,
  timeZones,
  tokenExpiry,
  usernameProblem,
  webhookUrlProblem,
} from './admin';

describe('form checks mirror the server rules', () => {
  it('passwords: 12 to 1024 characters', () => {
    expect(passwordProblem('short')).toMatch(/12/);
    expect(passwordProblem('x'.repeat(12))).toBeNull();
    expect(passwordProblem('x'.repeat(1025))).toMatch(/1024/);
  });
  it('usernames: letters, digits and . _ @ + -, starting with a letter or digit', () => {
    expect(usernameProblem('')).toMatch(/Enter/);
    expect(usernameProblem('invoice-bot')).toBeNull();
    expect(usernameProblem('anna@acme.dk')).toBeNull();
    expect(usernameProblem('-bot')).toMatch(/Start/);
    expect(usernameProblem('two words')).toMatch(/Only/);
    expect(usernameProblem('a'.repeat(101))).toMatch(/100/);
  });
  it('webhook URLs: http(s) without credentials', () => {
    expect(webhookUrlProblem('https://example.com/hook')).toBeNull();
    expect(webhookUrlProblem('http://127.0.0.1:8080/x')).toBeNull();
    expect(webhookUrlProblem('example.com')).toMatch(/full URL/);
    expect(webhookUrlProblem('ftp://example.com')).toMatch(/http/);
    expect(webhookUrlProblem('https://u:p@example.com')).toMatch(/password/);
  });
  it('event types: a type or a family', () => {
    expect(eventTypeProblem(['task.solved', 'task.*', 'process.stopped_by_errors'])).toBeNull();
    expect(eventTypeProblem(['task'])).toMatch(/"task"/);
    expect(eventTypeProblem(['Task.Solved'])).toMatch(/Task.Solved/);
    expect(eventTypeProblem([])).toBeNull();
  });
});

describe('placeFieldErrors()', () => {
  const fields = { username: /username|named/i, password: /password/i };
  it('puts field errors by their field, the rest in the message', () => {
    const err = new ApiError(400, 'invalid_field', 'bad', [
      { field: 'password', code: 'invalid_field', message: 'Password must be at least 12 characters' },
      { field: 'email', code: 'invalid_field', message: 'email is too long' },
    ]);
    expect(placeFieldErrors(err, fields)).toEqual({
      byField: { password: 'Password must be at least 12 characters' },
      message: 'email is too long',
    });
  });
  it('a refusal without field errors goes to the field its message names', () => {
    const err = new ApiError(409, 'conflict', 'A user named "anna" already exists');
    expect(placeFieldErrors(err, fields)).toEqual({ byField: { username: 'A user named "anna" already exists' }, message: null });
    const other = new ApiError(409, 'conflict', 'This is the last enabled admin: make another user admin first');
    expect(placeFieldErrors(other, fields).message).toMatch(/last enabled admin/);
  });
  it('anything else is words', () => {
    expect(placeFieldErrors(new TypeError('x'), fields)).toEqual({ byField: {}, message: 'Something went wrong. Try again.' });
  });
});

describe('administration sections by role', () => {
  it('admins see all; developers Mates and webhooks; agents and viewers none', () => {
    expect(adminSections('admin').map((s) => s.path)).toEqual([
      '/admin/users',
      '/admin/mates',
      '/admin/tenant',
      '/admin/webhooks',
      '/admin/audit',
    ]);
    expect(adminSections('developer').map((s) => s.path)).toEqual(['/admin/mates', '/admin/webhooks']);
    expect(adminSections('agent')).toEqual([]);
    expect(adminSections('viewer')).toEqual([]);
  });
});

describe('audit log', () => {
  it('filters from the URL, dropping what is not a name', () => {
    expect(parseAuditSearch({ action: 'user.update', target: 'user' })).toEqual({ action: 'user.update', target: 'user' });
    expect(parseAuditSearch({ action: 'x y', target: '<b>' })).toEqual({});
    expect(parseAuditSearch({})).toEqual({});
  });
  it('before → after for the keys that changed; a creation has only after; other facts as they are', () => {
    expect(
      auditChanges({
        before: { role: 'agent', name: 'Bo', disabled: false },
        after: { role: 'viewer', name: 'Bo', disabled: true },
      }),
    ).toEqual([
      { key: 'role', before: 'agent', after: 'viewer' },
      { key: 'disabled', before: 'no', after: 'yes' },
    ]);
    expect(auditChanges({ after: { username: 'bo' } })).toEqual([{ key: 'username', before: null, after: 'bo' }]);
    expect(auditChanges({ graceSeconds: 3600, eventTypes: ['task.*'] })).toEqual([
      { key: 'graceSeconds', before: null, after: '3600' },
      { key: 'eventTypes', before: null, after: '["task.*"]' },
    ]);
    expect(auditChanges(null)).toEqual([]);
  });
});

describe('times', () => {
  it('a token expiry is the end of the day `days` ahead, in UTC', () => {
    expect(tokenExpiry(30, new Date('2026-11-25T10:00:00Z'))).toBe('2026-12-25T23:59:59.000Z');
  });
  it('time zones: sorted, with UTC and the current one', () => {
    const zones = timeZones('Mars/Olympus');
    expect(zones).toContain('UTC');
    expect(zones).toContain('Mars/Olympus');
    expect(zones).toContain('Europe/Copenhagen');
    expect([...zones].sort()).toEqual(zones);
  });
  it('the grace period of a rotated secret in words, in the tenant zone', () => {
    const now = new Date('2026-11-25T10:00:00Z');
    expect(graceWords('2026-11-26T10:00:00.000Z', 'Europe/Copenhagen', now)).toMatch(/keep working until 26 Nov 2026, 11:00/);
    expect(graceWords('2026-11-25T10:00:00.000Z', 'UTC', now)).toMatch(/stopped working at once/);
  });
});

describe('words', () => {
  it('notification kinds; an unknown kind is shown as it is', () => {
    expect(notificationKind('stoppedByErrors').label).toBe('Stopped by errors');
    expect(notificationKind('future')).toEqual({ label: 'future', color: 'gray' });
  });
  it('webhook deliveries', () => {
    const base = { attempts: 1, lastStatusCode: 200, lastError: null, durationMs: 12 };
    expect(deliveryWords({ ...base, status: 'delivered' })).toBe('Delivered (HTTP 200) in 12 ms');
    expect(deliveryWords({ ...base, status: 'failed', attempts: 5, lastStatusCode: 500, lastError: 'server error' })).toBe(
      'Failed after 5 attempts (HTTP 500): server error',
    );
    expect(deliveryWords({ status: 'pending', attempts: 0, lastStatusCode: null, lastError: null, durationMs: null })).toBe(
      'Waiting for its first attempt',
    );
  });
});

describe('delivery attempts in words', () => {
  it('names the answer, or that there was none, with the time taken and the error', () => {
    expect(attemptWords({ statusCode: 200, durationMs: 7, error: null })).toBe('HTTP 200 in 7 ms');
    expect(attemptWords({ statusCode: 503, durationMs: 12, error: 'server error' })).toBe('HTTP 503 in 12 ms: server error');
    expect(attemptWords({ statusCode: null, durationMs: 10000, error: 'timed out' })).toBe('No answer after 10000 ms: timed out');
  });
});
