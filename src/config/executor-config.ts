/**
 * The executor's settings, validated once with exact messages and filled with defaults. Nothing else in
 * the executor reads `process.env`.
 *
 * Tests: test/config/executor-config.test.ts.
 */
import { ConfigError, type Env, hostSetting, intSetting, listSetting, optionalSecret, stringSetting } from './env-parsers.js';

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
  const natsUrl = stringSetting(env, 'NATS_URL', 'nats://127.0.0.1:4222');
  if (!/^(nats:\/\/)?[^\s/]+(:\d+)?$/.test(natsUrl)) {
    throw new ConfigError(`NATS_URL must be nats://host:port (or host:port), got "${natsUrl}"`);
  }
  const runnerUrls = listSetting(env, 'LDBOX_RUNNER_URLS');
  if (runnerUrls.length === 0) runnerUrls.push('http://127.0.0.1:50051');
  for (const u of runnerUrls) checkRunnerUrl(u);
  return {
    host: hostSetting(env, 'LDBOX_EXECUTOR_HOST', '127.0.0.1'),
    port: intSetting(env, 'LDBOX_EXECUTOR_PORT', 8081, 0, 65535),
    natsUrl,
    runnerUrls: runnerUrls.map((u) => u.replace(/\/+$/, '')),
    runnerToken: optionalSecret(env, 'LDBOX_RUNNER_TOKEN', 16),
    concurrency: intSetting(env, 'LDBOX_EXECUTOR_CONCURRENCY', 16, 1, 1024),
    ackWaitMs: intSetting(env, 'LDBOX_EXECUTOR_ACK_WAIT_MS', 30_000, 1000, 3_600_000),
    maxAttempts: intSetting(env, 'LDBOX_EXECUTOR_MAX_ATTEMPTS', 5, 1, 100),
    executeDeadlineMs: intSetting(env, 'LDBOX_MAX_TIMEOUT_MS', 120_000, 100, 3_600_000) + EXECUTE_DEADLINE_SLACK_MS,
  };
}

function checkRunnerUrl(u: string): void {
  let url: URL;
  try {
    url = new URL(u);
  } catch {
    throw new ConfigError(`LDBOX_RUNNER_URLS: "${u}" is not a URL (expected http://host:port, comma-separated)`);
  }
  if (url.protocol !== 'http:' || url.username || url.password || url.search || url.hash) {
    throw new ConfigError(`LDBOX_RUNNER_URLS: "${u}" must be http://host:port (the runner speaks HTTP/2 cleartext; no credentials, query or fragment)`);
  }
}
