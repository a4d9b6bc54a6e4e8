/**
 * The executor's settings, validated once with exact messages and filled with defaults. Nothing else in
 * the executor reads `process.env`.
 *
 * Tests: test/config/executor-config.test.ts.
 */
import { HTTP_LIMIT_SETTING_LIST, type HttpLimits, loadHttpLimits } from '../config/http-limits-config.js';
import {
  choiceSetting,
  ConfigError,
  type Env,
  hostSetting,
  intSetting,
  listSetting,
  MAX_TIMEOUT_MS,
  optionalSecret,
  type SettingSpec,
  withoutCredentials,
} from '../config/env-parsers.js';
import { certificateSetting, keyPairSetting } from '../config/tls-files.js';
import type { NatsSettings } from '../nats/connection-options.js';
import { loadNatsSettings, NATS_SETTINGS } from '../config/nats-config.js';
import type { KeyRing } from '../crypto/secret-box.js';
import { DATA_KEY_SETTINGS, loadDataKeys } from '../config/data-key-config.js';

export interface ExecutorConfig {
  /** Where `/healthz`, `/readyz` and `/metrics` listen (HTTP/1.1). */
  host: string;
  port: number;
  /** Where NATS is and how to authenticate (NATS_URL, NATS_TOKEN, …). */
  nats: NatsSettings;
  /** Base URLs of the runners (`http://host:port`, h2c, or `https://host:port`), called in turn. */
  runnerUrls: string[];
  /** TLS to `https://` runners beyond the system's trust store: a private CA, a client certificate (mTLS). */
  runnerTls: RunnerClientTls;
  /** How Execute calls travel (LDBOX_RUNNER_CALLS): on one ExecuteStream per runner, or one gRPC call each. */
  runnerCalls: 'stream' | 'unary';
  /** Bearer token the runners require (LDBOX_RUNNER_TOKEN), if any. */
  runnerToken: string | undefined;
  /** Jobs run at once by this executor. */
  concurrency: number;
  /** Redelivery timeout of a job without ack or heartbeat (heartbeats go every third of it). */
  ackWaitMs: number;
  /** Attempts of a job before its execution is recorded as failed. */
  maxAttempts: number;
  /** How long a run's first node runs before its `running` record is written; 0 = at once (run-execution.ts DeferredSave). */
  runningRecordDelayMs: number;
  /**
   * Deadline of one `Execute` call when the node sets no timeout: the runner's largest timeout plus
   * slack. A node's own `limits.timeoutMs` plus the same slack is used otherwise.
   */
  executeDeadlineMs: number;
  /** The data keys that open node `auth` values (LDBOX_DATA_KEY…). */
  dataKeys: KeyRing;
  /** Connections and timeouts of the ops port (http-limits-config.ts). */
  http: HttpLimits;
}

/** PEM; each part undefined when its setting is unset. */
export interface RunnerClientTls {
  /** Trusted in addition to Node's bundled CAs. */
  ca: Buffer | undefined;
  cert: Buffer | undefined;
  key: Buffer | undefined;
}

/** Extra time an `Execute` call gets beyond the code's timeout: queueing in the pool and the RPC itself. */
export const EXECUTE_DEADLINE_SLACK_MS = 10_000;

