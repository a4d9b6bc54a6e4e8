/**
 * Workflows over the `ldbox-workflows` KV bucket, plus the `ldbox-webhooks` index.
 *
 * Keys and values (JSON, UTF-8):
 * - `ldbox-workflows`: key = workflow id (`wf_…`), value = {@link WorkflowRecord} (src/workflows/workflow-model.ts):
 *   `{"id","name","workspace","nodes":[…],"webhook":{"webhookId","auth":{"method","secretHash",
 *   "previousSecretHash","previousSecretExpiresAt"}},"rateLimitPerSecond","createdAt"}`. Webhook secrets only
 *   as SHA-256 hashes; each node's `auth` sealed with the data key (workflow-codec.ts). Gateways watch this
 *   bucket into an in-memory KvCache for the webhook route.
 * - `ldbox-webhooks`: key = webhook id (`wh_…`), value = `{"workflowId": "wf_…"}`. Written after the
 *   workflow, deleted with it; for lookups by webhook id (not used by the webhook route, whose URL names
 *   the workflow).
 *
 * Writes are compare-and-set on the KV revision, so two concurrent control-plane calls (a rotation and a
 * method switch) never lose one another's change.
 */
import type { JetStreamManager } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import type { KeyRing } from '../crypto/secret-box.js';
import { KV_BUCKETS } from '../nats/streams.js';
import { kvKeys } from './kv-index.js';
import { isWorkflowId } from '../workflows/ids.js';
import type { WorkflowRecord } from '../workflows/workflow-model.js';
import { decodeWorkflow, decodeWorkflowForRouting, encodeWorkflow, needsReencrypt } from './workflow-codec.js';
import {
  decodePageToken,
  encodeJson,
  encodePageToken,
  isSecretUnavailable,
  isWrongRevision,
  type SecretUnavailableError,
  StoreConflictError,
  unavailable,
} from './store-errors.js';

export interface WorkflowPage {
  workflows: WorkflowRecord[];
  /**
   * Workflows of the page whose node `auth` cannot be opened with the configured data keys, by id: why
   * (naming the node and key id, never a secret). Their records in `workflows` have every node's `auth`
   * empty; never use it.
   */
  unreadable: Map<string, SecretUnavailableError>;
  /** Empty when this is the last page. */
  nextPageToken: string;
}

const CAS_ATTEMPTS = 5;

export class WorkflowRepository {
  constructor(
    private readonly workflows: KV,
    private readonly webhooks: KV,
    private readonly jsm: JetStreamManager,
    /** Seals node `auth` values on write, opens them on read. */
    private readonly keys: KeyRing,
    private readonly bucket: string = KV_BUCKETS.workflows,
  ) {}

  /** Stores a new workflow (create-if-absent on its id) and its webhook index entry. */
  async create(record: WorkflowRecord): Promise<void> {
    try {
      await this.workflows.put(record.id, encodeWorkflow(record, this.keys), { previousSeq: 0 });
    } catch (err) {
      if (isWrongRevision(err)) throw new StoreConflictError(`workflow ${record.id} already exists`, { cause: err });
      throw unavailable('storing the workflow failed', err);
    }
    try {
      await this.webhooks.put(record.webhook.webhookId, encodeJson({ workflowId: record.id }));
    } catch (err) {
      throw unavailable('storing the webhook index failed', err);
    }
  }

  /**
   * The workflow and its KV revision; undefined when there is none. Throws SecretUnavailableError when a
   * node's `auth` cannot be opened with the configured data keys.
   */
  async getWithRevision(id: string): Promise<{ record: WorkflowRecord; revision: number } | undefined> {
    const e = await this.readEntry(id);
    return e && { record: decodeWorkflow(e.value, this.keys), revision: e.revision };
  }

  /** The workflow's KV entry, `undefined` when there is none (or it was deleted). */
  private async readEntry(id: string) {
    let e;
    try {
      e = await this.workflows.get(id);
    } catch (err) {
      throw unavailable('reading the workflow failed', err);
    }
    return e && e.operation === 'PUT' ? e : undefined;
  }

  async get(id: string): Promise<WorkflowRecord | undefined> {
    return (await this.getWithRevision(id))?.record;
  }

