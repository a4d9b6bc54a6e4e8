/**
 * Executions over the `ldbox-executions` KV bucket (records expire LDBOX_EXECUTION_RETENTION after their
 * last write, 7 days by default: the bucket's max age, set by the gateway, see ensureKvBuckets).
 *
 * Key: `<workflowId>.<executionId>` — the key is its own per-workflow index: `keys("<workflowId>.*")`
 * lists one workflow's executions, and since execution ids start with their creation time, sorting the
 * ids descending gives newest first. `keys("*.<executionId>")` finds one execution by id alone.
 *
 * Value: {@link ExecutionRecord} as JSON. `nodes` hold the proto JSON form of
 * `ldbox.workflows.v1.NodeExecution` (written by the executor with `toJson`), so the control plane reads
 * them back with `fromJson` and no field is lost in between.
 *
 * Who writes what: nobody writes a `queued` record. The gateway's job in the JOBS stream (subject
 * `ldbox.jobs.<workflowId>.<executionId>`) is the queued execution until an executor picks it up; the
 * executor writes the record (`running` first) before it acknowledges the job, so at every moment the
 * execution is in the stream, in the bucket, or both (then the record wins). Reads look in the bucket,
 * then the stream, then the bucket again (the executor may have written and acked in between).
 */
import { create, fromJson, type JsonObject, type JsonValue } from '@bufbuild/protobuf';
import { timestampFromDate, ValueSchema } from '@bufbuild/protobuf/wkt';
import type { JetStreamManager } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import { JetStreamApiCodes } from '@nats-io/jetstream';
import type { JobPublisher } from '../nats/job-publisher.js';
import {
  type Execution,
  ExecutionSchema,
  ExecutionStatus,
  NodeErrorKind,
  type NodeExecution,
  NodeExecutionSchema,
  type Trigger,
  TriggerSchema,
} from '../gen/ldbox/workflows/v1/workflows_pb.js';
import { JOBS_STREAM, jobSubject, KV_BUCKETS } from '../nats/streams.js';
import { parseWebhookJob } from '../workflows/webhook-job.js';
import { isExecutionId } from '../workflows/ids.js';
import { hasProtoKey, type ProtoEncoding, setStructKeepingKeys, valueUnknownField, withStandIns } from '../json/proto-keys.js';
import { kvKeys, kvLastByPattern } from './kv-index.js';
import { decodeJson, decodePageToken, encodeJson, encodePageToken, isWrongRevision, StaleRecordError, unavailable } from './store-errors.js';

export type ExecutionStatusName = 'queued' | 'running' | 'succeeded' | 'failed';

export interface ExecutionRecord {
  id: string;
  workflowId: string;
  workspace: string;
  status: ExecutionStatusName;
  trigger: { body: JsonObject; query: JsonObject };
  /** Proto JSON of NodeExecution, in workflow order. */
  nodes: JsonValue[];
  /** Empty unless failed. */
  error: string;
  /** ISO-8601. */
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  attempts: number;
  costUnits: number;
  /**
   * True on a finished record once its cost is in the CHARGES ledger (src/store/charge-ledger.ts; the charge
   * is sent before the final write). `false` on a finished record: written by an executor of the former
   * per-workspace counter that crashed before charging; a redelivery charges it. Absent: nothing owed
   * (records from before the field, running ones).
   */
  charged?: boolean;
  /** Nodes whose output was too large to record (the executor's own bookkeeping, not shown). */
  unrecordedOutputs?: string[];
}

/** A stored record and the KV revision it was read at (see {@link ExecutionRepository.read}). */
export interface VersionedExecution {
  record: ExecutionRecord | undefined;
  revision: number;
}

export interface ExecutionPage {
  executions: ExecutionRecord[];
  nextPageToken: string;
}

/** The KV key of an execution. */
export function executionKey(workflowId: string, executionId: string): string {
  return `${workflowId}.${executionId}`;
}

