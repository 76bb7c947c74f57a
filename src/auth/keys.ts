/**
 * Access-token signing keys (docs/mate-api.md §2).
 *
 * Default: an Ed25519 key pair generated at first start and kept in `signing_keys`, shared by
 * every server process on the store. `tokenKeyFile` (PEM PKCS#8 Ed25519) or `tokenSecret` (HS256)
 * replace it; then the store's keys are neither used nor consulted.
 *
 * A retired key keeps verifying for one token lifetime after its retirement, so tokens signed just
 * before a rotation stay valid until they expire.
 */
import fs from 'node:fs';
import { sql, type Kysely } from 'kysely';
import {
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  importJWK,
  importPKCS8,
  type CryptoKey,
  type JWK,
  type JWTHeaderParameters,
  type JWTPayload,
} from 'jose';
import type { Config } from '../config.js';
import type { Database } from '../db/types.js';
import { inTransaction, type Tx } from '../db/tx.js';
import type { Clock } from '../lib/clock.js';
import type { ChangeNotifier } from '../lib/notifier.js';

/** Access tokens live one hour (docs/mate-api.md §2: `exp = iat + 3600`). */
export const TOKEN_LIFETIME_SECONDS = 3600;
/** Clock skew tolerated on `exp` between this server and the one that issued the token. */
export const CLOCK_LEEWAY_SECONDS = 30;
/**
 * Each process re-reads the store's keys this often, so it starts signing with a key rotated by
 * another process within 30 s. The retired key's verification window covers those 30 s too.
 */
export const KEY_REFRESH_SECONDS = 30;
/** A token with an unknown kid makes a process re-read its keys at most this often (no query flood). */
const UNKNOWN_KID_REFRESH_SECONDS = 5;
/** pg_advisory_xact_lock key serializing key creation and rotation across processes. */
const SIGNING_KEYS_LOCK = 720_451_996;

/** How long after retirement a key still verifies: a token lifetime, plus refresh lag and leeway. */
export const RETIRED_KEY_GRACE_SECONDS = TOKEN_LIFETIME_SECONDS + KEY_REFRESH_SECONDS + CLOCK_LEEWAY_SECONDS;

/** A token whose signature, `typ`, `aud`, `iss` and `exp` checked out (tokens.ts), as the key ring caches it. */
export interface VerifiedToken {
  header: JWTHeaderParameters;
  claims: JWTPayload;
}

export type SigningAlg = 'EdDSA' | 'HS256';
type KeyMaterial = CryptoKey | Uint8Array;

export interface SigningKey {
  kid: string;
  alg: SigningAlg;
  /** null for keys this process may only verify with. */
  signKey: KeyMaterial | null;
  verifyKey: KeyMaterial;
  retiredAt: Date | null;
}

export type KeySource = 'store' | 'file' | 'secret';

export class KeyRing {
  private keys = new Map<string, SigningKey>();
  private active: SigningKey | null = null;
  private loadedAt = Number.NEGATIVE_INFINITY;
  private lastUnknownKidReload = Number.NEGATIVE_INFINITY;
  private loading: Promise<void> | null = null;
  private stale = false;
  private readonly unsubscribe: () => void = () => {};
  /**
   * Tokens whose signature this ring has verified (see tokens.ts verifyAccessToken): a Mate reuses
   * its token for an hour and a signature check costs ~0.2 ms.
   */
  readonly verified = new Map<string, VerifiedToken & { issuer: string }>();

