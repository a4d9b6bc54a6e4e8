import { availableParallelism } from 'node:os';
import { EgressConfigError, parseEgressAllowList } from './egress-allow-list.js';
import { certificateSetting, keyPairSetting, type PemKeyPair } from '../../src/config/tls-files.js';
import { HTTP_LIMIT_SETTING_LIST, type HttpLimits, loadHttpLimits } from '../../src/config/http-limits-config.js';
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
  sizeSetting,
} from '../../src/config/env-parsers.js';

const MiB = 1024 * 1024;

/** The runner's settings, validated and filled with defaults. */
export interface RunnerConfig {
  host: string;
  port: number;
  /** When set, RunnerService calls need `Authorization: Bearer <token>`. */
  token: string | undefined;
  /** When set, the port speaks TLS only (ALPN h2 and http/1.1). */
  tls: RunnerTlsConfig | undefined;
  pool: PoolConfig;
  /** Largest `code` accepted, in bytes of UTF-8. */
  maxCodeBytes: number;
  /** Largest `input` + `auth` accepted, as JSON bytes. */
  maxInputBytes: number;
  /** Connections, streams and timeouts of the port (http-limits-config.ts). */
  http: HttpLimits;
  /** V8's old-generation growth between full GCs, in % (0: V8's own heuristics); heap-policy.ts. */
  heapGrowthPercent: number;
  /** Execute calls the runner sends itself before it reports ready (runner/server/warm-up.ts); 0: none. */
  warmUpCalls: number;
}

/** The runner's certificate and key, and the CA its clients' certificates must chain to (mTLS), PEM. */
export interface RunnerTlsConfig extends PemKeyPair {
  /** When set, every connection must present a client certificate issued by this CA. */
  clientCa: Buffer | undefined;
}

export interface PoolConfig {
  /** Worker threads. */
  size: number;
  /**
   * LDBOX_POOL_CONCURRENCY, kept for older deployments: it no longer limits anything, since a call
   * waiting for host work parks and frees its sandbox (see {@link maxInflight}).
   */
  concurrentPerWorker: number;
  /**
   * Calls the runner holds started at once, computing or waiting for host work (split evenly between the
   * workers). A waiting call costs the memory it dirtied (tens to hundreds of KiB), not a sandbox.
   */
  maxInflight: number;
  /** Calls that may wait for a sandbox (in the pool's queue or inside a worker); beyond it RESOURCE_EXHAUSTED. */
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
  /** How many nice steps below the runner's main thread the workers run (Linux); 0 or unset: the same. */
  workerNice?: number;
  /** A WASM module whose memory grew past this is replaced after the call (WASM memory never shrinks). */
  recycleAboveBytes: number;
  /** QuickJS's stack limit of a call: the deepest recursion. */
  sandboxStackBytes: number;
  /** Settings of the ld.* built-ins. */
  builtins: BuiltinConfig;
}

/** Operator settings for the ld.* built-ins (from config, handed to every worker). */
export interface BuiltinConfig {
  /** Hosts and CIDRs that ld.request may reach despite the private-address guard (LDBOX_EGRESS_ALLOW). */
  egressAllow: string[];
  /** Largest response body ld.request reads, in bytes. */
  maxResponseBytes: number;
  /** Most ld.request / ld.cloudRequest calls one sandbox call may make. */
  maxRequestsPerCall: number;
}

