/**
 * The executor's settings, validated once with exact messages and filled with defaults. Nothing else in
 * the executor reads `process.env`.
 *
 * Tests: test/config/executor-config.test.ts.
 */
import { ConfigError, type Env, hostSetting, intSetting, listSetting, natsUrlSetting, optionalSecret, withoutCredentials } from './env-parsers.js';

export interface ExecutorConfig {
  /** Where `/healthz`, `/readyz` and `/metrics` listen (HTTP/1.1). */
  host: string;
  port: number;
  natsUrl: string;
  /** Base URLs of the runners (`http://host:port`, h2c), called in turn. */
  runnerUrls: string[];
  /** Bearer token the runners require (LDBOX_RUNNER_TOKEN), if any. */
  runnerToken: string | undefined;
  /** Jobs run at once by this executor. */
  concurrency: number;
  /** Redelivery timeout of a job without ack or heartbeat (heartbeats go every third of it). */
  ackWaitMs: number;
  /** Attempts of a job before its execution is recorded as failed. */
  maxAttempts: number;
  /**
   * Deadline of one `Execute` call when the node sets no timeout: the runner's largest timeout plus
   * slack. A node's own `limits.timeoutMs` plus the same slack is used otherwise.
   */
  executeDeadlineMs: number;
}

/** Extra time an `Execute` call gets beyond the code's timeout: queueing in the pool and the RPC itself. */
export const EXECUTE_DEADLINE_SLACK_MS = 10_000;

/** Reads the executor's configuration; throws a ConfigError with an exact message on a bad value. */
export function loadExecutorConfig(env: Env): ExecutorConfig {
  const natsUrl = natsUrlSetting(env);
  const listed = listSetting(env, 'LDBOX_RUNNER_URLS');
  const runnerUrls = (listed.length > 0 ? listed : ['http://127.0.0.1:50051']).map(runnerOrigin);
  return {
    host: hostSetting(env, 'LDBOX_EXECUTOR_HOST', '127.0.0.1'),
    port: intSetting(env, 'LDBOX_EXECUTOR_PORT', 8081, 0, 65535),
    natsUrl,
    runnerUrls,
    runnerToken: optionalSecret(env, 'LDBOX_RUNNER_TOKEN', 16),
    concurrency: intSetting(env, 'LDBOX_EXECUTOR_CONCURRENCY', 16, 1, 1024),
    ackWaitMs: intSetting(env, 'LDBOX_EXECUTOR_ACK_WAIT_MS', 30_000, 1000, 3_600_000),
    maxAttempts: intSetting(env, 'LDBOX_EXECUTOR_MAX_ATTEMPTS', 5, 1, 100),
    executeDeadlineMs: intSetting(env, 'LDBOX_MAX_TIMEOUT_MS', 120_000, 100, 3_600_000) + EXECUTE_DEADLINE_SLACK_MS,
  };
}

/** A runner URL as its origin (`http://host:port`); anything more (a path, credentials, a query) is refused. */
function runnerOrigin(u: string): string {
  const shown = withoutCredentials(u);
  let url: URL;
  try {
    url = new URL(u.replace(/\/+$/, '')); // trailing slashes are harmless: http://runner:50051/ is the origin
  } catch {
    throw new ConfigError(`LDBOX_RUNNER_URLS: "${shown}" is not a URL (expected http://host:port, comma-separated)`);
  }
  if (url.protocol !== 'http:' || url.username || url.password || url.search || url.hash || url.pathname !== '/') {
    throw new ConfigError(`LDBOX_RUNNER_URLS: "${shown}" must be http://host:port (the runner speaks HTTP/2 cleartext; no credentials, path, query or fragment)`);
  }
  return url.origin;
}