  private constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    readonly source: KeySource,
    configured: SigningKey | null,
    notifier: ChangeNotifier,
  ) {
    if (configured) {
      this.keys.set(configured.kid, configured);
      this.active = configured;
    } else {
      // a rotation committed through this server process reaches the ring at once
      this.unsubscribe = notifier.subscribe((c) => {
        if (c.kind === 'signingKeys') this.invalidate();
      });
    }
  }

  /**
   * Reads a configured key at once (a bad key file stops start-up); keys in the store are loaded
   * on first use, so building the app needs no database.
   */
  static async create(
    db: Kysely<Database>,
    clock: Clock,
    config: Pick<Config, 'tokenKeyFile' | 'tokenSecret'>,
    notifier: ChangeNotifier,
  ): Promise<KeyRing> {
    if (config.tokenSecret) return new KeyRing(db, clock, 'secret', await hs256Key(config.tokenSecret), notifier);
    if (config.tokenKeyFile) return new KeyRing(db, clock, 'file', await ed25519KeyFromFile(config.tokenKeyFile), notifier);
    return new KeyRing(db, clock, 'store', null, notifier);
  }

  /** The key new tokens are signed with. */
  async signingKey(): Promise<SigningKey> {
    await this.ensureFresh();
    return this.active!;
  }

  /** The key for a token's kid, or null if unknown or retired too long ago. */
  async verificationKey(kid: string): Promise<SigningKey | null> {
    await this.ensureFresh();
    let key = this.keys.get(kid);
    if (!key && this.source === 'store') {
      const now = this.clock.now().getTime();
      if (now - this.lastUnknownKidReload >= UNKNOWN_KID_REFRESH_SECONDS * 1000 || now < this.lastUnknownKidReload) {
        this.lastUnknownKidReload = now;
        await this.reload();
        key = this.keys.get(kid);
      }
    }
    if (!key) return null;
    if (key.retiredAt && this.clock.now().getTime() > key.retiredAt.getTime() + RETIRED_KEY_GRACE_SECONDS * 1000) return null;
    return key;
  }

  /** The algorithms of the keys known to this ring: the only ones a token may use. */
  async algorithms(): Promise<SigningAlg[]> {
    await this.ensureFresh();
    return [...new Set([...this.keys.values()].map((k) => k.alg))];
  }

  /** Makes the next use re-read the store (a change made in this process). */
  invalidate(): void {
    this.stale = true;
  }

  /** Stops receiving local invalidations (the app closed). */
  close(): void {
    this.unsubscribe();
  }

  private async ensureFresh(): Promise<void> {
    if (this.source !== 'store') return;
    const age = this.clock.now().getTime() - this.loadedAt;
    if (this.active && !this.stale && age >= 0 && age < KEY_REFRESH_SECONDS * 1000) return;
    try {
      await this.reload();
    } catch (err) {
      // A routine refresh that fails (store briefly down) keeps the keys already loaded; only
      // a ring that has never loaded, or was told of a local rotation, has to fail.
      if (!this.active || this.stale) throw err;
      // try again in UNKNOWN_KID_REFRESH_SECONDS rather than on every call
      this.loadedAt = this.clock.now().getTime() - (KEY_REFRESH_SECONDS - UNKNOWN_KID_REFRESH_SECONDS) * 1000;
    }
  }

  private reload(): Promise<void> {
    this.loading ??= this.load().finally(() => {
      this.loading = null;
    });
    return this.loading;
  }

  private async load(): Promise<void> {
    const startedAt = this.clock.now();
    const wasStale = this.stale;
    this.stale = false;
    try {
      await this.loadKeys(startedAt);
    } catch (err) {
      this.stale ||= wasStale;
      throw err;
    }
  }

  private async loadKeys(startedAt: Date): Promise<void> {
    let rows = await selectUsableKeys(this.db, startedAt);
    if (!rows.some((r) => r.retired_at === null)) {
      await ensureActiveKey(this.db);
      rows = await selectUsableKeys(this.db, startedAt);
    }
    const keys = new Map<string, SigningKey>();
    let active: SigningKey | null = null;
    for (const row of rows) {
      const known = this.keys.get(row.kid);
      const key: SigningKey = known
        ? { ...known, retiredAt: row.retired_at }
        : {
            kid: row.kid,
            alg: row.alg,
            signKey: row.retired_at ? null : await importJWK(row.private_jwk as JWK, row.alg),
            verifyKey: await importJWK(row.public_jwk as JWK, row.alg),
            retiredAt: row.retired_at,
          };
      keys.set(key.kid, key);
      // rows come newest first: the newest key not retired signs
      if (!active && !key.retiredAt && key.signKey) active = key;
    }
    if (!active) throw new Error('no active token signing key in the store');
    this.keys = keys;
    this.active = active;
    this.loadedAt = startedAt.getTime();
  }
}

