/**
 * `Idempotency-Key` claims in the `ldbox-idempotency` KV bucket.
 *
 * Why KV and not only `Nats-Msg-Id`: the stream remembers message ids for its duplicate window only
 * (2 min by default, held in server memory), while a webhook sender may retry hours later. A key is
 * claimed with KV *create* (create-if-absent, a compare-and-set on "no value"), so exactly one request
 * wins even when two arrive at once, and the claim lives as long as the bucket's TTL (`max_age`, 24 h by
 * default, see `ensureKvBuckets`). That TTL is how long a key is honoured.
 *
 * The gateway's flow (no accepted webhook lost, none run twice):
 * 1. `claimIdempotencyKey(kv, workflowId, key, newExecutionId)`.
 * 2. `first: true` → publish the job with `msgID = executionId`. On PubAck: `confirmIdempotencyKey` → 202.
 *    On failure: `releaseIdempotencyKey` (best effort) → 503/429, so that the sender's retry starts afresh.
 * 3. `first: false, state: 'queued'` → 202 with the stored execution id, nothing published.
 * 4. `first: false, state: 'claimed'` → the first request is still publishing, or died (or lost NATS)
 *    between claim and confirm. Publish the retry's job with `msgID = <stored executionId>`: inside the
 *    stream's duplicate window a job already stored is de-duplicated; then confirm and answer 202 with
 *    the stored id. (Outside the window the executor's execution record makes a re-run a no-op.)
 */
import { createHash } from 'node:crypto';
import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';

export type ClaimState = 'claimed' | 'queued';

export type ClaimResult =
  | { ok: true; first: true; revision: number }
  | { ok: true; first: false; executionId: string; state: ClaimState; updatedAt: string; revision: number }
  | { ok: false; error: 'unavailable'; message: string };

interface ClaimValue {
  executionId: string;
  state: ClaimState;
  updatedAt: string;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/**
 * The KV key of a (scope, Idempotency-Key) pair: SHA-256, base64url. Header values may hold any
 * character and be long; KV keys may not. The scope (the workflow id) keeps equal keys of different
 * workflows apart.
 */
export function idempotencyKvKey(scope: string, key: string): string {
  return createHash('sha256').update(`${scope.length}:${scope}:${key}`).digest('base64url');
}

function isWrongLastSequence(err: unknown): boolean {
  return (
    err instanceof JetStreamApiError &&
    (err.code === JetStreamApiCodes.StreamWrongLastSequence || err.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  );
}

const unavailable = (err: unknown): { ok: false; error: 'unavailable'; message: string } => ({
  ok: false,
  error: 'unavailable',
  message: (err as Error)?.message ?? String(err),
});

function parse(value: Uint8Array): ClaimValue | undefined {
  try {
    const v = JSON.parse(dec.decode(value)) as Partial<ClaimValue>;
    if (typeof v.executionId === 'string' && (v.state === 'claimed' || v.state === 'queued')) {
      return { executionId: v.executionId, state: v.state, updatedAt: String(v.updatedAt ?? '') };
    }
  } catch {
    /* fall through */
  }
  return undefined;
}

/**
 * Claim `key` for `executionId` within `scope`. `first: true` means this request owns the key; otherwise
 * the stored execution id (and whether its job was confirmed queued) is returned. Concurrent first
 * requests: exactly one gets `first: true`, the others read its execution id. NATS trouble → `ok: false`.
 */
export async function claimIdempotencyKey(kv: KV, scope: string, key: string, executionId: string): Promise<ClaimResult> {
  const k = idempotencyKvKey(scope, key);
  const value: ClaimValue = { executionId, state: 'claimed', updatedAt: new Date().toISOString() };
  const data = enc.encode(JSON.stringify(value));
  // Create-if-absent is a put that expects the key's last revision to be `expect`: 0 for a key never
  // written (or expired), the tombstone's revision for a deleted one. (Not `kv.create()`: on a timeout it
  // goes on to read the key, doubling the time a call takes while NATS is away.)
  let expect = 0;
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      const revision = await kv.put(k, data, { previousSeq: expect });
      return { ok: true, first: true, revision };
    } catch (err) {
      if (!isWrongLastSequence(err)) return unavailable(err);
    }
    let e;
    try {
      e = await kv.get(k);
    } catch (err) {
      return unavailable(err);
    }
    // Claimed by someone else, unless it was released or expired between our put and our read: retry.
    if (!e) {
      expect = 0;
      continue;
    }
    if (e.operation !== 'PUT') {
      expect = e.revision;
      continue;
    }
    const v = parse(e.value);
    if (!v) return { ok: false, error: 'unavailable', message: `unreadable idempotency record ${k}` };
    return { ok: true, first: false, executionId: v.executionId, state: v.state, updatedAt: v.updatedAt, revision: e.revision };
  }
  return { ok: false, error: 'unavailable', message: 'idempotency key contended: gave up after 5 attempts' };
}

/**
 * Mark the claim as queued (the job's PubAck arrived). Compare-and-set on `revision`; returns false if
 * the record changed meanwhile (someone else confirmed it) or NATS failed — both harmless.
 */
export async function confirmIdempotencyKey(kv: KV, scope: string, key: string, executionId: string, revision: number): Promise<boolean> {
  const value: ClaimValue = { executionId, state: 'queued', updatedAt: new Date().toISOString() };
  try {
    await kv.update(idempotencyKvKey(scope, key), enc.encode(JSON.stringify(value)), revision);
    return true;
  } catch {
    return false;
  }
}

/**
 * Give up a claim whose job could not be queued, so a retry starts afresh. Deletes only if the record
 * is still at `revision`. Best effort: when NATS is down this fails, and the retry takes the `claimed`
 * path (republish with the stored id) instead.
 */
export async function releaseIdempotencyKey(kv: KV, scope: string, key: string, revision: number): Promise<boolean> {
  try {
    await kv.delete(idempotencyKvKey(scope, key), { previousSeq: revision });
    return true;
  } catch {
    return false;
  }
}
