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
 */
import type { JobPublisher, PublishOptions, PublishResult } from '../src/nats/job-publisher.js';

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
