/**
 * Executions over the `ldbox-executions` KV bucket (records expire LDBOX_EXECUTION_RETENTION after their
 * last write, 7 days by default: the bucket's max age, set by the gateway, see ensureKvBuckets).
 *
 * Key: `<workflowId>.<executionId>` — the key is its own per-workflow index: `keys("<workflowId>.*")`
 * lists one workflow's executions, and since execution ids start with their creation time, sorting the
 * ids descending gives newest first and a time range is a range of ids, applied before any record is
 * read. `keys("*.<executionId>")` finds one execution by id alone. Listing across workflows lists every
 * key (names only, from the stream's subject index): its cost grows with the executions kept, see
 * {@link ExecutionRepository.list}.
 *
 * Value: {@link ExecutionRecord} as JSON. `nodes` hold the proto JSON form of
 * `ldbox.workflows.v1.NodeExecution` (written by the executor with `toJson`), so the control plane reads
 * them back with `fromJson` and no field is lost in between.
 *
 * Who writes what: nobody writes a `queued` record, except CancelExecution's `cancelled` one. The gateway's job in the JOBS stream (subject
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
import { parseWebhookJob, type WebhookJob, type WebhookTrigger } from '../workflows/webhook-job.js';
import { executionIdTime, isExecutionId } from '../workflows/ids.js';
import { hasProtoKey, type ProtoEncoding, setStructKeepingKeys, valueUnknownField, withStandIns } from '../json/proto-keys.js';
import { kvKeys, kvLastByPattern } from './kv-index.js';
import {
  decodeJson,
  decodePageToken,
  encodeJson,
  encodePageToken,
  isWrongRevision,
  StaleRecordError,
  StoreConflictError,
  unavailable,
} from './store-errors.js';

export type ExecutionStatusName = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';

/** The statuses an execution ends in: its record never changes again. */
export function isFinalStatus(status: ExecutionStatusName | undefined): boolean {
  return status === 'succeeded' || status === 'failed' || status === 'cancelled';
}

export interface ExecutionRecord {
  id: string;
  workflowId: string;
  workspace: string;
  status: ExecutionStatusName;
  /** The job's trigger (src/workflows/webhook-job.ts); `headers` and `method` absent in records from before they were kept. */
  trigger: WebhookTrigger;
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
   * True on a finished record: its cost goes to the CHARGES ledger (src/store/charge-ledger.ts) with this
   * write, and a redelivery of its job sends it again (the ledger keeps one). `false` on a finished record:
   * a cost is owed (a cancelled execution's nodes); the executor charges it. Absent: nothing owed (records
   * from before the field, running ones).
   */
  charged?: boolean;
  /** Nodes whose output was too large to record (the executor's own bookkeeping, not shown). */
  unrecordedOutputs?: string[];
  /** The workflow version the executor ran (absent while queued, and in records from before versions). */
  workflowVersion?: number;
  /** The execution this one replays (ReplayExecution); absent for a webhook call's. */
  replayOf?: string;
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
  cancelled: ExecutionStatus.CANCELLED,
};

/** The proto status as the stored one; undefined for UNSPECIFIED (callers refuse unknown numbers before). */
export function executionStatusFromProto(s: ExecutionStatus): ExecutionStatusName | undefined {
  for (const [name, value] of Object.entries(STATUS)) if (value === s) return name as ExecutionStatusName;
  return undefined;
}

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

/** Header names and values as stored by the gateway: strings only (anything else is left out). */
function shownHeaders(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return out;
  for (const key of Object.keys(v)) {
    const value = (v as Record<string, unknown>)[key];
    if (key !== '__proto__' && typeof value === 'string') out[key] = value;
  }
  return out;
}