const S = {
  host: { kind: 'text', name: 'LDBOX_EXECUTOR_HOST', shown: '127.0.0.1', meaning: 'address of the health and metrics port' },
  port: { kind: 'int', name: 'LDBOX_EXECUTOR_PORT', fallback: 8081, min: 0, max: 65535, meaning: '/healthz, /readyz and /metrics (0 = any free port)' },
  runnerUrls: {
    kind: 'text',
    name: 'LDBOX_RUNNER_URLS',
    shown: 'http://127.0.0.1:50051',
    meaning: 'runners (http://host:port, HTTP/2 cleartext, or https://host:port, TLS), comma-separated, called in turn',
  },
  runnerCa: {
    kind: 'text',
    name: 'LDBOX_RUNNER_CA',
    shown: 'unset',
    meaning: "PEM CA that https:// runners' certificates may chain to, besides the public ones",
  },
  runnerClientCert: {
    kind: 'text',
    name: 'LDBOX_RUNNER_CLIENT_CERT',
    shown: 'unset',
    meaning: 'PEM client certificate shown to https:// runners (mTLS; with LDBOX_RUNNER_CLIENT_KEY)',
  },
  runnerClientKey: { kind: 'text', name: 'LDBOX_RUNNER_CLIENT_KEY', shown: 'unset', meaning: 'PEM private key (unencrypted) of LDBOX_RUNNER_CLIENT_CERT' },
  runnerToken: { kind: 'text', name: 'LDBOX_RUNNER_TOKEN', shown: 'unset', meaning: 'bearer token the runners require (at least 16 characters)' },
  runnerCalls: {
    kind: 'choice',
    name: 'LDBOX_RUNNER_CALLS',
    fallback: 'stream',
    choices: ['stream', 'unary'],
    meaning: 'how Execute calls travel: one long-lived ExecuteStream per runner, or a gRPC call each',
  },
  concurrency: {
    kind: 'int',
    name: 'LDBOX_EXECUTOR_CONCURRENCY',
    fallback: 16,
    min: 1,
    max: 65_536,
    meaning: 'jobs one executor runs at once (raise it for nodes that mostly wait on APIs: a waiting call costs the runner memory, not a sandbox)',
  },
  ackWaitMs: {
    kind: 'int',
    name: 'LDBOX_EXECUTOR_ACK_WAIT_MS',
    fallback: 30_000,
    min: 1000,
    max: 3_600_000,
    meaning: 'redelivery after a silent executor, ms (heartbeats every third of it)',
  },
  maxAttempts: {
    kind: 'int',
    name: 'LDBOX_EXECUTOR_MAX_ATTEMPTS',
    fallback: 5,
    min: 1,
    max: 100,
    meaning: 'attempts of a job before its execution is recorded as failed',
  },
  runningRecordDelayMs: {
    kind: 'int',
    name: 'LDBOX_RUNNING_RECORD_DELAY_MS',
    fallback: 100,
    min: 0,
    max: 60_000,
    meaning: "ms a run's first node runs before its running record is written (0 = at once; shorter runs write only their final record)",
  },
  maxTimeoutMs: MAX_TIMEOUT_MS,
} as const satisfies Record<string, SettingSpec>;

/** Every setting the executor reads, for `--help` and the unknown-variable warning. */
export const EXECUTOR_SETTINGS: readonly SettingSpec[] = [...NATS_SETTINGS, ...Object.values(S), ...DATA_KEY_SETTINGS, ...HTTP_LIMIT_SETTING_LIST];

/** Reads the executor's configuration; throws a ConfigError with an exact message on a bad value. */
export function loadExecutorConfig(env: Env): ExecutorConfig {
  const nats = loadNatsSettings(env);
  const listed = listSetting(env, S.runnerUrls.name);
  const runnerUrls = (listed.length > 0 ? listed : [S.runnerUrls.shown]).map(runnerOrigin);
  return {
    host: hostSetting(env, S.host),
    port: intSetting(env, S.port),
    nats,
    runnerUrls,
    runnerToken: optionalSecret(env, S.runnerToken.name, 16),
    runnerTls: runnerTlsSettings(env),
    runnerCalls: choiceSetting(env, S.runnerCalls),
    concurrency: intSetting(env, S.concurrency),
    ackWaitMs: intSetting(env, S.ackWaitMs),
    maxAttempts: intSetting(env, S.maxAttempts),
    runningRecordDelayMs: intSetting(env, S.runningRecordDelayMs),
    executeDeadlineMs: intSetting(env, S.maxTimeoutMs) + EXECUTE_DEADLINE_SLACK_MS,
    dataKeys: loadDataKeys(env),
    http: loadHttpLimits(env),
  };
}

/** LDBOX_RUNNER_CA and the client certificate pair (files read and checked here). */
function runnerTlsSettings(env: Env): RunnerClientTls {
  const ca = certificateSetting(env, S.runnerCa.name);
  const pair = keyPairSetting(env, S.runnerClientCert.name, S.runnerClientKey.name);
  return { ca, cert: pair?.cert, key: pair?.key };
}

/** A runner URL as its origin (`http://host:port`); anything more (a path, credentials, a query) is refused. */
function runnerOrigin(u: string): string {
  const shown = withoutCredentials(u);
  let url: URL;
  try {
    url = new URL(u.replace(/\/+$/, '')); // trailing slashes are harmless: http://runner:50051/ is the origin
  } catch {
    throw new ConfigError(`LDBOX_RUNNER_URLS: "${shown}" is not a URL (expected http://host:port or https://host:port, comma-separated)`);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password || url.search || url.hash || url.pathname !== '/') {
    throw new ConfigError(
      `LDBOX_RUNNER_URLS: "${shown}" must be http://host:port or https://host:port (HTTP/2 cleartext or over TLS; no credentials, path, query or fragment)`,
    );
  }
  return url.origin;
}