function selectUsableKeys(db: Kysely<Database>, now: Date) {
  const retiredAfter = new Date(now.getTime() - RETIRED_KEY_GRACE_SECONDS * 1000);
  return db
    .selectFrom('signing_keys')
    .select(['kid', 'alg', 'private_jwk', 'public_jwk', 'retired_at'])
    .where((eb) => eb.or([eb('retired_at', 'is', null), eb('retired_at', '>', retiredAfter)]))
    .orderBy('created_at', 'desc')
    .orderBy('kid')
    .execute();
}

async function newEd25519Row(): Promise<{ kid: string; alg: 'EdDSA'; private_jwk: string; public_jwk: string }> {
  const { privateKey, publicKey } = await generateKeyPair('EdDSA', { extractable: true });
  const publicJwk = await exportJWK(publicKey);
  const privateJwk = await exportJWK(privateKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  return { kid, alg: 'EdDSA', private_jwk: JSON.stringify(privateJwk), public_jwk: JSON.stringify(publicJwk) };
}

/**
 * Creates the first key unless an active one exists. Several processes starting at once on an
 * empty store serialize on an advisory lock, so exactly one key is created.
 */
async function ensureActiveKey(db: Kysely<Database>): Promise<void> {
  const row = await newEd25519Row();
  await inTransaction(db, async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(${SIGNING_KEYS_LOCK})`.execute(trx);
    const existing = await trx.selectFrom('signing_keys').select('kid').where('retired_at', 'is', null).executeTakeFirst();
    if (existing) return;
    await trx
      .insertInto('signing_keys')
      .values(row)
      .onConflict((oc) => oc.column('kid').doNothing())
      .execute();
  });
}

/**
 * Retires the store's active signing key(s) and makes a new Ed25519 key the signing key. Tokens
 * signed with a retired key keep verifying until they expire. Rings of this process see the new
 * key at once, other processes within KEY_REFRESH_SECONDS. No effect on a configured key
 * (tokenKeyFile, tokenSecret).
 */
export async function rotateSigningKey(tx: Tx, now: Date): Promise<{ kid: string; retired: string[] }> {
  const row = await newEd25519Row();
  const retired = await inTransaction(tx.db, async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(${SIGNING_KEYS_LOCK})`.execute(trx);
    const old = await trx.updateTable('signing_keys').set({ retired_at: now }).where('retired_at', 'is', null).returning('kid').execute();
    await trx.insertInto('signing_keys').values(row).execute();
    return old.map((r) => r.kid);
  });
  tx.publish({ kind: 'signingKeys' });
  return { kid: row.kid, retired };
}

async function hs256Key(secret: string): Promise<SigningKey> {
  const material = new TextEncoder().encode(secret);
  // The kid is a digest of the secret; an HS256 token already allows an offline guess at the
  // secret, so this reveals nothing more.
  const kid = await calculateJwkThumbprint({ kty: 'oct', k: Buffer.from(material).toString('base64url') });
  return { kid, alg: 'HS256', signKey: material, verifyKey: material, retiredAt: null };
}

async function ed25519KeyFromFile(file: string): Promise<SigningKey> {
  let pem: string;
  try {
    pem = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read the token key file ${file}: ${(err as Error).message}`);
  }
  let privateKey: CryptoKey;
  try {
    privateKey = await importPKCS8(pem, 'EdDSA', { extractable: true });
  } catch (err) {
    throw new Error(`the token key file ${file} is not a PEM PKCS#8 Ed25519 private key: ${(err as Error).message}`);
  }
  const { d: _d, ...publicJwk } = await exportJWK(privateKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  return { kid, alg: 'EdDSA', signKey: privateKey, verifyKey: await importJWK(publicJwk, 'EdDSA'), retiredAt: null };
}
