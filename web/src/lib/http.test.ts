import { afterEach, describe, expect, it, vi } from 'vitest';
import { api, ApiError, setCsrfToken, onSessionEnded, errorMessage } from './http';

function answer(status: number, body: unknown, headers: Record<string, string> = {}) {
  return vi.fn(
    async (_url: string, _init: RequestInit) => new Response(body === undefined ? null : JSON.stringify(body), { status, headers }),
  );
}

afterEach(() => {
  vi.unstubAllGlobals();
  setCsrfToken(null);
  onSessionEnded(null);
});

describe('api()', () => {
  it('sends JSON with the CSRF header on writes only', async () => {
    const f = answer(200, { ok: 1 });
    vi.stubGlobal('fetch', f);
    setCsrfToken('tok');
    await api('/v1/x');
    await api('/v1/x', { method: 'POST', body: { a: 1 } });
    const [getInit, postInit] = [f.mock.calls[0][1], f.mock.calls[1][1]];
    expect((getInit.headers as Record<string, string>)['x-csrf-token']).toBeUndefined();
    expect((postInit.headers as Record<string, string>)['x-csrf-token']).toBe('tok');
    expect(postInit.body).toBe('{"a":1}');
  });
  it('turns a refusal into an ApiError with the server message and field errors', async () => {
    vi.stubGlobal(
      'fetch',
      answer(400, {
        code: 'invalid_field',
        message: 'Amount must be a number',
        errors: [{ field: 'Amount', code: 'invalid', message: 'not a number' }],
      }),
    );
    const err = (await api('/v1/x').catch((e) => e)) as ApiError;
    expect(err).toBeInstanceOf(ApiError);
    expect(err.code).toBe('invalid_field');
    expect(err.message).toBe('Amount must be a number');
    expect(err.fieldErrors[0].field).toBe('Amount');
  });
  it('words for answers without a body, and for rate limits', async () => {
    vi.stubGlobal('fetch', answer(503, undefined));
    expect(errorMessage(await api('/v1/x').catch((e) => e))).toMatch(/unavailable/);
    vi.stubGlobal('fetch', answer(429, { code: 'rate_limited', message: 'slow down' }, { 'retry-after': '7' }));
    expect(errorMessage(await api('/v1/x').catch((e) => e))).toBe('Too many attempts. Try again in 7 seconds.');
    vi.stubGlobal(
      'fetch',
      vi.fn(async () => Promise.reject(new TypeError('Failed to fetch'))),
    );
    expect(errorMessage(await api('/v1/x').catch((e) => e))).toMatch(/cannot be reached/);
  });
  it('a 401 ends the session, except on the session endpoint itself', async () => {
    const ended = vi.fn();
    onSessionEnded(ended);
    vi.stubGlobal('fetch', answer(401, { code: 'unauthenticated', message: 'Sign in' }));
    await api('/v1/session').catch(() => {});
    expect(ended).not.toHaveBeenCalled();
    await api('/v1/processes').catch(() => {});
    expect(ended).toHaveBeenCalledTimes(1);
    // a wrong current password when changing one's own is not the end of the session
    vi.stubGlobal('fetch', answer(401, { code: 'invalid_credentials', message: 'The current password is incorrect' }));
    expect(errorMessage(await api('/v1/me/password', { method: 'POST', body: {} }).catch((e) => e))).toBe(
      'The current password is incorrect',
    );
    expect(ended).toHaveBeenCalledTimes(1);
  });
  it('204 answers undefined', async () => {
    vi.stubGlobal('fetch', answer(204, undefined));
    expect(await api('/v1/session', { method: 'DELETE' })).toBeUndefined();
  });
});
