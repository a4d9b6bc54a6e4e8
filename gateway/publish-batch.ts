/**
 * The webhook route's two writes to NATS per accepted call — the job (awaiting its PubAck) and the `queued`
 * execution record (in the background) — made cheap. Measured with bench/webhook.ts (CPU profile of the
 * gateway under load): together with the pooled id randomness in gateway-server.ts, these took the gateway
 * from ~190 to ~85–105 µs of CPU per accepted webhook.
 *
 * - {@link PublishBatcher}: publishes requested while the event loop handles a batch of sockets go out in
 *   one turn (`setImmediate`), so nats.js sends them in one socket write instead of one write per request
 *   (nats.js flushes its outbound buffer in a microtask after the first publish of a macrotask, and every
 *   HTTP request is its own macrotask). Same publishes, same awaited PubAcks; they leave at most one
 *   event-loop turn later.
 * - {@link createQueuedRecord}: the `queued` execution record, written as KV create-if-absent through the
 *   job publisher (publish on `$KV.<bucket>.<key>` with `Nats-Expected-Last-Subject-Sequence: 0`, which is
 *   exactly what `kv.put(key, value, { previousSeq: 0 })` sends) instead of through nats.js's `js.publish()`
 *   request path, the largest single cost per request before (an Error built per request for async
 *   traces, another to cancel each resolved request, a timer each). The outcome is the same as
 *   `ExecutionRepository.createIfAbsent`: created, or already there (the executor wrote first: nothing
 *   changes), or a failure to log.
 * - {@link withTrigger}: the trigger (the webhook body, most of the bytes) is serialized once for both.
 */
import type { JobPublisher, PublishFailure, PublishOptions, PublishResult } from '../src/nats/job-publisher.js';
import { KV_BUCKETS } from '../src/nats/streams.js';
import { executionKey, type ExecutionRecord } from '../src/store/execution-repository.js';
import { encodeJson } from '../src/store/store-errors.js';

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

/** JetStream's error code for a failed `Nats-Expected-Last-Subject-Sequence` check (and its "unknown" twin). */
const WRONG_LAST_SEQUENCE = new Set([10071, 10164]);

export type CreateRecordResult = { ok: true; created: boolean } | PublishFailure;

/**
 * `JSON.stringify(value)` with its `trigger` property last, from `triggerJson` (= `JSON.stringify(value.trigger)`):
 * the job and the queued record both carry the trigger, which is most of their bytes, so it is serialized
 * once. For the job (`trigger` is its last property) the result is byte for byte `JSON.stringify(job)`.
 */
export function withTrigger(value: { trigger: unknown }, triggerJson: string): string {
  const { trigger: _, ...rest } = value;
  const head = JSON.stringify(rest);
  return head === '{}' ? `{"trigger":${triggerJson}}` : `${head.slice(0, -1)},"trigger":${triggerJson}}`;
}

/**
 * `ExecutionRepository.createIfAbsent(record)` over the fast publisher: see the module comment.
 * `triggerJson`, when given, is `JSON.stringify(record.trigger)` already made for the job.
 */
export async function createQueuedRecord(publisher: Publisher, record: ExecutionRecord, triggerJson?: string): Promise<CreateRecordResult> {
  const subject = `$KV.${KV_BUCKETS.executions}.${executionKey(record.workflowId, record.id)}`;
  const data = triggerJson === undefined ? encodeJson(record) : Buffer.from(withTrigger(record, triggerJson), 'utf8');
  const r = await publisher.publish(subject, data, { headers: { 'Nats-Expected-Last-Subject-Sequence': '0' } });
  if (r.ok) return { ok: true, created: true };
  if (r.errCode !== undefined && WRONG_LAST_SEQUENCE.has(r.errCode)) return { ok: true, created: false };
  return r;
}