/** The runner's settings (also those of `ldbox run`, which runs the same pool). */
const S = {
  host: {
    kind: 'text',
    name: 'LDBOX_RUNNER_HOST',
    shown: '127.0.0.1',
    meaning: 'address the runner binds; a non-loopback one needs LDBOX_RUNNER_TOKEN or LDBOX_RUNNER_TLS_CLIENT_CA (or LDBOX_RUNNER_INSECURE=1)',
  },
  port: { kind: 'int', name: 'LDBOX_RUNNER_PORT', fallback: 50051, min: 0, max: 65535, meaning: 'runner port: gRPC, gRPC-Web and Connect (0 = any free port)' },
  token: { kind: 'text', name: 'LDBOX_RUNNER_TOKEN', shown: 'unset', meaning: 'when set (at least 16 characters), calls need `Authorization: Bearer <token>`' },
  tlsCert: {
    kind: 'text',
    name: 'LDBOX_RUNNER_TLS_CERT',
    shown: 'unset',
    meaning: 'PEM certificate (chain) of the runner; with LDBOX_RUNNER_TLS_KEY the port speaks TLS only (h2 and http/1.1 by ALPN)',
  },
  tlsKey: { kind: 'text', name: 'LDBOX_RUNNER_TLS_KEY', shown: 'unset', meaning: 'PEM private key (unencrypted) of LDBOX_RUNNER_TLS_CERT' },
  tlsClientCa: {
    kind: 'text',
    name: 'LDBOX_RUNNER_TLS_CLIENT_CA',
    shown: 'unset',
    meaning: 'PEM CA: every connection must present a client certificate it issued (mTLS; needs the two above)',
  },
  insecure: {
    kind: 'choice',
    name: 'LDBOX_RUNNER_INSECURE',
    fallback: '0',
    choices: ['0', '1'],
    meaning: '1 lets a non-loopback LDBOX_RUNNER_HOST start with neither token nor client certificates',
  },
  poolSize: { kind: 'int', name: 'LDBOX_POOL_SIZE', fallback: 1, shown: 'cores', min: 1, max: 256, meaning: 'worker threads' },
  poolConcurrency: {
    kind: 'int',
    name: 'LDBOX_POOL_CONCURRENCY',
    fallback: 4,
    min: 1,
    max: 64,
    meaning: 'no longer limits calls (a call waiting for host work frees its sandbox: see LDBOX_RUNNER_MAX_INFLIGHT); accepted for older deployments',
  },
  maxInflight: {
    kind: 'int',
    name: 'LDBOX_RUNNER_MAX_INFLIGHT',
    fallback: 10_000,
    min: 1,
    max: 1_000_000,
    meaning: 'calls the runner runs at once, computing or waiting for host work (a waiting call costs its memory, not a sandbox); beyond it calls queue',
  },
  poolMaxQueue: {
    kind: 'int',
    name: 'LDBOX_POOL_MAX_QUEUE',
    fallback: 64,
    shown: '64 × size',
    min: 0,
    max: 1_000_000,
    meaning:
      'calls the runner takes beyond LDBOX_RUNNER_MAX_INFLIGHT; together they bound the calls admitted (running, parked or waiting to start); beyond them, RESOURCE_EXHAUSTED',
  },
  poolIdleTimeoutMs: {
    kind: 'int',
    name: 'LDBOX_POOL_IDLE_TIMEOUT_MS',
    fallback: 60_000,
    min: 0,
    max: 86_400_000,
    meaning: 'idle timeout of workers above the minimum, ms',
  },
  timeoutMs: {
    kind: 'int',
    name: 'LDBOX_TIMEOUT_MS',
    fallback: 30_000,
    min: 100,
    max: 3_600_000,
    meaning: 'default limits.timeoutMs (at most LDBOX_MAX_TIMEOUT_MS)',
  },
  maxTimeoutMs: MAX_TIMEOUT_MS,
  memoryMb: {
    kind: 'size',
    name: 'LDBOX_MEMORY_MB',
    unit: MiB,
    fallback: 64,
    min: 8,
    max: 2000,
    meaning: 'default limits.memoryBytes, in MiB or with a unit (at most LDBOX_MAX_MEMORY_MB)',
  },
  maxMemoryMb: {
    kind: 'size',
    name: 'LDBOX_MAX_MEMORY_MB',
    unit: MiB,
    fallback: 512,
    min: 8,
    max: 2000,
    meaning: 'largest limits.memoryBytes, in MiB or with a unit',
  },
  maxCodeBytes: { kind: 'size', name: 'LDBOX_MAX_CODE_BYTES', fallback: 1 * MiB, min: 1024, max: 64 * MiB, meaning: 'largest code, in bytes or with a unit' },
  maxInputBytes: { kind: 'size', name: 'LDBOX_MAX_INPUT_BYTES', fallback: 4 * MiB, min: 1024, max: 256 * MiB, meaning: 'largest input + auth as JSON' },
  maxResultBytes: {
    kind: 'size',
    name: 'LDBOX_MAX_RESULT_BYTES',
    fallback: 8 * MiB,
    min: 1024,
    max: 256 * MiB,
    meaning: 'largest result (JSON + binary bytes)',
  },
  maxLogEntries: { kind: 'int', name: 'LDBOX_MAX_LOG_ENTRIES', fallback: 1000, min: 1, max: 1_000_000, meaning: 'most log entries per call' },
  maxLogBytes: { kind: 'size', name: 'LDBOX_MAX_LOG_BYTES', fallback: 1 * MiB, min: 1024, max: 64 * MiB, meaning: 'most log characters per call' },
  warmUpCalls: {
    kind: 'int',
    name: 'LDBOX_RUNNER_WARMUP_CALLS',
    fallback: 10_000,
    min: 0,
    max: 1_000_000,
    meaning:
      'Execute calls of `return 1` the runner sends itself over its port before /readyz says ready (~1 s of both cores at the default), so that its first real calls run at full speed and its memory is at its working size; 0: none',
  },
  heapGrowthPercent: {
    kind: 'int',
    name: 'LDBOX_HEAP_GROWTH_PERCENT',
    fallback: 50,
    min: 0,
    max: 400,
    meaning:
      "how far V8 lets a heap's old generation grow past what its last full GC kept, in % (0: V8's own, up to ~300 %): lower keeps the runner's memory flat under load, higher spends less CPU on GC",
  },
  workerNice: {
    kind: 'int',
    name: 'LDBOX_WORKER_NICE',
    fallback: 10,
    min: 0,
    max: 19,
    meaning:
      "how many nice steps below the runner's main thread its workers run (Linux; 0: the same): the main thread reads requests and hands them out, and a worker it wakes must not take its core from it",
  },
  workerHeapMb: {
    kind: 'size',
    name: 'LDBOX_WORKER_HEAP_MB',
    unit: MiB,
    fallback: 512,
    min: 64,
    max: 16_384,
    meaning: 'V8 heap of a worker, in MiB or with a unit; a worker over it is replaced',
  },
  recycleAboveMb: {
    kind: 'size',
    name: 'LDBOX_RECYCLE_ABOVE_MB',
    unit: MiB,
    fallback: 32,
    min: 16,
    max: 4096,
    meaning: 'a WASM module whose memory grew past this (MiB or with a unit) is replaced after the call',
  },
  sandboxStack: {
    kind: 'size',
    name: 'LDBOX_SANDBOX_STACK',
    fallback: 1 * MiB,
    min: 128 * 1024,
    max: 1 * MiB,
    meaning:
      "QuickJS stack of a call, in bytes or with a unit: the deepest recursion (~5,400 JS calls at 1MiB, ~1,360 at 256KiB); a call's restore puts back only the stack it used, so a larger limit costs nothing per call",
  },
  egressAllow: {
    kind: 'text',
    name: 'LDBOX_EGRESS_ALLOW',
    shown: 'empty',
    meaning: 'hosts (api.internal, *.internal), IPs and CIDRs ld.request may reach despite the private-address guard, comma-separated',
  },
  maxResponseBytes: {
    kind: 'size',
    name: 'LDBOX_MAX_RESPONSE_BYTES',
    fallback: 32 * MiB,
    min: 1024,
    max: 1024 * MiB,
    meaning: 'largest response body ld.request reads',
  },
  maxRequestsPerCall: {
    kind: 'int',
    name: 'LDBOX_MAX_REQUESTS_PER_CALL',
    fallback: 100,
    min: 1,
    max: 100_000,
    meaning: 'most ld.request/ld.cloudRequest calls one call may make',
  },
} as const satisfies Record<string, SettingSpec>;

