import { availableParallelism } from 'node:os';
import type { BuiltinConfig } from '../../runner/builtins/index.js';
import { EgressConfigError, EgressGuard } from '../../runner/builtins/http/egress-guard.js';
import { ConfigError, type Env, hostSetting, intSetting, listSetting, optionalSecret } from './env-parsers.js';

const MiB = 1024 * 1024;

/** The runner's settings, validated and filled with defaults. */
export interface RunnerConfig {
  host: string;
  port: number;
  /** When set, RunnerService calls need `Authorization: Bearer <token>`. */
  token: string | undefined;
  pool: PoolConfig;
  /** Largest `code` accepted, in bytes of UTF-8. */
  maxCodeBytes: number;
  /** Largest `input` + `auth` accepted, as JSON bytes. */
  maxInputBytes: number;
}

export interface PoolConfig {
  /** Worker threads. */
  size: number;
  /** Sandboxes one worker runs at once (each on its own WASM module and memory cap). */
  concurrentPerWorker: number;
  /** Calls that may wait for a worker; beyond it Execute answers RESOURCE_EXHAUSTED. */
  maxQueue: number;
  /** An idle worker above the minimum is stopped after this long. */
  idleTimeoutMs: number;
  defaultTimeoutMs: number;
  maxTimeoutMs: number;
  defaultMemoryBytes: number;
  maxMemoryBytes: number;
  minMemoryBytes: number;
  maxResultBytes: number;
  maxLogEntries: number;
  maxLogChars: number;
  /** V8 heap of a worker; a worker that exceeds it is replaced. */
  workerHeapMb: number;
  /** A WASM module whose memory grew past this is replaced after the call (WASM memory never shrinks). */
  recycleAboveBytes: number;
  /** Settings of the ld.* built-ins. */
  builtins: BuiltinConfig;
}

/**
 * Reads the runner's configuration from the environment (nothing else reads `process.env`).
 * Defaults suit a 2-core machine: one worker per core, a few sandboxes per worker for calls that
 * mostly await host work.
 */
export function loadRunnerConfig(env: Env): RunnerConfig {
  const cores = availableParallelism();
  const maxTimeoutMs = intSetting(env, 'LDBOX_MAX_TIMEOUT_MS', 120_000, 100, 3_600_000);
  const defaultTimeoutMs = intSetting(env, 'LDBOX_TIMEOUT_MS', Math.min(30_000, maxTimeoutMs), 100, 3_600_000);
  if (defaultTimeoutMs > maxTimeoutMs) {
    throw new ConfigError(`LDBOX_TIMEOUT_MS (${defaultTimeoutMs}) must not exceed LDBOX_MAX_TIMEOUT_MS (${maxTimeoutMs})`);
  }
  const maxMemoryMb = intSetting(env, 'LDBOX_MAX_MEMORY_MB', 512, 8, 2000);
  const defaultMemoryMb = intSetting(env, 'LDBOX_MEMORY_MB', Math.min(64, maxMemoryMb), 8, 2000);
  if (defaultMemoryMb > maxMemoryMb) {
    throw new ConfigError(`LDBOX_MEMORY_MB (${defaultMemoryMb}) must not exceed LDBOX_MAX_MEMORY_MB (${maxMemoryMb})`);
  }
  const size = intSetting(env, 'LDBOX_POOL_SIZE', Math.max(1, cores), 1, 256);
  return {
    host: hostSetting(env, 'LDBOX_RUNNER_HOST', '127.0.0.1'),
    port: intSetting(env, 'LDBOX_RUNNER_PORT', 50051, 0, 65535),
    token: optionalSecret(env, 'LDBOX_RUNNER_TOKEN', 16),
    maxCodeBytes: intSetting(env, 'LDBOX_MAX_CODE_BYTES', 1 * MiB, 1024, 64 * MiB),
    maxInputBytes: intSetting(env, 'LDBOX_MAX_INPUT_BYTES', 4 * MiB, 1024, 256 * MiB),
    pool: {
      size,
      concurrentPerWorker: intSetting(env, 'LDBOX_POOL_CONCURRENCY', 4, 1, 64),
      maxQueue: intSetting(env, 'LDBOX_POOL_MAX_QUEUE', 64 * size, 0, 1_000_000),
      idleTimeoutMs: intSetting(env, 'LDBOX_POOL_IDLE_TIMEOUT_MS', 60_000, 0, 86_400_000),
      defaultTimeoutMs,
      maxTimeoutMs,
      defaultMemoryBytes: defaultMemoryMb * MiB,
      maxMemoryBytes: maxMemoryMb * MiB,
      minMemoryBytes: 4 * MiB,
      maxResultBytes: intSetting(env, 'LDBOX_MAX_RESULT_BYTES', 8 * MiB, 1024, 256 * MiB),
      maxLogEntries: intSetting(env, 'LDBOX_MAX_LOG_ENTRIES', 1000, 1, 1_000_000),
      maxLogChars: intSetting(env, 'LDBOX_MAX_LOG_BYTES', 1 * MiB, 1024, 64 * MiB),
      workerHeapMb: intSetting(env, 'LDBOX_WORKER_HEAP_MB', 512, 64, 16_384),
      recycleAboveBytes: intSetting(env, 'LDBOX_RECYCLE_ABOVE_MB', 32, 16, 4096) * MiB,
      builtins: {
        egressAllow: egressAllowSetting(env),
        maxResponseBytes: intSetting(env, 'LDBOX_MAX_RESPONSE_BYTES', 32 * MiB, 1024, 1024 * MiB),
        maxRequestsPerCall: intSetting(env, 'LDBOX_MAX_REQUESTS_PER_CALL', 100, 1, 100_000),
      },
    },
  };
}

/** LDBOX_EGRESS_ALLOW: hosts (`api.example.com`, `*.example.com`), IPs and CIDRs, comma-separated. */
function egressAllowSetting(env: Env): string[] {
  const list = listSetting(env, 'LDBOX_EGRESS_ALLOW');
  try {
    new EgressGuard(list);
  } catch (err) {
    if (err instanceof EgressConfigError) throw new ConfigError(err.message);
    throw err;
  }
  return list;
}
