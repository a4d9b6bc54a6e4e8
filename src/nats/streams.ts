/**
 * Idempotent setup of the JetStream resources ldbox uses: the JOBS work-queue stream and the KV buckets.
 * Every role may call these at start (and again after NATS lost its data): creating what is missing,
 * updating limits that changed, and refusing loudly when an existing resource cannot be changed into
 * the wanted shape (retention, storage).
 */
import type { NatsConnection } from '@nats-io/transport-node';
import {
  jetstream,
  DiscardPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  type JetStreamManager,
  type StreamConfig,
  type StreamInfo,
} from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { Logger } from '../logging/logger.js';

const MS = 1_000_000; // nanoseconds per millisecond (JetStream durations are in ns)
const MiB = 1024 * 1024;

/** Default name of the job stream. */
export const JOBS_STREAM = 'JOBS';
/** Subjects of the job stream: `ldbox.jobs.<workflowId>` (the gateway picks the last token). */
export const JOBS_SUBJECTS = ['ldbox.jobs.>'];
/**
 * Subject a job is published on: `ldbox.jobs.<workflowId>.<executionId>`. The execution id in the subject
 * lets the control plane find a queued job by id (`last_by_subj ldbox.jobs.*.<id>`) and list a workflow's
 * queued jobs from the stream's subject index, so no separate `queued` record has to be written.
 */
export function jobSubject(workflowId: string, executionId?: string): string {
  return executionId === undefined ? `ldbox.jobs.${workflowId}` : `ldbox.jobs.${workflowId}.${executionId}`;
}

/**
 * Core NATS subject (not stored) on which a gateway announces a CancelExecution after it wrote the
 * `cancelled` record: `ldbox.cancel.<executionId>`. Executors subscribe to {@link CANCEL_SUBJECTS} and stop
 * the run at once; one that misses the message stops at its next record write (the write is fenced).
 */
export function cancelSubject(executionId: string): string {
  return `ldbox.cancel.${executionId}`;
}
export const CANCEL_SUBJECTS = 'ldbox.cancel.*';

/**
 * Room for the job envelope (ids, query, headers) on top of the webhook body, in bytes. A form body can
 * grow when turned into JSON, so the gateway should check the encoded job, not only the raw body.
 */
export const JOB_ENVELOPE_HEADROOM = 64 * 1024;

/** Largest encoded job for a webhook body limit: body limit + {@link JOB_ENVELOPE_HEADROOM}. */
export function maxJobBytes(bodyLimitBytes: number): number {
  return bodyLimitBytes + JOB_ENVELOPE_HEADROOM;
}

export interface JobsStreamOptions {
  name?: string;
  subjects?: string[];
  /** Most jobs waiting; past it publishes are refused (`full`), never older jobs dropped. Default 1,000,000. */
  maxMsgs?: number;
  /** Most bytes waiting; same refusal semantics. Default 1 GiB. */
  maxBytes?: number;
  /**
   * Largest single job. Set it from the webhook body limit with {@link maxJobBytes}; the server's
   * `max_payload` (1 MB by default!) must be at least as large, see {@link checkMaxPayload}.
   * Default `maxJobBytes(5 MiB)`.
   */
  maxMsgSize?: number;
  /**
   * How long a `Nats-Msg-Id` is remembered for de-duplication. Default 2 min (the server default). The
   * server keeps every id of the window in memory (≈ rate × window entries), so keep it short and use the
   * idempotency KV bucket for longer promises.
   */
  duplicateWindowMs?: number;
  /** Replicas: 1 on one machine, 3 on a cluster (the only durable-against-OS-crash setting on 2.9). */
  replicas?: number;
}

/**
 * The JOBS stream's configuration. Work-queue retention (a job is deleted once acked), file storage,
 * and **discard new**: a full stream refuses new jobs (the publisher reports `full`, the gateway answers
 * 429/503) rather than silently deleting the oldest accepted ones as discard-old would. No `max_age`: an
 * age limit would also delete accepted jobs silently.
 */
export function jobsStreamConfig(opts: JobsStreamOptions = {}): StreamConfig {
  return {
    name: opts.name ?? JOBS_STREAM,
    subjects: opts.subjects ?? JOBS_SUBJECTS,
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    discard: DiscardPolicy.New,
    max_msgs: opts.maxMsgs ?? 1_000_000,
    max_bytes: opts.maxBytes ?? 1024 * MiB,
    max_msg_size: opts.maxMsgSize ?? maxJobBytes(5 * MiB),
    max_age: 0,
    duplicate_window: (opts.duplicateWindowMs ?? 120_000) * MS,
    num_replicas: opts.replicas ?? 1,
  } as StreamConfig;
}

