/**
 * The gateway's settings (DESIGN.md "Names that are contract" → Env), validated once with exact messages
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
import type { JobsStreamOptions } from '../nats/streams.js';
import { normalizeBaseUrl } from '../workflows/workflow-model.js';
import { isWorkflowValidationError } from '../workflows/validation-error.js';
import { ConfigError, type Env, hostSetting, intSetting, natsUrlSetting, stringSetting } from './env-parsers.js';

const MiB = 1024 * 1024;

export interface GatewayConfig {
  host: string;
  port: number;
  /** Bearer token of the control plane (WorkflowService, WorkspaceService). */
  adminToken: string;
  /** Public base of webhook URLs, without trailing slash. */
  baseUrl: string;
  /** False when LDBOX_BASE_URL was not set: the base then follows the bound port (port 0 in tests). */
  baseUrlSet: boolean;
  natsUrl: string;
  /** Default per-workflow webhook rate (requests/s) for workflows that set none; 0 = no limit. */
  webhookRate: number;
  /** Largest webhook body, in bytes; larger is 413. */
  maxBodyBytes: number;
  /** Limits of the JOBS stream (discard-new: a full stream refuses new jobs → 503). */
  stream: Required<Pick<JobsStreamOptions, 'maxMsgs' | 'maxBytes' | 'duplicateWindowMs' | 'replicas'>>;
  /** How long an `Idempotency-Key` is honoured (TTL of the idempotency bucket). */
  idempotencyTtlMs: number;
  /** How long to wait for a PubAck before answering 503. */
  publishTimeoutMs: number;
}

/** Reads the gateway's configuration; throws a ConfigError with an exact message on a bad value. */
export function loadGatewayConfig(env: Env): GatewayConfig {
  const port = intSetting(env, 'LDBOX_GATEWAY_PORT', 8080, 0, 65535);
  const host = hostSetting(env, 'LDBOX_GATEWAY_HOST', '127.0.0.1');
  const adminToken = env.LDBOX_ADMIN_TOKEN ?? '';
  if (adminToken === '') throw new ConfigError('LDBOX_ADMIN_TOKEN is required: the control plane (WorkflowService) accepts only `Authorization: Bearer $LDBOX_ADMIN_TOKEN`');
  if (adminToken.length < 16) throw new ConfigError('LDBOX_ADMIN_TOKEN must be at least 16 characters long');
  if (/\s/.test(adminToken)) throw new ConfigError('LDBOX_ADMIN_TOKEN must not contain whitespace');
  let baseUrl: string;
  try {
    baseUrl = normalizeBaseUrl(stringSetting(env, 'LDBOX_BASE_URL', `http://127.0.0.1:${port}`));
  } catch (err) {
    if (isWorkflowValidationError(err)) throw new ConfigError(err.message);
    throw err;
  }
  const natsUrl = natsUrlSetting(env);
  return {
    host,
    port,
    adminToken,
    baseUrl,
    baseUrlSet: (env.LDBOX_BASE_URL ?? '') !== '',
    natsUrl,
    webhookRate: intSetting(env, 'LDBOX_WEBHOOK_RATE', 50, 0, 100_000),
    maxBodyBytes: intSetting(env, 'LDBOX_MAX_BODY_BYTES', 5 * MiB, 1024, 64 * MiB),
    stream: {
      maxMsgs: intSetting(env, 'LDBOX_JOBS_MAX_MSGS', 1_000_000, 1, 1_000_000_000),
      maxBytes: intSetting(env, 'LDBOX_JOBS_MAX_BYTES', 1024 * MiB, MiB, Number.MAX_SAFE_INTEGER),
      duplicateWindowMs: intSetting(env, 'LDBOX_JOBS_DUPLICATE_WINDOW_MS', 120_000, 1000, 86_400_000),
      replicas: intSetting(env, 'LDBOX_JOBS_REPLICAS', 1, 1, 5),
    },
    idempotencyTtlMs: intSetting(env, 'LDBOX_IDEMPOTENCY_TTL_MS', 86_400_000, 60_000, 30 * 86_400_000),
    publishTimeoutMs: intSetting(env, 'LDBOX_PUBLISH_TIMEOUT_MS', 5000, 100, 60_000),
  };
}
