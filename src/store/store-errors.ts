/**
 * Errors of the KV repositories. Absent records are `undefined`, never errors; what remains is "NATS did
 * not answer" (→ UNAVAILABLE / 503) and "someone else kept changing the record" (→ ABORTED).
 */
import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';

/** NATS/JetStream did not answer or refused the KV operation (not connected, timeout, no stream). */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';
}

/** A compare-and-set update lost to concurrent writers on every attempt. */
export class StoreConflictError extends Error {
  override readonly name = 'StoreConflictError';
}

/**
 * A compare-and-set write of an execution record found the record changed since it was read: another
 * executor took the job over (a redelivery) or finished it. The writer must not retry blindly.
 */
export class StaleRecordError extends Error {
  override readonly name = 'StaleRecordError';
}

export function isStaleRecord(err: unknown): err is StaleRecordError {
  return err instanceof StaleRecordError;
}

/**
 * A stored secret (a node's `auth`) that cannot be opened: its data key is not configured, or the value
 * was altered or moved. The message names the workflow, the node and the key id, never key material.
 */
export class SecretUnavailableError extends Error {
  override readonly name = 'SecretUnavailableError';
  constructor(
    message: string,
    /** The id of the data key the value names, when it names one. */
    readonly keyId: string | undefined,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

export function isSecretUnavailable(err: unknown): err is SecretUnavailableError {
  return err instanceof SecretUnavailableError;
}

export function isStoreUnavailable(err: unknown): err is StoreUnavailableError {
  return err instanceof StoreUnavailableError;
}

export function isStoreConflict(err: unknown): err is StoreConflictError {
  return err instanceof StoreConflictError;
}

/** True when a KV write failed its expected-revision check (create-if-absent or compare-and-set). */
export function isWrongRevision(err: unknown): boolean {
  return (
    err instanceof JetStreamApiError &&
    (err.code === JetStreamApiCodes.StreamWrongLastSequence || err.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  );
}

/** Wraps any other KV failure as {@link StoreUnavailableError}, the original as `cause`. */
export function unavailable(what: string, err: unknown): StoreUnavailableError {
  return new StoreUnavailableError(`${what}: ${(err as Error)?.message ?? String(err)}`, { cause: err });
}

const enc = new TextEncoder();
const dec = new TextDecoder();

export function encodeJson(v: unknown): Uint8Array {
  return enc.encode(JSON.stringify(v));
}

export function decodeJson<T>(data: Uint8Array): T {
  return JSON.parse(dec.decode(data)) as T;
}

/** Opaque page tokens: base64url of the last key returned. */
export function encodePageToken(lastKey: string): string {
  return Buffer.from(lastKey, 'utf8').toString('base64url');
}

/** The key a page token stands for, or undefined when the token is not one of ours (checked by `valid`). */
export function decodePageToken(token: string, valid: (key: string) => boolean): string | undefined {
  if (!/^[A-Za-z0-9_-]+$/.test(token)) return undefined;
  const key = Buffer.from(token, 'base64url').toString('utf8');
  return valid(key) ? key : undefined;
}
