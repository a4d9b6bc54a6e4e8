/**
 * The gateway's settings (docs/design.md "Names that are contract" → Env), validated once with exact messages
 * and filled with defaults. Nothing else in the gateway reads `process.env`.
 *
 * Body limit and NATS `max_payload`: every accepted webhook becomes one JetStream message of at most
 * `maxJobBytes(LDBOX_MAX_BODY_BYTES)` (the body plus 64 KiB of envelope). nats-server's `max_payload`
 * defaults to 1 MB, so the default 5 MiB body limit needs `max_payload: 8MB` in nats-server.conf
 * (`ldbox dev` writes it). The gateway logs an error at connect time when the server's limit is too small;
 * a job over it is answered 413, never silently dropped.
 *
 * Tests: test/config/gateway-config.test.ts.
 */
import type { KeyRing } from '../src/crypto/secret-box.js';
import { HTTP_LIMIT_SETTING_LIST, type HttpLimits, loadHttpLimits } from '../src/config/http-limits-config.js';
import type { JobsStreamOptions } from '../src/nats/streams.js';
import { normalizeBaseUrl } from '../src/workflows/base-url.js';
import { isWorkflowValidationError } from '../src/workflows/validation-error.js';
import type { NatsSettings } from '../src/nats/connection-options.js';
import { ConfigError, durationSetting, type Env, hostSetting, intSetting, type SettingSpec, sizeSetting, stringSetting } from '../src/config/env-parsers.js';
import { loadNatsSettings, NATS_SETTINGS } from '../src/config/nats-config.js';
import { DATA_KEY_SETTINGS, loadDataKeys } from '../src/config/data-key-config.js';

const MiB = 1024 * 1024;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

export interface GatewayConfig {
  host: string;
  port: number;
  /** Bearer token of the control plane (WorkflowService, WorkspaceService). */
  adminToken: string;
  /** Public base of webhook URLs, without trailing slash. */
  baseUrl: string;
  /** False when LDBOX_BASE_URL was not set: the base then follows the bound port (port 0 in tests). */
  baseUrlSet: boolean;
  /** Where NATS is and how to authenticate (NATS_URL, NATS_TOKEN, …). */
  nats: NatsSettings;
  /** Default per-workflow webhook rate (requests/s) for workflows that set none; 0 = no limit. */
  webhookRate: number;
  /** Largest webhook body, in bytes; larger is 413. */
  maxBodyBytes: number;
  /** Limits of the JOBS stream (discard-new: a full stream refuses new jobs → 503). */
  stream: Required<Pick<JobsStreamOptions, 'maxMsgs' | 'maxBytes' | 'duplicateWindowMs' | 'replicas'>>;
  /** How long an `Idempotency-Key` is honoured (TTL of the idempotency bucket). */
  idempotencyTtlMs: number;
  /** How long execution records are kept after their last write (max age of the executions bucket), ms. */
  executionRetentionMs: number;
  /** The furthest ahead a throttled webhook's execution may be scheduled (workflows with `overRate: throttle`), ms. */
  throttleMaxDelayMs: number;
  /** How long a webhook waits for its job to be stored (PubAck, retries included) before answering 503. */
  publishTimeoutMs: number;
  /** How far a signed call's timestamp may be from now (timestamped signature presets), ms. */
  signatureToleranceMs: number;
  /** The data keys that seal and open node `auth` values (LDBOX_DATA_KEY…). */
  dataKeys: KeyRing;
  /** Connections and timeouts of the port (http-limits-config.ts). */
  http: HttpLimits;
}