/** Every setting the runner reads, for `--help` and the unknown-variable warning. */
export const RUNNER_SETTINGS: readonly SettingSpec[] = [...Object.values(S), ...HTTP_LIMIT_SETTING_LIST];

/**
 * Reads the runner's configuration from the environment (nothing else reads `process.env`).
 * Defaults suit a 2-core machine: one worker per core, a few sandboxes per worker for calls that
 * mostly await host work.
 */
export function loadRunnerConfig(env: Env): RunnerConfig {
  const cores = availableParallelism();
  const maxTimeoutMs = intSetting(env, S.maxTimeoutMs);
  const defaultTimeoutMs = intSetting(env, S.timeoutMs, Math.min(S.timeoutMs.fallback, maxTimeoutMs));
  if (defaultTimeoutMs > maxTimeoutMs) {
    throw new ConfigError(`LDBOX_TIMEOUT_MS (${defaultTimeoutMs}) must not exceed LDBOX_MAX_TIMEOUT_MS (${maxTimeoutMs})`);
  }
  const maxMemoryMb = sizeSetting(env, S.maxMemoryMb);
  const defaultMemoryMb = sizeSetting(env, S.memoryMb, Math.min(S.memoryMb.fallback, maxMemoryMb));
  if (defaultMemoryMb > maxMemoryMb) {
    throw new ConfigError(`LDBOX_MEMORY_MB (${defaultMemoryMb}) must not exceed LDBOX_MAX_MEMORY_MB (${maxMemoryMb})`);
  }
  const size = intSetting(env, S.poolSize, Math.max(1, cores));
  const host = hostSetting(env, S.host);
  const token = optionalSecret(env, S.token.name, 16);
  const tls = tlsSettings(env);
  const insecure = choiceSetting(env, S.insecure) === '1';
  if (!isLoopback(host) && token === undefined && tls?.clientCa === undefined && !insecure) {
    throw new ConfigError(
      `LDBOX_RUNNER_HOST=${host} is not a loopback address and the runner runs any code it is sent: set LDBOX_RUNNER_TOKEN or LDBOX_RUNNER_TLS_CLIENT_CA (client certificates), or LDBOX_RUNNER_INSECURE=1 to open it to whoever reaches the port`,
    );
  }
  return {
    host,
    port: intSetting(env, S.port),
    token,
    tls,
    maxCodeBytes: sizeSetting(env, S.maxCodeBytes),
    maxInputBytes: sizeSetting(env, S.maxInputBytes),
    http: loadHttpLimits(env),
    heapGrowthPercent: intSetting(env, S.heapGrowthPercent),
    warmUpCalls: intSetting(env, S.warmUpCalls),
    pool: {
      size,
      concurrentPerWorker: intSetting(env, S.poolConcurrency),
      maxInflight: intSetting(env, S.maxInflight),
      maxQueue: intSetting(env, S.poolMaxQueue, S.poolMaxQueue.fallback * size),
      idleTimeoutMs: intSetting(env, S.poolIdleTimeoutMs),
      sandboxStackBytes: sizeSetting(env, S.sandboxStack),
      defaultTimeoutMs,
      maxTimeoutMs,
      defaultMemoryBytes: defaultMemoryMb * MiB,
      maxMemoryBytes: maxMemoryMb * MiB,
      minMemoryBytes: 4 * MiB,
      maxResultBytes: sizeSetting(env, S.maxResultBytes),
      maxLogEntries: intSetting(env, S.maxLogEntries),
      maxLogChars: sizeSetting(env, S.maxLogBytes),
      workerHeapMb: sizeSetting(env, S.workerHeapMb),
      workerNice: intSetting(env, S.workerNice),
      recycleAboveBytes: sizeSetting(env, S.recycleAboveMb) * MiB,
      builtins: {
        egressAllow: egressAllowSetting(env),
        maxResponseBytes: sizeSetting(env, S.maxResponseBytes),
        maxRequestsPerCall: intSetting(env, S.maxRequestsPerCall),
      },
    },
  };
}

