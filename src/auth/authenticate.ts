/**
 * Authenticates a Mate API call from its `Authorization: Bearer` header (never the query):
 * signature, aud, iss and exp (tokens.ts), then tenant, enabled Mate and current cv/sv from the
 * cached state (revocation.ts) — no database query per call.
 */
import { Refusal } from '../lib/errors.js';
import type { MateContext } from './context.js';
import type { MateAuth } from './service.js';
import { secretVersionAccepted } from './revocation.js';
import { CUSTOMER_KEY_CLAIM, MATE_SCOPE, USER_TYPE_CLAIM, verifyAccessToken } from './tokens.js';

export type { MateContext } from './context.js';

const BEARER = /^Bearer +([A-Za-z0-9._~+/-]+=*) *$/i;
const ID = /^[1-9][0-9]{0,15}$/;

/**
 * Authenticates a Mate from the Authorization header's value (undefined when none was sent);
 * throws Refusal invalid_token or insufficient_scope.
 */
export async function authenticateAuthorization(auth: MateAuth, authorization: string | undefined): Promise<MateContext> {
  if (authorization === undefined) throw new Refusal('invalid_token', 'An access token is required (Authorization: Bearer <token>)');
  const m = BEARER.exec(authorization);
  if (!m) throw new Refusal('invalid_token', 'The Authorization header must be "Bearer <token>"');
  const now = auth.clock.now();
  const { claims } = await verifyAccessToken(auth.keys, m[1], { issuer: auth.issuer, now });

  if (claims[USER_TYPE_CLAIM] !== 'Mate' || claims.scope !== MATE_SCOPE) {
    throw new Refusal('insufficient_scope', "This token is not a Mate's; the Mate API needs a Mate's token");
  }
  const clientId = claims[CUSTOMER_KEY_CLAIM];
  const { sub, cv, sv } = claims as { sub?: unknown; cv?: unknown; sv?: unknown };
  if (typeof clientId !== 'string' || typeof sub !== 'string' || !ID.test(sub) || !Number.isSafeInteger(cv) || !Number.isSafeInteger(sv)) {
    throw new Refusal('invalid_token', 'The access token is invalid');
  }

  // built only when needed: an Error captures a stack trace, too costly for every call
  const revoked = () => new Refusal('invalid_token', 'The access token has been revoked; sign in again');
  const tenant = await auth.state.tenant(clientId);
  if (!tenant || !secretVersionAccepted(tenant, sv as number, now)) throw revoked();
  const mate = await auth.state.mate(tenant.tenantId, Number(sub));
  if (!mate || mate.disabled || mate.credentialVersion !== cv) throw revoked();

  return {
    tenantId: tenant.tenantId,
    clientId: tenant.clientId,
    timeZone: tenant.timeZone,
    numberFormat: tenant.numberFormat,
    mateId: mate.mateId,
    mateName: mate.displayName || mate.username,
  };
}

/**
 * The WWW-Authenticate value for an authentication error (docs/mate-api.md §5), or null for other
 * codes. `hadAuthorizationHeader`: without one, the invalid_token challenge carries no `error`
 * (RFC 6750 §3.1).
 */
export function authErrorHeaders(err: Refusal, hadAuthorizationHeader: boolean): string | null {
  if (err.code === 'insufficient_scope') return 'Bearer error="insufficient_scope", scope="apimate"';
  if (err.code === 'invalid_token')
    return hadAuthorizationHeader ? 'Bearer realm="apimate", error="invalid_token"' : 'Bearer realm="apimate"';
  return null;
}
