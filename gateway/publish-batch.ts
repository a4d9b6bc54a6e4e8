/**
 * The webhook route's one write to NATS per accepted call, the job (awaiting its PubAck), made cheap and
 * kept through a leader election. Measured with bench/webhook.ts (CPU profile of the gateway under load):
 * batching (src/nats/publish-batcher.ts), the pooled id randomness in gateway-server.ts, and writing no
 * separate `queued` record (the stored job is the queued execution: see ExecutionRepository) took the
 * gateway from ~190 to ~85 µs of CPU per accepted webhook.
 *
 * - {@link PublishRetrier}: holds the request while the stream cannot store (README "Scaling out"). When a
 *   NATS node of a cluster dies, the streams it led have no leader for the few seconds of an election
 *   (measured on 2.9.10, three nodes on loopback: 3.5 to 8 s from the SIGKILL to the next PubAck), and the
 *   gateway's own connection may have been to that node. A publish that ends `unavailable` is sent again,
 *   with the same `Nats-Msg-Id`, until a PubAck comes or the publish timeout is spent: the stream stores a
 *   retry after a lost ack once (its duplicate window de-duplicates it and acks with the first seq), so a
 *   retry never makes a second job, and the sender gets its 202 instead of a 503. Only a lasting loss
 *   (no quorum, NATS away) still ends in 503, once the timeout is spent.
 */
import type { PublishOptions, PublishResult } from '../src/nats/job-publisher.js';
import type { Publisher } from '../src/nats/publish-batcher.js';

/** Pause before retry `n` (0-based) of an unavailable publish: 25 ms doubling to 400 ms. */
export function retryPauseMs(n: number): number {
  return Math.min(400, 25 * 2 ** n);
}

export interface PublishRetrierOptions {
  /** The whole budget of one publish, retries included (LDBOX_PUBLISH_TIMEOUT_MS). */
  timeoutMs: number;
  /** How long one attempt waits for its PubAck (the inner publisher's timeout): no retry starts with less than this left. */
  attemptTimeoutMs: number;
  /** Told of each retry (for a metric or a log line). */
  onRetry?: (attempt: number, failure: PublishResult) => void;
  now?: () => number;
}

/** Sends an `unavailable` publish again (same msgID) until it is stored or the timeout is spent; see the module comment. */
export class PublishRetrier implements Publisher {
  readonly #now: () => number;
  constructor(
    private readonly publisher: Publisher,
    private readonly opts: PublishRetrierOptions,
  ) {
    this.#now = opts.now ?? (() => performance.now());
  }

  async publish(subject: string, data: Uint8Array, opts?: PublishOptions): Promise<PublishResult> {
    const deadline = this.#now() + this.opts.timeoutMs;
    for (let n = 0; ; n++) {
      const r = await this.publisher.publish(subject, data, opts);
      // Without a msgID a retry could store the job twice; every other failure is not one a retry mends.
      if (r.ok || r.error !== 'unavailable' || opts?.msgID === undefined) return r;
      const pause = retryPauseMs(n);
      if (deadline - this.#now() < pause + this.opts.attemptTimeoutMs) return r;
      this.opts.onRetry?.(n + 1, r);
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

/** The PubAck wait of one attempt for a publish timeout: a quarter of it, from 250 ms to 2 s (an election takes seconds, a PubAck milliseconds). */
export function attemptTimeoutMs(publishTimeoutMs: number): number {
  return Math.min(2000, Math.max(250, Math.floor(publishTimeoutMs / 4)));
}
