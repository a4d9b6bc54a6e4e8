/**
 * {@link PublishBatcher}: publishes requested during one event-loop turn go out together at its end
 * (`setImmediate`), so nats.js sends them in one socket write instead of one write each. nats.js flushes
 * its outbound buffer in a microtask after the first publish it is given while the buffer is empty, so
 * publishes made by independent promise chains (every HTTP request of the gateway, every job the executor
 * runs) mostly leave one write apiece: measured in bench:webhook part 2, the executor made ~2 socket writes
 * per execution (its record writes and charges) and they were its largest single cost in a CPU profile.
 * Same publishes in the same order, same awaited PubAcks; they leave at most one event-loop turn later.
 * The gateway's webhook route and the executor's record writes and charges go through one.
 */
import type { JobPublisher, PublishOptions, PublishResult } from './job-publisher.js';

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
