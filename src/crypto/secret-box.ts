/**
 * Authenticated encryption of stored secrets (README "Security → Encryption at rest").
 *
 * AES-256-GCM from node:crypto, a random 96-bit nonce per value. A sealed value is one ASCII string:
 *
 *     ldbox:v1:<keyId>:<base64url(nonce ‖ ciphertext ‖ 16-byte tag)>
 *
 * The associated data is the prefix `ldbox:v1:<keyId>:` followed by the caller's `context` (where the
 * value belongs, e.g. `ldbox-workflows/wf_…/nodes/fetch/auth`), so neither the version, the key id nor
 * the place can be changed, and a ciphertext moved to another record fails to open. The key id is a
 * fingerprint of the key (SHA-256 of a label and the key, 8 base64url characters): it names the key in
 * errors and logs without revealing it.
 *
 * A {@link KeyRing} seals with its current key and opens with any of its keys, so keys are rotated by
 * adding a new current key and keeping the old ones readable until `ldbox reencrypt` has run.
 *
 * Tests: test/crypto/secret-box.test.ts.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/** The format version written into every sealed value. */
export const SEALED_VERSION = 'v1';
const PREFIX = `ldbox:${SEALED_VERSION}:`;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
/** Bytes of a data key (AES-256). */
export const DATA_KEY_BYTES = 32;

/** One data key and its id. */
export interface DataKey {
  readonly id: string;
  readonly key: Buffer;
}

/** Why a sealed value could not be opened. */
export type SecretBoxErrorCode = 'unknown_key' | 'malformed' | 'not_authentic';

/** A sealed value that cannot be opened; the message names the key id, never key material. */
export class SecretBoxError extends Error {
  override readonly name = 'SecretBoxError';
  constructor(
    readonly code: SecretBoxErrorCode,
    message: string,
    /** The key id the value names, when it names one. */
    readonly keyId: string | undefined,
  ) {
    super(message);
  }
}

export function isSecretBoxError(err: unknown): err is SecretBoxError {
  return err instanceof SecretBoxError;
}

/** The id of a key: a fingerprint that names it without revealing it. */
export function dataKeyId(key: Buffer): string {
  return createHash('sha256').update('ldbox data key id\0').update(key).digest().subarray(0, 6).toString('base64url');
}

/** A data key from its 32 bytes. */
export function dataKey(key: Buffer): DataKey {
  if (key.length !== DATA_KEY_BYTES) throw new RangeError(`a data key is ${DATA_KEY_BYTES} bytes, got ${key.length}`);
  // The key bytes are not enumerable, so that a logged or serialised config shows the id only.
  const k = { id: dataKeyId(key) } as DataKey;
  Object.defineProperty(k, 'key', { value: Buffer.from(key), enumerable: false });
  return Object.freeze(k);
}

/** A fresh random data key, as base64 (what LDBOX_DATA_KEY holds). */
export function generateDataKey(): string {
  return randomBytes(DATA_KEY_BYTES).toString('base64');
}

/** True when `s` looks like a sealed value of any version (`ldbox:v…:`), i.e. not plaintext. */
export function isSealed(s: unknown): s is string {
  return typeof s === 'string' && /^ldbox:v\d+:/.test(s);
}

/** The key id a sealed value names; undefined when it is not a sealed value. */
export function sealedKeyId(s: string): string | undefined {
  const m = /^ldbox:v\d+:([A-Za-z0-9_-]+):/.exec(s);
  return m?.[1];
}

/** Seals with the current key; opens with any key of the ring. */
export class KeyRing {
  readonly current: DataKey;
  readonly #byId = new Map<string, DataKey>();

  /** `old` keys are only for opening; duplicates (of the current key too) are ignored. */
  constructor(current: DataKey, old: readonly DataKey[] = []) {
    this.current = current;
    for (const k of [current, ...old]) if (!this.#byId.has(k.id)) this.#byId.set(k.id, k);
  }

  /** The ids of every key, current first. */
  get keyIds(): string[] {
    return [...this.#byId.keys()];
  }

  /** Seals `plaintext` for `context` with the current key. */
  seal(plaintext: Buffer | string, context: string): string {
    const { id, key } = this.current;
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(`${PREFIX}${id}:${context}`, 'utf8'));
    const body = Buffer.concat([
      nonce,
      cipher.update(typeof plaintext === 'string' ? Buffer.from(plaintext, 'utf8') : plaintext),
      cipher.final(),
      cipher.getAuthTag(),
    ]);
    return `${PREFIX}${id}:${body.toString('base64url')}`;
  }

  /** Opens a value sealed for `context`; throws a {@link SecretBoxError} when it cannot. */
  open(sealed: string, context: string): Buffer {
    if (!sealed.startsWith('ldbox:')) throw new SecretBoxError('malformed', 'the stored secret is not a sealed value', undefined);
    const version = sealed.slice('ldbox:'.length).split(':', 1)[0];
    if (version !== SEALED_VERSION) {
      throw new SecretBoxError('malformed', `the stored secret has format version ${JSON.stringify(version)}, this ldbox reads ${SEALED_VERSION}`, undefined);
    }
    const m = /^ldbox:v1:([A-Za-z0-9_-]{8}):([A-Za-z0-9_-]*)$/.exec(sealed);
    if (!m) throw new SecretBoxError('malformed', 'the stored secret is not a well-formed sealed value', sealedKeyId(sealed));
    const [, id, b64] = m as unknown as [string, string, string];
    const k = this.#byId.get(id);
    if (!k) {
      throw new SecretBoxError(
        'unknown_key',
        `the stored secret is sealed with data key ${id}, which is not configured (LDBOX_DATA_KEY or LDBOX_DATA_KEY_OLD)`,
        id,
      );
    }
    const body = Buffer.from(b64, 'base64url');
    if (body.length < NONCE_BYTES + TAG_BYTES) throw new SecretBoxError('malformed', `the stored secret sealed with data key ${id} is truncated`, id);
    const decipher = createDecipheriv('aes-256-gcm', k.key, body.subarray(0, NONCE_BYTES), { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(`${PREFIX}${id}:${context}`, 'utf8'));
    decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
    try {
      return Buffer.concat([decipher.update(body.subarray(NONCE_BYTES, body.length - TAG_BYTES)), decipher.final()]);
    } catch {
      throw new SecretBoxError(
        'not_authentic',
        `the stored secret sealed with data key ${id} failed authentication: it was altered, truncated or belongs to another record`,
        id,
      );
    }
  }
}
