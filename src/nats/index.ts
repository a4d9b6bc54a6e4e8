/**
 * ldbox's NATS/JetStream layer (nats.js v3 modules against nats-server 2.9): a self-healing connection,
 * idempotent stream/bucket setup, a fast acked job publisher, Idempotency-Key claims, the executor's
 * durable pull consumer, and an in-memory KV cache for gateway lookups. See each module's TSDoc.
 */
export { natsConnectionOptions, natsSettingsOf, type NatsSettings } from './connection-options.js';
export { connectNats, NatsClient, NatsUnavailableError, type ConnectNatsOptions, type NatsState, type NatsStateListener } from './connect.js';
export {
  JOBS_STREAM,
  JOBS_SUBJECTS,
  JOB_ENVELOPE_HEADROOM,
  KV_BUCKETS,
  checkMaxPayload,
  ensureJobsStream,
  ensureKvBucket,
  ensureKvBuckets,
  ensureStream,
  jobSubject,
  jobsStreamConfig,
  maxJobBytes,
  type BucketRole,
  type JobsStreamOptions,
  type KvBucketOptions,
  type KvBucketsOptions,
  type LdboxBuckets,
} from './streams.js';
export {
  JobPublisher,
  classifyPubAckError,
  type JobPublisherOptions,
  type PublishErrorKind,
  type PublishFailure,
  type PublishOk,
  type PublishOptions,
  type PublishResult,
} from './job-publisher.js';
export {
  claimIdempotencyKey,
  confirmIdempotencyKey,
  idempotencyKvKey,
  releaseIdempotencyKey,
  type ClaimResult,
  type ClaimState,
} from './idempotency.js';
export {
  JOBS_CONSUMER,
  Job,
  ensureJobConsumer,
  jobConsumerConfig,
  runJobConsumer,
  type JobConsumerLoop,
  type JobConsumerOptions,
  type RunJobConsumerOptions,
} from './job-consumer.js';
export { KvCache, watchKvBucket, type KvCacheListener, type KvCacheOptions } from './kv-cache.js';