  /**
   * Applies `change` to the stored workflow with compare-and-set, retrying on concurrent writes.
   * Returns undefined when the workflow does not exist, otherwise the new record and `change`'s result.
   */
  async update<R>(
    id: string,
    change: (record: WorkflowRecord) => { record: WorkflowRecord; result: R },
  ): Promise<{ record: WorkflowRecord; result: R } | undefined> {
    for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
      const current = await this.getWithRevision(id);
      if (!current) return undefined;
      const next = change(current.record);
      try {
        await this.workflows.update(id, encodeWorkflow(next.record, this.keys), current.revision);
        return next;
      } catch (err) {
        if (!isWrongRevision(err)) throw unavailable('updating the workflow failed', err);
      }
    }
    throw new StoreConflictError(`workflow ${id} changed concurrently ${CAS_ATTEMPTS} times; try again`);
  }

  /** Deletes the workflow and its webhook index entry; false when there was none. */
  async delete(id: string): Promise<boolean> {
    const current = await this.getWithRevision(id);
    if (!current) return false;
    try {
      await this.workflows.delete(id);
      await this.webhooks.delete(current.record.webhook.webhookId);
    } catch (err) {
      throw unavailable('deleting the workflow failed', err);
    }
    return true;
  }

  /**
   * One page of workflows in id order, optionally of one workspace. The token is the last id of the
   * previous page (opaque, base64url). Returns undefined for a token that is not ours. A workflow whose
   * node `auth` cannot be opened is in the page all the same, and in its `unreadable` map.
   */
  async list(opts: { workspace?: string; pageSize: number; pageToken?: string }): Promise<WorkflowPage | undefined> {
    let after = '';
    if (opts.pageToken) {
      const key = decodePageToken(opts.pageToken, isWorkflowId);
      if (key === undefined) return undefined;
      after = key;
    }
    let ids: string[];
    try {
      ids = [];
      // Not kv.keys(): it can hang while keys are rewritten (see kv-index.ts).
      for (const k of await kvKeys(this.jsm, this.bucket)) if (k > after) ids.push(k);
    } catch (err) {
      throw unavailable('listing workflows failed', err);
    }
    ids.sort();
    const out: WorkflowRecord[] = [];
    const unreadable = new Map<string, SecretUnavailableError>();
    // One workflow whose secrets cannot be opened (a key rotated away) is reported, never fails the list.
    const read = async (id: string): Promise<WorkflowRecord | undefined> => {
      const e = await this.readEntry(id);
      if (!e) return undefined;
      return decodeWorkflowForRouting(e.value, this.keys, (err) => unreadable.set(id, err));
    };
    let i = 0;
    // Read in batches: with a workspace filter a page may need more reads than its size.
    while (i < ids.length && out.length < opts.pageSize) {
      const batch = ids.slice(i, i + Math.max(opts.pageSize - out.length, 16));
      const records = await Promise.all(batch.map(read));
      for (let j = 0; j < batch.length; j++) {
        i++;
        const r = records[j];
        if (r && (!opts.workspace || r.workspace === opts.workspace)) {
          out.push(r);
          if (out.length === opts.pageSize) break;
        }
      }
    }
    const more = out.length === opts.pageSize && ids.slice(i).length > 0;
    for (const id of unreadable.keys()) if (!out.some((r) => r.id === id)) unreadable.delete(id);
    return { workflows: out, unreadable, nextPageToken: more ? encodePageToken(out[out.length - 1]!.id) : '' };
  }

  /**
   * Rewrites every stored workflow whose node `auth` is in plaintext or sealed with an old key, so that
   * afterwards only the current key is needed (`ldbox reencrypt`). Compare-and-set, so a concurrent control-
   * plane write is never lost. A workflow that cannot be opened is reported in `failed`, not rewritten.
   */
  async reencryptAll(): Promise<{ rewritten: string[]; unchanged: number; failed: Array<{ id: string; error: string }> }> {
    let ids: string[];
    try {
      ids = (await kvKeys(this.jsm, this.bucket)).sort();
    } catch (err) {
      throw unavailable('listing workflows failed', err);
    }
    const out = { rewritten: [] as string[], unchanged: 0, failed: [] as Array<{ id: string; error: string }> };
    for (const id of ids) {
      let e;
      try {
        e = await this.workflows.get(id);
      } catch (err) {
        throw unavailable('reading the workflow failed', err);
      }
      if (e?.operation !== 'PUT') continue;
      if (!needsReencrypt(e.value, this.keys)) {
        out.unchanged++;
        continue;
      }
      try {
        const done = await this.update(id, (record) => ({ record, result: undefined }));
        if (done) out.rewritten.push(id);
      } catch (err) {
        if (!isSecretUnavailable(err)) throw err;
        out.failed.push({ id, error: err.message });
      }
    }
    return out;
  }
}
