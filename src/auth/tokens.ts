/**
 * Mate access tokens (docs/mate-api.md §2): compact JWS, signed by the KeyRing's active key, verified by
 * kid with only the algorithms of known keys (never `none`).
 */
import crypto from 'node:crypto';
import { errors as joseErrors, jwtVerify, SignJWT, type JWTPayload } from 'jose';
import { Refusal } from '../lib/errors.js';
import { CLOCK_LEEWAY_SECONDS, TOKEN_LIFETIME_SECONDS, type KeyRing, type VerifiedToken } from './keys.js';

export { TOKEN_LIFETIME_SECONDS, CLOCK_LEEWAY_SECONDS, type VerifiedToken } from './keys.js';

export const MATE_AUDIENCE = 'apimate';
export const MATE_SCOPE = 'apimate';
export const CUSTOMER_KEY_CLAIM = 'auth.anymate.app/CustomerKey';
export const USER_TYPE_CLAIM = 'auth.anymate.app/UserType';
/** Longer strings are not our tokens (ours are about 500 bytes); refused before any parsing. */
const MAX_TOKEN_LENGTH = 4096;

export interface MateTokenClaims {
  iss: string;
  sub: string;
  aud: string;
  scope: string;
  iat: number;
  exp: number;
  jti: string;
  [CUSTOMER_KEY_CLAIM]: string;
  [USER_TYPE_CLAIM]: string;
  cv: number;
  sv: number;
}

export interface MateTokenInput {
  issuer: string;
  mateId: number;
  clientId: string;
  credentialVersion: number;
  secretVersion: number;
  now: Date;
}

/** Signs any claims with the active key; header {alg, typ: "JWT", kid}. */
export async function signClaims(keys: KeyRing, claims: JWTPayload): Promise<string> {
  const key = await keys.signingKey();
  return new SignJWT(claims).setProtectedHeader({ alg: key.alg, typ: 'JWT', kid: key.kid }).sign(key.signKey!);
}

/** Issues a Mate's access token with exactly the claims of docs/mate-api.md §2. */
export async function issueMateToken(keys: KeyRing, input: MateTokenInput): Promise<{ token: string; claims: MateTokenClaims }> {
  const iat = Math.floor(input.now.getTime() / 1000);
  const claims: MateTokenClaims = {
    iss: input.issuer,
    sub: String(input.mateId),
    aud: MATE_AUDIENCE,
    scope: MATE_SCOPE,
    iat,
    exp: iat + TOKEN_LIFETIME_SECONDS,
    jti: crypto.randomBytes(16).toString('base64url'),
    [CUSTOMER_KEY_CLAIM]: input.clientId,
    [USER_TYPE_CLAIM]: 'Mate',
    cv: input.credentialVersion,
    sv: input.secretVersion,
  };
  return { token: await signClaims(keys, claims as unknown as JWTPayload), claims };
}

// Signature checks cost ~0.2 ms each (EdDSA through WebCrypto) and a Mate reuses its token for an
// hour: verified tokens are remembered, up to this many per key ring (the oldest forgotten first).
const MAX_CACHED_TOKENS = 10_000;

/**
 * Checks signature (by kid, with the algorithm of that key only), `typ`, `aud`, `iss` and `exp`
 * (≤ 30 s leeway) at the injected time. Throws Refusal('invalid_token') on any failure. Says
 * nothing about who the token is for: see authenticate.ts.
 */
export async function verifyAccessToken(keys: KeyRing, token: string, opts: { issuer: string; now: Date }): Promise<VerifiedToken> {
  if (token.length > MAX_TOKEN_LENGTH || !/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token)) {
    throw new Refusal('invalid_token', 'The access token is malformed');
  }
  const cache = keys.verified;
  const hit = cache.get(token);
  if (hit) {
    // a token whose signature was checked before: only what can change since is checked again
    if (opts.now.getTime() / 1000 > (hit.claims.exp as number) + CLOCK_LEEWAY_SECONDS)
      throw new Refusal('invalid_token', 'The access token has expired');
    const key = await keys.verificationKey(hit.header.kid as string);
    if (key && key.alg === hit.header.alg && hit.issuer === opts.issuer) return hit;
    cache.delete(token);
  }
  const algorithms = await keys.algorithms();
  try {
    const { payload, protectedHeader } = await jwtVerify(
      token,
      async (header) => {
        if (typeof header.kid !== 'string') throw new joseErrors.JWSInvalid('no kid');
        const key = await keys.verificationKey(header.kid);
        // the key decides the algorithm, never the token: no `none`, no HS256 with a public key
        if (!key || key.alg !== header.alg) throw new joseErrors.JWKSNoMatchingKey();
        return key.verifyKey;
      },
      {
        algorithms,
        issuer: opts.issuer,
        audience: MATE_AUDIENCE,
        typ: 'JWT',
        clockTolerance: CLOCK_LEEWAY_SECONDS,
        currentDate: opts.now,
        requiredClaims: ['iat', 'exp', 'sub'],
      },
    );
    const verified = { header: protectedHeader, claims: payload };
    if (cache.size >= MAX_CACHED_TOKENS) cache.delete(cache.keys().next().value!);
    cache.set(token, { ...verified, issuer: opts.issuer });
    return verified;
  } catch (err) {
    if (err instanceof joseErrors.JWTExpired) throw new Refusal('invalid_token', 'The access token has expired');
    if (err instanceof joseErrors.JOSEError) throw new Refusal('invalid_token', 'The access token is invalid');
    throw err;
  }
}