/** The trigger as the message, its body and query keeping every key for `encoding`. */
function triggerMessage(stored: Partial<WebhookTrigger>, encoding: ExecutionEncoding): Trigger {
  const trigger = create(TriggerSchema, { headers: shownHeaders(stored.headers), method: typeof stored.method === 'string' ? stored.method : '' });
  const body = shownJson(stored.body ?? {});
  if (!hasProtoKey(body)) trigger.body = fromJson(ValueSchema, body);
  else if (encoding === 'json') trigger.body = fromJson(ValueSchema, withStandIns(body));
  else trigger.$unknown = [...(trigger.$unknown ?? []), valueUnknownField(TriggerSchema.field.body!.number, body)];
  setStructKeepingKeys(trigger, TriggerSchema.field.query!, shownObject(stored.query), encoding);
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
    trigger: triggerMessage(trigger, encoding),
    nodes: Array.isArray(r.nodes) ? r.nodes.map((n) => nodeFromJson(n, encoding)) : [],
    error: typeof r.error === 'string' ? r.error : '',
    ...(createdAt ? { createdAt } : {}),
    ...(startedAt ? { startedAt } : {}),
    ...(finishedAt ? { finishedAt } : {}),
    attempts: Number.isInteger(r.attempts) ? r.attempts : 0,
    costUnits: Number.isSafeInteger(r.costUnits) ? BigInt(r.costUnits) : 0n,
    workflowVersion: Number.isInteger(r.workflowVersion) && r.workflowVersion! > 0 ? r.workflowVersion! : 0,
    replayOf: typeof r.replayOf === 'string' ? r.replayOf : '',
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
    return (await this.#queuedJob(pattern))?.record;
  }

  /** The job on `ldbox.jobs.<pattern>` (its stream sequence and itself) and its queued execution. */
  async #queuedJob(pattern: string): Promise<{ seq: number; job: WebhookJob; record: ExecutionRecord } | undefined> {
    const m = await this.jsm.streams.getMessage(this.jobsStream, { last_by_subj: jobSubject(pattern) });
    if (!m) return undefined;
    let job;
    try {
      job = parseWebhookJob(m.data);
    } catch {
      return undefined; // a malformed job is recorded as failed by the executor
    }
    const record = queuedRecord(job);
    return { seq: m.seq, job, record };
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

  /**
   * The ids of the executions that may match `filter` (of its workflow, in its time range), newest first,
   * each with its workflow: the keys of the bucket plus the subjects of the jobs still queued. Only key
   * names are read here (the stream's subject index); the time filter needs no record, since an id
   * starts with its creation time.
   */
  async #candidates(filter: ExecutionFilter, before: string | undefined): Promise<Array<{ workflowId: string; id: string }>> {
    const found = new Map<string, string>();
    const wf = filter.workflowId ?? '*';
    try {
      for (const k of await kvKeys(this.jsm, this.bucket, `${wf}.*`)) {
        const dot = k.indexOf('.');
        found.set(k.slice(dot + 1), k.slice(0, dot));
      }
      // Queued ones: the jobs still in the stream (their subjects end in the workflow and execution ids).
      const jobs = await this.jsm.streams.info(this.jobsStream, { subjects_filter: jobSubject(wf, '*') });
      const jobPrefix = jobSubject('');
      for (const subject of Object.keys(jobs.state.subjects ?? {})) {
        const [workflowId, id] = subject.slice(jobPrefix.length).split('.');
        if (workflowId !== undefined && id !== undefined && !found.has(id)) found.set(id, workflowId);
      }
    } catch (err) {
      throw unavailable('listing executions failed', err);
    }
    const after = filter.createdAfter?.getTime();
    const until = filter.createdBefore?.getTime();
    const out: Array<{ workflowId: string; id: string }> = [];
    for (const [id, workflowId] of found) {
      if (!isExecutionId(id) || (before !== undefined && id >= before)) continue;
      const at = executionIdTime(id)!.getTime();
      if ((after !== undefined && at < after) || (until !== undefined && at >= until)) continue;
      out.push({ workflowId, id });
    }
    return out.sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
  }

  /**
   * One page of executions matching `filter`, newest first; undefined for a page token that is not ours.
   *
   * Cost: every call lists the key names of the bucket (of one workflow when `workflowId` is set, of all
   * otherwise: one subject name per execution kept, about 60 bytes each, over the retention window) and of
   * the queued jobs, then reads records newest first until the page is full. With `statuses`, a call
   * reads at most {@link MAX_RECORD_READS_PER_PAGE} records and may return a short page with a
   * `nextPageToken` (the last id it examined), so that a sparse status never makes one call read everything.
   */
  async list(filter: ExecutionFilter, opts: { pageSize: number; pageToken?: string }): Promise<ExecutionPage | undefined> {
    let before: string | undefined;
    if (opts.pageToken) {
      before = decodePageToken(opts.pageToken, isExecutionId);
      if (before === undefined) return undefined;
    }
    const ids = await this.#candidates(filter, before);
    const statuses = filter.statuses !== undefined && filter.statuses.size > 0 ? filter.statuses : undefined;
    const records: ExecutionRecord[] = [];
    let examined = 0;
    let lastExamined: string | undefined;
    try {
      while (examined < ids.length && records.length < opts.pageSize && examined < MAX_RECORD_READS_PER_PAGE) {
        const want = opts.pageSize - records.length;
        const batch = ids.slice(examined, examined + Math.min(statuses ? Math.max(want * 2, 32) : want, MAX_RECORD_READS_PER_PAGE - examined));
        const read = await Promise.all(batch.map((c) => this.#readEither(c.workflowId, c.id)));
        for (const [j, r] of read.entries()) {
          examined++;
          lastExamined = batch[j]!.id;
          if (r === undefined || (statuses !== undefined && !statuses.has(r.status))) continue;
          records.push(r);
          if (records.length === opts.pageSize) break;
        }
      }
    } catch (err) {
      throw unavailable('reading executions failed', err);
    }
    const more = examined < ids.length;
    return { executions: records, nextPageToken: more && lastExamined !== undefined ? encodePageToken(lastExamined) : '' };
  }

  /**
   * Every execution matching `filter`, newest first (ReplayExecutions): {@link list} page after page. As
   * many reads as matching executions; meant for a filtered set, not the whole bucket.
   */
  async listAll(filter: ExecutionFilter): Promise<ExecutionRecord[]> {
    const out: ExecutionRecord[] = [];
    let pageToken: string | undefined;
    do {
      const page = await this.list(filter, { pageSize: MAX_RECORD_READS_PER_PAGE, pageToken });
      if (!page) break;
      out.push(...page.executions);
      pageToken = page.nextPageToken || undefined;
    } while (pageToken !== undefined);
    return out;
  }

  /**
   * Cancels an execution (CancelExecution): its record becomes `cancelled` with a compare-and-set, so it
   * never overwrites what an executor wrote meanwhile (a lost race is read again and retried). A queued
   * execution gets its `cancelled` record first (an executor that picks the job up then finds it final
   * and only acknowledges it), then its job is removed from the stream. A running one's record is
   * cancelled here; its executor stops at its next write at the latest (the fence), and at once when it
   * hears the cancel (src/executor/executor-service.ts). Returns the record and whether this call
   * cancelled it (`false`: it had already ended), or undefined when there is no such execution.
   */
  async cancel(executionId: string, now: Date): Promise<{ record: ExecutionRecord; cancelled: boolean } | undefined> {
    for (let attempt = 0; attempt < CANCEL_ATTEMPTS; attempt++) {
      let queued: Awaited<ReturnType<ExecutionRepository['queuedJobOf']>>;
      let workflowId: string | undefined;
      try {
        workflowId = (await kvLastByPattern(this.jsm, this.bucket, `*.${executionId}`))?.key.split('.')[0];
        queued = workflowId === undefined ? await this.queuedJobOf(executionId) : undefined;
        workflowId ??= queued?.job.workflowId;
      } catch (err) {
        throw unavailable('reading the execution failed', err);
      }
      if (workflowId === undefined) {
        // Neither recorded nor queued, unless an executor recorded it and acked its job in between.
        if ((await this.get(executionId)) === undefined) return undefined;
        continue;
      }
      const { record, revision } = await this.read(workflowId, executionId);
      const current = record ?? queued?.record ?? (await this.queuedJobOf(executionId))?.record;
      if (current === undefined) continue; // the job was acked between the reads: look again
      if (isFinalStatus(current.status)) return { record: current, cancelled: false };
      const cancelled = cancelledRecord(current, now);
      try {
        await this.write(cancelled, revision);
      } catch (err) {
        if (err instanceof StaleRecordError) continue;
        throw err;
      }
      if (record === undefined) await this.#removeJob(executionId);
      return { record: cancelled, cancelled: true };
    }
    throw new StoreConflictError(`execution ${executionId} changed concurrently ${CANCEL_ATTEMPTS} times; try again`);
  }

  /** The queued job of an execution (its stream sequence, the job, the queued record); undefined when none. */
  async queuedJobOf(executionId: string): Promise<{ seq: number; job: WebhookJob; record: ExecutionRecord } | undefined> {
    try {
      return await this.#queuedJob(`*.${executionId}`);
    } catch (err) {
      throw unavailable('reading the queued job failed', err);
    }
  }

  /** Removes a cancelled execution's job from the stream; best effort (an executor acks it anyway). */
  async #removeJob(executionId: string): Promise<void> {
    try {
      const q = await this.#queuedJob(`*.${executionId}`);
      if (q) await this.jsm.streams.deleteMessage(this.jobsStream, q.seq, false);
    } catch {
      // Taken by an executor meanwhile, or NATS away: the executor finds the record final and acks the job.
    }
  }
}

