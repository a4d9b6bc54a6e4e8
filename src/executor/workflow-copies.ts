/**
 * The executor's copy of the workflows bucket, kept current by a KV watch (like the gateway's), so that
 * an execution does not read and decrypt its workflow from NATS: one request less per execution. Each
 * stored value is opened (node `auth` decrypted) once, when first used, and kept until it changes.
 *
 * Freshness: an update reaches the copy within the watch's delay (milliseconds); a job taken in that
 * window may run the version before — as the gateway, which routes and authenticates webhooks by its own
 * watched copy, may accept one by it. A workflow missing from the copy (created a moment ago, or the copy
 * not loaded yet) is read from the bucket, as before, so a new workflow is never taken for a deleted one.
 */
import { decodeWorkflow } from '../store/workflow-codec.js';
import type { KeyRing } from '../crypto/secret-box.js';
import type { Logger } from '../logging/logger.js';
import type { NatsClient } from '../nats/connect.js';
import { KvCache } from '../nats/kv-cache.js';
import { KV_BUCKETS } from '../nats/streams.js';
import { isSecretUnavailable } from '../store/store-errors.js';
import type { WorkflowRecord } from '../workflows/workflow-model.js';

interface Copy {
  raw: Uint8Array;
  opened?: { record: WorkflowRecord } | { error: Error };
}

export class WorkflowCopies {
  readonly #cache: KvCache<Copy>;

  constructor(
    client: NatsClient,
    private readonly keys: KeyRing,
    /** Reads a workflow from the bucket (WorkflowRepository.get): what a workflow not in the copy costs. */
    private readonly read: (id: string) => Promise<WorkflowRecord | undefined>,
    log: Logger,
  ) {
    this.#cache = new KvCache<Copy>({ client, bucket: KV_BUCKETS.workflows, logger: log, decode: (raw) => ({ raw }) });
  }

  /** The workflow; throws SecretUnavailableError when a node's `auth` cannot be opened (as the repository). */
  async get(id: string): Promise<WorkflowRecord | undefined> {
    const copy = this.#cache.ready ? this.#cache.get(id) : undefined;
    if (!copy) return this.read(id);
    if (!copy.opened) {
      try {
        copy.opened = { record: decodeWorkflow(copy.raw, this.keys) };
      } catch (err) {
        if (!isSecretUnavailable(err)) throw err;
        copy.opened = { error: err };
      }
    }
    if ('error' in copy.opened) throw copy.opened.error;
    return copy.opened.record;
  }

  close(): Promise<void> {
    return this.#cache.close();
  }
}
