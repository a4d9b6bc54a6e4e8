/**
 * The record of accepted signatures, shared by every gateway: the `ldbox-signatures` KV bucket.
 *
 * A timestamped signed call (Stripe, Standard Webhooks, Slack) is accepted while its timestamp is within the
 * tolerance of now, so a captured call could be sent again during that window. Each accepted one is claimed
 * here with KV *create* (create-if-absent), keyed by its replay key (webhook-signature.ts: the workflow, the
 * preset, the timestamp and the signature): whichever gateway gets a second copy finds the key and refuses
 * it, also when two copies arrive at two gateways at once. The bucket's max age is twice the tolerance plus a
 * margin, the longest any timestamp can stay acceptable after its first use, so entries expire by themselves.
 *
 * Tests: test/gateway/webhook-signatures.test.ts (replay, and replay across two gateways).
 */
import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';

/** The bucket's name. */
export const SIGNATURES_BUCKET = 'ldbox-signatures';

/** The bucket's max age for a tolerance: every signature stays recorded while it could still be accepted. */
export function signaturesTtlMs(toleranceMs: number): number {
  return 2 * toleranceMs + 60_000;
}

/** A claim this request owns (to release when its job is not stored). */
export interface ReplayClaim {
  outcome: 'first';
  key: string;
  revision: number;
}

export type ReplayClaimResult = ReplayClaim | { outcome: 'replayed' } | { outcome: 'unavailable'; message: string };

const ONE = new Uint8Array([0x31]);

function isWrongLastSequence(err: unknown): boolean {
  return (
    err instanceof JetStreamApiError &&
    (err.code === JetStreamApiCodes.StreamWrongLastSequence || err.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  );
}

/** Claims `key` (a base64url replay key): `first` once across all gateways, `replayed` afterwards. */
export async function claimSignature(kv: KV, key: string): Promise<ReplayClaimResult> {
  // Create-if-absent as a put expecting the key's last revision (as in idempotency.ts): 0 for a key never
  // written or expired, the tombstone's revision for a released one.
  let expect = 0;
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      return { outcome: 'first', key, revision: await kv.put(key, ONE, { previousSeq: expect }) };
    } catch (err) {
      if (!isWrongLastSequence(err)) return { outcome: 'unavailable', message: (err as Error)?.message ?? String(err) };
    }
    let e;
    try {
      e = await kv.get(key);
    } catch (err) {
      return { outcome: 'unavailable', message: (err as Error)?.message ?? String(err) };
    }
    if (e?.operation === 'PUT') return { outcome: 'replayed' };
    expect = e?.revision ?? 0;
  }
  return { outcome: 'unavailable', message: 'signature record contended: gave up after 5 attempts' };
}

/**
 * Forgets a claim whose call was not stored (503, 413), so that the sender's retry of the same signed call
 * is not refused as a replay. Best effort: a claim that cannot be released expires with the bucket's age.
 */
export async function releaseSignature(kv: KV, claim: ReplayClaim): Promise<void> {
  try {
    await kv.delete(claim.key, { previousSeq: claim.revision });
  } catch {
    /* expires by itself */
  }
}
