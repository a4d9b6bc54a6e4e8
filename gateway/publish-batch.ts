/**
 * The webhook route's one write to NATS per accepted call, the job (awaiting its PubAck), made cheap.
 * Measured with bench/webhook.ts (CPU profile of the gateway under load): batching, the pooled id
 * randomness in gateway-server.ts, and writing no separate `queued` record (the stored job is the queued
 * execution: see ExecutionRepository) took the gateway from ~190 to ~85 µs of CPU per accepted webhook.
 *
 * - {@link PublishBatcher}: publishes requested while the event loop handles a batch of sockets go out in
 *   one turn (`setImmediate`), so nats.js sends them in one socket write instead of one write per request
 *   (nats.js flushes its outbound buffer in a microtask after the first publish of a macrotask, and every
 *   HTTP request is its own macrotask). Same publishes, same awaited PubAcks; they leave at most one
 *   event-loop turn later.
 * - {@link PublishRetrier}: holds the request while the stream cannot store (README "Scaling out"). When a
 *   NATS node of a cluster dies, the streams it led have no leader for the few seconds of an election
 *   (measured on 2.9.10, three nodes on loopback: 3.5 to 8 s from the SIGKILL to the next PubAck), and the
 *   gateway's own connection may have been to that node. A publish that ends `unavailable` is sent again,
 *   with the same `Nats-Msg-Id`, until a PubAck comes or the publish timeout is spent: the stream stores a
 *   retry after a lost ack once (its duplicate window de-duplicates it and acks with the first seq), so a
 *   retry never makes a second job, and the sender gets its 202 instead of a 503. Only a lasting loss
 *   (no quorum, NATS away) still ends in 503, once the timeout is spent.
 */
import type { JobPublisher, PublishOptions, PublishResult } from '../src/nats/job-publisher.js';

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

/** What the webhook route needs of a publisher (a {@link JobPublisher} or a {@link PublishBatcher}). */
export type Publisher = Pick<JobPublisher, 'publish'>;

interface Queued {
  subject: string;
  data: Uint8Array;
  opts: PublishOptions | undefined;
  resolve: (r: Promise<PublishResult>) => void;
}

/** Batches {@link JobPublisher.publish} calls into one event-loop turn; see the module comment. */
export class PublishBatcher implements Publisher {
  #queue: Queued[] = [];
  #scheduled = false;

  constructor(private readonly publisher: Publisher) {}

  publish(subject: string, data: Uint8Array, opts?: PublishOptions): Promise<PublishResult> {
    return new Promise<PublishResult>((resolve) => {
      this.#queue.push({ subject, data, opts, resolve });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(this.#flush);
      }
    });
  }

  readonly #flush = (): void => {
    this.#scheduled = false;
    const queue = this.#queue;
    this.#queue = [];
    for (const q of queue) {
      try {
        q.resolve(this.publisher.publish(q.subject, q.data, q.opts));
      } catch (err) {
        // JobPublisher.publish does not throw; should another publisher, the rest of the batch still goes.
        q.resolve(Promise.resolve({ ok: false, error: 'unavailable', message: (err as Error).message }));
      }
    }
  };
}