const STATUS: Record<ExecutionStatusName, ExecutionStatus> = {
  queued: ExecutionStatus.QUEUED,
  running: ExecutionStatus.RUNNING,
  succeeded: ExecutionStatus.SUCCEEDED,
  failed: ExecutionStatus.FAILED,
};

/**
 * The deepest nesting of a stored value (trigger body/query, node output) that reads show; deeper parts
 * are replaced by {@link TOO_DEEP_MARKER}. Records written before bodies were bounded (or written by
 * anything else) may hold any depth, and protobuf clients stop at 100 nested messages (three per level).
 */
export const MAX_SHOWN_DEPTH = 32;
/** What a read shows in place of a part nested deeper than {@link MAX_SHOWN_DEPTH}. */
export const TOO_DEEP_MARKER = `[nested deeper than ${MAX_SHOWN_DEPTH} levels: not shown]`;

/**
 * A copy of a stored JSON value that every encoder takes: containers past `maxDepth` become the marker,
 * anything that is not JSON becomes null, and keys are defined (an own `__proto__` stays data).
 */
export function shownJson(v: unknown, maxDepth = MAX_SHOWN_DEPTH, depth = 1): JsonValue {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v !== 'object') return null;
  if (depth > maxDepth) return TOO_DEEP_MARKER;
  if (Array.isArray(v)) return v.map((item) => shownJson(item, maxDepth, depth + 1));
  const out: JsonObject = {};
  for (const key of Object.keys(v)) {
    Object.defineProperty(out, key, {
      value: shownJson((v as Record<string, unknown>)[key], maxDepth, depth + 1),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

function shownObject(v: unknown): JsonObject {
  const shown = shownJson(v);
  return typeof shown === 'object' && shown !== null && !Array.isArray(shown) ? shown : {};
}

function timestamp(iso: unknown): ReturnType<typeof timestampFromDate> | undefined {
  const d = typeof iso === 'string' ? new Date(iso) : undefined;
  return d && !Number.isNaN(d.getTime()) ? timestampFromDate(d) : undefined;
}

/** How the message will be encoded (see ProtoEncoding in src/json/proto-keys.ts). */
export type ExecutionEncoding = ProtoEncoding;

/** A stored node entry as the message; one that cannot be read is shown as such, never a failed read. */
function nodeFromJson(n: unknown, encoding: ExecutionEncoding): NodeExecution {
  try {
    if (typeof n !== 'object' || n === null || Array.isArray(n)) throw new Error('not an object');
    const entry = n as Record<string, unknown>;
    const init: Record<string, unknown> = {};
    for (const key of Object.keys(entry)) if (key !== 'output') init[key] = entry[key];
    const node = fromJson(NodeExecutionSchema, init as JsonObject, { ignoreUnknownFields: true });
    if (Object.hasOwn(entry, 'output')) {
      const output = shownJson(entry.output);
      if (!hasProtoKey(output)) node.output = fromJson(ValueSchema, output);
      else if (encoding === 'json') node.output = fromJson(ValueSchema, withStandIns(output));
      else node.$unknown = [...(node.$unknown ?? []), valueUnknownField(NodeExecutionSchema.field.output!.number, output)];
    }
    return node;
  } catch (err) {
    const id = typeof n === 'object' && n !== null && typeof (n as { id?: unknown }).id === 'string' ? (n as { id: string }).id : '';
    return create(NodeExecutionSchema, {
      id,
      error: { kind: NodeErrorKind.RUNNER, message: `this node's stored entry cannot be read: ${(err as Error).message}` },
    });
  }
}

/** The trigger as the message, its body and query keeping every key for `encoding`. */
function triggerMessage(body: JsonObject, query: JsonObject, encoding: ExecutionEncoding): Trigger {
  const trigger = create(TriggerSchema);
  setStructKeepingKeys(trigger, TriggerSchema.field.body!, body, encoding);
  setStructKeepingKeys(trigger, TriggerSchema.field.query!, query, encoding);
  return trigger;
}

/**
 * The record as the `Execution` message for `encoding` (see {@link ExecutionEncoding}). Never throws,
 * whatever the record holds (see {@link shownJson}): reading executions must work for every stored record.
 */
export function toProtoExecution(r: ExecutionRecord, encoding: ExecutionEncoding = 'json'): Execution {
  const trigger = (typeof r.trigger === 'object' && r.trigger !== null ? r.trigger : {}) as Partial<ExecutionRecord['trigger']>;
  const createdAt = timestamp(r.createdAt);
  const startedAt = timestamp(r.startedAt);
  const finishedAt = timestamp(r.finishedAt);
  return create(ExecutionSchema, {
    id: String(r.id),
    workflowId: String(r.workflowId),
    status: Object.hasOwn(STATUS, r.status) ? STATUS[r.status] : ExecutionStatus.UNSPECIFIED,
    trigger: triggerMessage(shownObject(trigger.body), shownObject(trigger.query), encoding),
    nodes: Array.isArray(r.nodes) ? r.nodes.map((n) => nodeFromJson(n, encoding)) : [],
    error: typeof r.error === 'string' ? r.error : '',
    ...(createdAt ? { createdAt } : {}),
    ...(startedAt ? { startedAt } : {}),
    ...(finishedAt ? { finishedAt } : {}),
    attempts: Number.isInteger(r.attempts) ? r.attempts : 0,
    costUnits: Number.isSafeInteger(r.costUnits) ? BigInt(r.costUnits) : 0n,
  });
}

export class ExecutionRepository {
  constructor(
    private readonly executions: KV,
    private readonly jsm: JetStreamManager,
    private readonly bucket: string = KV_BUCKETS.executions,
    private readonly jobsStream: string = JOBS_STREAM,
    /**
     * Sends writes as plain publishes to the bucket's subject with the revision check as a header, the
     * PubAck matched by reply token (src/nats/job-publisher.ts): the same compare-and-set as `KV.update`,
     * without nats.js's per-request machinery — the executor's hot path. Absent: the KV handle writes.
     */
    private readonly writer?: Pick<JobPublisher, 'publish'>,
  ) {}

  /**
   * The stored record of one execution with its KV revision, the fence of the next {@link write}:
   * revision 0 when the key was never written, the delete marker's revision (and no record) when it was
   * deleted.
   */
  async read(workflowId: string, executionId: string): Promise<VersionedExecution> {
    let e;
    try {
      e = await this.executions.get(executionKey(workflowId, executionId));
    } catch (err) {
      throw unavailable('reading the execution failed', err);
    }
    if (!e) return { record: undefined, revision: 0 };
    if (e.operation !== 'PUT') return { record: undefined, revision: e.revision };
    return { record: decodeJson<ExecutionRecord>(e.value), revision: e.revision };
  }

  /**
   * Writes the record if the key is still at `revision` (as {@link read} returned it; 0 = create it) and
   * returns the new revision: a compare-and-set, so a writer that lost its job to another executor cannot
   * overwrite what that one wrote since. Throws {@link StaleRecordError} when the key moved on.
   */
  async write(record: ExecutionRecord, revision: number): Promise<number> {
    const key = executionKey(record.workflowId, record.id);
    if (this.writer) {
      const r = await this.writer.publish(`$KV.${this.bucket}.${key}`, encodeJson(record), {
        headers: { 'Nats-Expected-Last-Subject-Sequence': String(revision) },
      });
      if (r.ok) return r.seq;
      if (r.errCode === JetStreamApiCodes.StreamWrongLastSequence) throw new StaleRecordError(`execution ${record.id} changed since revision ${revision}`);
      throw unavailable('storing the execution failed', new Error(r.message));
    }
    try {
      return revision === 0 ? await this.executions.create(key, encodeJson(record)) : await this.executions.update(key, encodeJson(record), revision);
    } catch (err) {
      if (isWrongRevision(err)) throw new StaleRecordError(`execution ${record.id} changed since revision ${revision}`, { cause: err });
      throw unavailable('storing the execution failed', err);
    }
  }

  /** One execution by id, recorded or still queued; undefined when there is none (or it expired). */
  async get(executionId: string): Promise<ExecutionRecord | undefined> {
    try {
      const recorded = async () => {
        const e = await kvLastByPattern(this.jsm, this.bucket, `*.${executionId}`);
        return e === undefined ? undefined : decodeJson<ExecutionRecord>(e.value);
      };
      return (await recorded()) ?? (await this.#queued(`*.${executionId}`)) ?? (await recorded());
    } catch (err) {
      throw unavailable('reading the execution failed', err);
    }
  }

  /** The queued execution of the job on `ldbox.jobs.<pattern>`, from the JOBS stream. */
  async #queued(pattern: string): Promise<ExecutionRecord | undefined> {
    const m = await this.jsm.streams.getMessage(this.jobsStream, { last_by_subj: jobSubject(pattern) });
    if (!m) return undefined;
    let job;
    try {
      job = parseWebhookJob(m.data);
    } catch {
      return undefined; // a malformed job is recorded as failed by the executor
    }
    return {
      id: job.executionId,
      workflowId: job.workflowId,
      workspace: job.workspace,
      status: 'queued',
      trigger: job.trigger,
      nodes: [],
      error: '',
      createdAt: job.receivedAt,
      startedAt: null,
      finishedAt: null,
      attempts: 0,
      costUnits: 0,
    };
  }

  /** One execution of a known workflow: the record, else the queued job, else the record (see get). */
  async #readEither(workflowId: string, executionId: string): Promise<ExecutionRecord | undefined> {
    return (
      (await this.#read(executionKey(workflowId, executionId))) ??
      (await this.#queued(`${workflowId}.${executionId}`)) ??
      (await this.#read(executionKey(workflowId, executionId)))
    );
  }

  async #read(key: string): Promise<ExecutionRecord | undefined> {
    let e;
    try {
      e = await this.executions.get(key);
    } catch (err) {
      throw unavailable('reading the execution failed', err);
    }
    if (e?.operation !== 'PUT') return undefined;
    return decodeJson<ExecutionRecord>(e.value);
  }

  /** One page of a workflow's executions, newest first; undefined for a page token that is not ours. */
  async list(workflowId: string, opts: { pageSize: number; pageToken?: string }): Promise<ExecutionPage | undefined> {
    let before: string | undefined;
    if (opts.pageToken) {
      before = decodePageToken(opts.pageToken, isExecutionId);
      if (before === undefined) return undefined;
    }
    const found = new Set<string>();
    const prefix = `${workflowId}.`;
    try {
      for (const k of await kvKeys(this.jsm, this.bucket, `${workflowId}.*`)) found.add(k.slice(prefix.length));
      // Queued ones: the jobs still in the stream (their subjects end in the execution id).
      const jobs = await this.jsm.streams.info(this.jobsStream, { subjects_filter: jobSubject(workflowId, '*') });
      const jobPrefix = jobSubject(workflowId, '');
      for (const subject of Object.keys(jobs.state.subjects ?? {})) found.add(subject.slice(jobPrefix.length));
    } catch (err) {
      throw unavailable('listing executions failed', err);
    }
    const ids = [...found].filter((id) => isExecutionId(id) && (before === undefined || id < before));
    ids.sort((a, b) => (a < b ? 1 : a > b ? -1 : 0));
    const page = ids.slice(0, opts.pageSize);
    let records: ExecutionRecord[];
    try {
      records = (await Promise.all(page.map((id) => this.#readEither(workflowId, id)))).filter((r): r is ExecutionRecord => r !== undefined);
    } catch (err) {
      throw unavailable('reading executions failed', err);
    }
    const more = ids.length > page.length;
    return { executions: records, nextPageToken: more ? encodePageToken(page[page.length - 1]!) : '' };
  }
}