/** Fields that may be changed on an existing stream; the rest must match or setup fails. */
const MUTABLE: Array<keyof StreamConfig> = ['subjects', 'discard', 'max_msgs', 'max_bytes', 'max_msg_size', 'max_age', 'duplicate_window', 'num_replicas'];
const IMMUTABLE: Array<keyof StreamConfig> = ['retention', 'storage'];

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

const isNotFound = isStreamNotFound;

/**
 * Whether `err` says a stream (a KV bucket is one) does not exist yet. Besides JetStream's API error,
 * some nats.js paths (KV open, watch) only carry the server's text.
 */
export function isStreamNotFound(err: unknown): boolean {
  if (err instanceof JetStreamApiError) return err.code === JetStreamApiCodes.StreamNotFound;
  return err instanceof Error && /stream not found/i.test(err.message);
}

/**
 * Create the stream if missing; update its mutable limits if they differ; throw if retention or storage
 * differ (those need a new stream and a migration). Safe to call concurrently from several processes.
 */
export async function ensureStream(jsm: JetStreamManager, want: StreamConfig): Promise<StreamInfo> {
  let info: StreamInfo;
  try {
    info = await jsm.streams.info(want.name);
  } catch (err) {
    if (!isNotFound(err)) throw err;
    try {
      return await jsm.streams.add(want);
    } catch (addErr) {
      // Lost a race with another process creating it: fall through to the compare/update path.
      info = await jsm.streams.info(want.name).catch(() => {
        throw addErr;
      });
    }
  }
  const have = info.config;
  for (const k of IMMUTABLE) {
    if (want[k] !== undefined && !same(have[k], want[k])) {
      throw new Error(
        `stream ${want.name} exists with ${String(k)}=${JSON.stringify(have[k])}, wanted ${JSON.stringify(want[k])}: ` +
          'this cannot be changed in place; drain and delete the stream, or use another name',
      );
    }
  }
  const changes: Partial<StreamConfig> = {};
  for (const k of MUTABLE) {
    if (want[k] !== undefined && !same(have[k], want[k])) (changes as Record<string, unknown>)[k] = want[k];
  }
  if (Object.keys(changes).length === 0) return info;
  return jsm.streams.update(want.name, changes);
}

/** {@link ensureStream} for the JOBS stream. */
export function ensureJobsStream(jsm: JetStreamManager, opts: JobsStreamOptions = {}): Promise<StreamInfo> {
  return ensureStream(jsm, jobsStreamConfig(opts));
}

/**
 * KV bucket names. `workflows`: workflow id → workflow (watched and cached by gateways); `webhooks`:
 * webhook id → workflow id and webhook auth (watched and cached); `executions`: execution id → execution
 * record (written by gateway and executor); `idempotency`: hashed `Idempotency-Key` claims, expiring after
 * the idempotency window.
 */
export const KV_BUCKETS = {
  workflows: 'ldbox-workflows',
  webhooks: 'ldbox-webhooks',
  executions: 'ldbox-executions',
  idempotency: 'ldbox-idempotency',
} as const;
export type BucketRole = keyof typeof KV_BUCKETS;

export interface KvBucketOptions {
  /** Entries older than this are removed (bucket-level `max_age`; 2.9 has no per-key TTL). 0 = keep. */
  ttlMs?: number;
  /** Values kept per key. Default 1. */
  history?: number;
  /** Total size limit, -1 = none. */
  maxBytes?: number;
  replicas?: number;
  /** Timeout of the returned handle's requests (get/put/create…). Default 3000 ms: a KV call made while NATS is away fails in bounded time. */
  timeoutMs?: number;
  /** Told (at info) when an existing bucket's limits are changed to these. */
  log?: Pick<Logger, 'info'>;
}

/**
 * Create the KV bucket if missing (via `Kvm.create`, which opens it if it exists), then bring its
 * TTL/history/size/replicas in line with `opts` (`Kvm.create` alone never updates an existing bucket).
 */