/** Most records one {@link ExecutionRepository.list} call reads. */
export const MAX_RECORD_READS_PER_PAGE = 1000;
const CANCEL_ATTEMPTS = 10;

/** What ListExecutions and ReplayExecutions select; every field set must hold. */
export interface ExecutionFilter {
  workflowId?: string;
  /** Empty or absent: any status. */
  statuses?: ReadonlySet<ExecutionStatusName>;
  /** Created at or after. */
  createdAfter?: Date;
  /** Created before. */
  createdBefore?: Date;
}

/** The message of a cancelled execution's `error`. */
export const CANCELLED_MESSAGE = 'cancelled with CancelExecution';

/**
 * `r` as cancelled at `now`: a node still running is cancelled too. The cost of the nodes that ran stays
 * and is charged by the executor that ran them (`charged` false when there is any).
 */
export function cancelledRecord(r: ExecutionRecord, now: Date): ExecutionRecord {
  const at = now.toISOString();
  const nodes = r.nodes.map((n) => {
    if (typeof n !== 'object' || n === null || Array.isArray(n) || n.status !== 'EXECUTION_STATUS_RUNNING') return n;
    return { ...n, status: 'EXECUTION_STATUS_CANCELLED', finishedAt: at };
  });
  return { ...r, status: 'cancelled', nodes, error: CANCELLED_MESSAGE, finishedAt: at, charged: r.costUnits === 0 };
}

/** The record of an execution whose job is queued and has not started: what a reader is shown for it. */
export function queuedRecord(job: WebhookJob): ExecutionRecord {
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
    ...(job.replayOf === undefined ? {} : { replayOf: job.replayOf }),
  };
}