const S = {
  adminToken: {
    kind: 'text',
    name: 'LDBOX_ADMIN_TOKEN',
    shown: 'required',
    meaning: 'bearer token of the control plane, at least 16 characters, no whitespace (`ldbox dev` generates one)',
  },
  host: { kind: 'text', name: 'LDBOX_GATEWAY_HOST', shown: '127.0.0.1', meaning: 'address the gateway binds' },
  port: {
    kind: 'int',
    name: 'LDBOX_GATEWAY_PORT',
    fallback: 8080,
    min: 0,
    max: 65535,
    meaning: 'webhooks, control plane, /healthz, /readyz, /metrics (0 = any free port)',
  },
  baseUrl: { kind: 'text', name: 'LDBOX_BASE_URL', shown: 'http://127.0.0.1:<port>', meaning: 'public base of webhook URLs' },
  webhookRate: {
    kind: 'int',
    name: 'LDBOX_WEBHOOK_RATE',
    fallback: 50,
    min: 0,
    max: 100_000,
    meaning: 'default per-workflow webhook rate, requests/s (0 = off)',
  },
  maxBodyBytes: {
    kind: 'size',
    name: 'LDBOX_MAX_BODY_BYTES',
    fallback: 5 * MiB,
    min: 1024,
    max: 64 * MiB,
    meaning: "largest webhook body, in bytes or with a unit (must fit nats-server's max_payload)",
  },
  jobsMaxMsgs: {
    kind: 'int',
    name: 'LDBOX_JOBS_MAX_MSGS',
    fallback: 1_000_000,
    min: 1,
    max: 1_000_000_000,
    meaning: 'most jobs in the JOBS stream; a full stream refuses new jobs (503)',
  },
  jobsMaxBytes: {
    kind: 'size',
    name: 'LDBOX_JOBS_MAX_BYTES',
    fallback: 1024 * MiB,
    min: MiB,
    max: Number.MAX_SAFE_INTEGER,
    meaning: 'most bytes in the JOBS stream, in bytes or with a unit',
  },
  jobsDuplicateWindowMs: {
    kind: 'int',
    name: 'LDBOX_JOBS_DUPLICATE_WINDOW_MS',
    fallback: 120_000,
    min: 1000,
    max: 86_400_000,
    meaning: "the JOBS stream's duplicate window, ms",
  },
  jobsReplicas: { kind: 'int', name: 'LDBOX_JOBS_REPLICAS', fallback: 1, min: 1, max: 5, meaning: 'replicas of the stream and buckets (3 on a cluster)' },
  idempotencyTtlMs: {
    kind: 'int',
    name: 'LDBOX_IDEMPOTENCY_TTL_MS',
    fallback: 86_400_000,
    min: 60_000,
    max: 30 * 86_400_000,
    meaning: 'how long an Idempotency-Key is honoured, ms',
  },
  executionRetention: {
    kind: 'duration',
    name: 'LDBOX_EXECUTION_RETENTION',
    fallback: 7 * DAY,
    min: HOUR,
    max: 3650 * DAY,
    meaning: 'how long an execution record is kept after its last write (the max age of the executions bucket, applied at start-up): 7d, 24h, 90m, or hours',
  },
  throttleMaxDelay: {
    kind: 'duration',
    name: 'LDBOX_THROTTLE_MAX_DELAY',
    fallback: 3_600_000,
    min: 60_000,
    max: 24 * HOUR,
    unit: 'm',
    meaning:
      'a workflow that throttles over its rate (overRate: OVER_RATE_THROTTLE) runs a webhook at most this late; later ones are refused (429): 60m, 2h, or minutes',
  },
  signatureTolerance: {
    kind: 'duration',
    name: 'LDBOX_SIGNATURE_TOLERANCE',
    fallback: 5 * 60_000,
    min: 60_000,
    max: HOUR,
    unit: 'm',
    meaning:
      'how far the timestamp of a signed webhook (Stripe, Standard Webhooks, Slack presets) may be from the gateway clock, either way; a signature is also refused a second time within it: 5m, or minutes',
  },
  publishTimeoutMs: {
    kind: 'int',
    name: 'LDBOX_PUBLISH_TIMEOUT_MS',
    fallback: 10_000,
    min: 100,
    max: 60_000,
    meaning:
      'how long a webhook waits for JetStream to store its job before 503, retries included, ms (covers a leader election when a NATS node of a cluster dies)',
  },
} as const satisfies Record<string, SettingSpec>;

/** Every setting the gateway reads, for `--help` and the unknown-variable warning. */
export const GATEWAY_SETTINGS: readonly SettingSpec[] = [...NATS_SETTINGS, ...Object.values(S), ...DATA_KEY_SETTINGS, ...HTTP_LIMIT_SETTING_LIST];

/** Reads the gateway's configuration; throws a ConfigError with an exact message on a bad value. */
export function loadGatewayConfig(env: Env): GatewayConfig {
  const port = intSetting(env, S.port);
  const host = hostSetting(env, S.host);
  const adminToken = env[S.adminToken.name] ?? '';
  if (adminToken === '')
    throw new ConfigError('LDBOX_ADMIN_TOKEN is required: the control plane (WorkflowService) accepts only `Authorization: Bearer $LDBOX_ADMIN_TOKEN`');
  if (adminToken.length < 16) throw new ConfigError('LDBOX_ADMIN_TOKEN must be at least 16 characters long');
  if (/\s/.test(adminToken)) throw new ConfigError('LDBOX_ADMIN_TOKEN must not contain whitespace');
  let baseUrl: string;
  try {
    baseUrl = normalizeBaseUrl(stringSetting(env, S.baseUrl.name, `http://127.0.0.1:${port}`));
  } catch (err) {
    if (isWorkflowValidationError(err)) throw new ConfigError(err.message);
    throw err;
  }
  const nats = loadNatsSettings(env);
  return {
    host,
    port,
    adminToken,
    baseUrl,
    baseUrlSet: (env[S.baseUrl.name] ?? '') !== '',
    nats,
    webhookRate: intSetting(env, S.webhookRate),
    maxBodyBytes: sizeSetting(env, S.maxBodyBytes),
    stream: {
      maxMsgs: intSetting(env, S.jobsMaxMsgs),
      maxBytes: sizeSetting(env, S.jobsMaxBytes),
      duplicateWindowMs: intSetting(env, S.jobsDuplicateWindowMs),
      replicas: intSetting(env, S.jobsReplicas),
    },
    idempotencyTtlMs: intSetting(env, S.idempotencyTtlMs),
    executionRetentionMs: durationSetting(env, S.executionRetention),
    throttleMaxDelayMs: durationSetting(env, S.throttleMaxDelay),
    publishTimeoutMs: intSetting(env, S.publishTimeoutMs),
    signatureToleranceMs: durationSetting(env, S.signatureTolerance),
    dataKeys: loadDataKeys(env),
    http: loadHttpLimits(env),
  };
}