export async function ensureKvBucket(nc: NatsConnection, jsm: JetStreamManager, name: string, opts: KvBucketOptions = {}): Promise<KV> {
  const kvm = new Kvm(jetstream(nc, { timeout: opts.timeoutMs ?? 3000 }));
  const kvOpts: Record<string, unknown> = { history: opts.history ?? 1, replicas: opts.replicas ?? 1 };
  if (opts.ttlMs) kvOpts.ttl = opts.ttlMs;
  if (opts.maxBytes !== undefined) kvOpts.max_bytes = opts.maxBytes;
  const kv = await kvm.create(name, kvOpts);
  const streamName = `KV_${name}`;
  const info = await jsm.streams.info(streamName);
  const want: Partial<StreamConfig> = {
    max_age: (opts.ttlMs ?? 0) * MS,
    max_msgs_per_subject: opts.history ?? 1,
    num_replicas: opts.replicas ?? 1,
  };
  if (opts.maxBytes !== undefined) want.max_bytes = opts.maxBytes;
  const changes: Partial<StreamConfig> = {};
  for (const [k, v] of Object.entries(want) as Array<[keyof StreamConfig, unknown]>) {
    if (!same(info.config[k], v)) (changes as Record<string, unknown>)[k] = v;
  }
  if (Object.keys(changes).length > 0) {
    await jsm.streams.update(streamName, changes);
    const was = Object.fromEntries(Object.keys(changes).map((k) => [k, info.config[k as keyof StreamConfig]]));
    opts.log?.info({ bucket: name, was: shownLimits(was), now: shownLimits(changes) }, 'KV bucket limits changed to the configured ones');
  }
  return kv;
}

/** Stream limits for a log line: ages in ms rather than ns. */
function shownLimits(limits: Partial<StreamConfig>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...limits };
  if (typeof limits.max_age === 'number') {
    delete out.max_age;
    out.max_age_ms = limits.max_age / MS;
  }
  return out;
}

export interface KvBucketsOptions {
  /**
   * How long an `Idempotency-Key` is honoured: the idempotency bucket's TTL. Default 24 h. Far longer
   * than the stream's 2-min `Nats-Msg-Id` window, which is why keys are claimed in KV, not only de-duplicated.
   */
  idempotencyTtlMs?: number;
  /** How long execution records are kept after their last write (LDBOX_EXECUTION_RETENTION). Default 7 days. */
  executionsTtlMs?: number;
  /** Size limit of the executions bucket (-1 = none). Default -1. */
  executionsMaxBytes?: number;
  /** Values kept per workflow (history of edits). Default 1. */
  workflowsHistory?: number;
  replicas?: number;
  /** Request timeout of the returned KV handles. Default 3000 ms. */
  timeoutMs?: number;
  /** Told (at info) when an existing bucket's limits are changed (a new retention, replicas…). */
  log?: Pick<Logger, 'info'>;
}

export type LdboxBuckets = Record<BucketRole, KV>;

/** Ensure all four ldbox buckets; see {@link KV_BUCKETS}. */
export async function ensureKvBuckets(nc: NatsConnection, jsm: JetStreamManager, opts: KvBucketsOptions = {}): Promise<LdboxBuckets> {
  const replicas = opts.replicas ?? 1;
  const timeoutMs = opts.timeoutMs ?? 3000;
  const log = opts.log;
  const [workflows, webhooks, executions, idempotency] = await Promise.all([
    ensureKvBucket(nc, jsm, KV_BUCKETS.workflows, { history: opts.workflowsHistory ?? 1, replicas, timeoutMs, log }),
    ensureKvBucket(nc, jsm, KV_BUCKETS.webhooks, { replicas, timeoutMs, log }),
    ensureKvBucket(nc, jsm, KV_BUCKETS.executions, {
      ttlMs: opts.executionsTtlMs ?? 7 * 24 * 3600_000,
      maxBytes: opts.executionsMaxBytes ?? -1,
      replicas,
      timeoutMs,
      log,
    }),
    ensureKvBucket(nc, jsm, KV_BUCKETS.idempotency, { ttlMs: opts.idempotencyTtlMs ?? 24 * 3600_000, replicas, timeoutMs, log }),
  ]);
  return { workflows: workflows!, webhooks: webhooks!, executions: executions!, idempotency: idempotency! };
}

/**
 * The server's `max_payload` bounds every message, so it bounds the webhook body limit. nats-server's
 * default is 1 MB while the gateway's default body limit is 5 MiB: configure both together
 * (`max_payload: 8MB` in nats-server.conf for the default). Returns an error message, or undefined if
 * the largest job fits.
 */
export function checkMaxPayload(nc: NatsConnection, maxJob: number): string | undefined {
  const have = nc.info?.max_payload;
  if (have === undefined) return 'not connected: the server max_payload is unknown';
  if (have < maxJob) {
    return `nats-server max_payload is ${have} bytes but jobs may be up to ${maxJob} bytes: raise max_payload in the server config or lower the body limit`;
  }
  return undefined;
}