/** LDBOX_RUNNER_TLS_CERT, _KEY and _CLIENT_CA (files read and checked here). */
function tlsSettings(env: Env): RunnerTlsConfig | undefined {
  const pair = keyPairSetting(env, S.tlsCert.name, S.tlsKey.name);
  const clientCa = certificateSetting(env, S.tlsClientCa.name);
  if (pair === undefined) {
    if (clientCa !== undefined)
      throw new ConfigError('LDBOX_RUNNER_TLS_CLIENT_CA needs LDBOX_RUNNER_TLS_CERT and LDBOX_RUNNER_TLS_KEY: client certificates are asked for over TLS only');
    return undefined;
  }
  return { ...pair, clientCa };
}

/** 127.0.0.0/8, ::1 (bracketed or not, or IPv4-mapped) and `localhost`: only this machine can connect. */
export function isLoopback(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost' || h === '::1' || h === '0:0:0:0:0:0:0:1') return true;
  const v4 = /^(?:::ffff:)?(\d{1,3})\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.exec(h);
  return v4 !== null && v4[1] === '127';
}

/** LDBOX_EGRESS_ALLOW: hosts (`api.example.com`, `*.example.com`), IPs and CIDRs, comma-separated. */
function egressAllowSetting(env: Env): string[] {
  const list = listSetting(env, S.egressAllow.name);
  try {
    parseEgressAllowList(list);
  } catch (err) {
    if (err instanceof EgressConfigError) throw new ConfigError(err.message);
    throw err;
  }
  return list;
}
