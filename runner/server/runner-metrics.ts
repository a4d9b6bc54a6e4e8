/**
 * Prometheus metrics of the runner (`GET /metrics`), on a registry of its own (several runners in one
 * process, as in the tests or `ldbox dev`, must not collide on prom-client's global registry):
 * - `ldbox_runner_execute_seconds{outcome}` histogram and `ldbox_runner_executions_total{outcome}`
 *   counter: every Execute call that reached the handler, timed from the request being parsed to the
 *   answer (queue wait included); `outcome` is one of {@link EXECUTE_OUTCOMES};
 * - `ldbox_runner_queue_wait_seconds` histogram: how long an answered call waited for a sandbox (the
 *   pool's `queueTimeMs`, the response's `stats.queueTimeMs`);
 * - `ldbox_runner_user_errors_total{kind}` counter: calls whose user code failed (outcome `error`), by
 *   {@link USER_ERROR_KINDS} (the response's `error.kind`);
 * - `ldbox_runner_sandbox_memory_bytes` histogram: the sandbox's memory high-water mark of each answered
 *   call (`stats.memoryUsedBytes`);
 * - `ldbox_runner_pool_workers`, `ldbox_runner_pool_busy`, `ldbox_runner_pool_queue_depth`,
 *   `ldbox_runner_pool_utilization`: the pool's state, read at scrape time (RunnerPool.status());
 * - `ldbox_runner_pool_workers_replaced_total` counter: workers that died (crash, heap limit, a hard stop)
 *   and were replaced, read at scrape time (RunnerPool.status().workersReplaced);
 * - the default Node process metrics (`process_*`, `nodejs_*`).
 */
import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { ErrorKind, type ExecuteResponse, RunnerService } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import type { RunnerPool } from '../pool/index.js';
import type { UserErrorKind } from '../sandbox/index.js';

/**
 * - `ok`: the code returned a result;
 * - `error`: the user code failed (thrown, syntax, timeout, memory limit, invalid result): a normal
 *   response with `error` set;
 * - `rejected`: the request itself was refused (INVALID_ARGUMENT, UNAUTHENTICATED, PERMISSION_DENIED);
 * - `busy`: the runner could not take the call now (RESOURCE_EXHAUSTED: queue full; UNAVAILABLE:
 *   shutting down). Both mean "retry on another runner";
 * - `cancelled`: the client cancelled or its deadline passed (CANCELLED, DEADLINE_EXCEEDED);
 * - `internal`: anything else (a worker died, a bug).
 */
export const EXECUTE_OUTCOMES = ['ok', 'error', 'rejected', 'busy', 'cancelled', 'internal'] as const;
export type ExecuteOutcome = (typeof EXECUTE_OUTCOMES)[number];

/** The `kind` label of `ldbox_runner_user_errors_total` (mirrors ldbox.runner.v1.ErrorKind). */
export const USER_ERROR_KINDS: readonly UserErrorKind[] = ['thrown', 'syntax', 'timeout', 'memory-limit', 'invalid-result'];

const KIND_OF_PROTO: Partial<Record<ErrorKind, UserErrorKind>> = {
  [ErrorKind.THROWN]: 'thrown',
  [ErrorKind.SYNTAX]: 'syntax',
  [ErrorKind.TIMEOUT]: 'timeout',
  [ErrorKind.MEMORY_LIMIT]: 'memory-limit',
  [ErrorKind.INVALID_RESULT]: 'invalid-result',
};

/** What an answered call (outcome `ok` or `error`) tells besides its outcome. */
export interface AnsweredCall {
  queueTimeMs: number;
  /** Absent when not measured (a call whose worker was stopped). */
  memoryUsedBytes?: number | undefined;
  /** Set when the user code failed. */
  errorKind?: UserErrorKind | undefined;
}

export interface RunnerMetrics {
  readonly registry: Registry;
  /** Records Execute calls; must come before the auth interceptor so that refused calls count too. */
  readonly interceptor: Interceptor;
  /** Records one Execute call the runner's own routes answered (execute-route.ts), from `started` (performance.now()). */
  observe(outcome: ExecuteOutcome, started: number): void;
  /** Records what an answered call measured (queue wait, memory, error kind); once per answered call. */
  observeAnswer(call: AnsweredCall): void;
}

export function createRunnerMetrics(pool: RunnerPool): RunnerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const seconds = new Histogram({
    name: 'ldbox_runner_execute_seconds',
    help: 'Time to answer an Execute call (queue wait included), by outcome.',
    labelNames: ['outcome'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers: [registry],
  });
  const total = new Counter({
    name: 'ldbox_runner_executions_total',
    help: 'Execute calls answered, by outcome.',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const queueWait = new Histogram({
    name: 'ldbox_runner_queue_wait_seconds',
    help: 'Time an answered Execute call waited for a sandbox.',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const userErrors = new Counter({
    name: 'ldbox_runner_user_errors_total',
    help: 'Execute calls whose user code failed, by error kind.',
    labelNames: ['kind'] as const,
    registers: [registry],
  });
  const memory = new Histogram({
    name: 'ldbox_runner_sandbox_memory_bytes',
    help: "High-water mark of an answered call's sandbox memory, in bytes.",
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024].map((mib) => mib * 1024 * 1024),
    registers: [registry],
  });
  // Every outcome and kind is exported from the start, so rate() and alerts see a 0 rather than no series.
  for (const outcome of EXECUTE_OUTCOMES) {
    seconds.zero({ outcome });
    total.inc({ outcome }, 0);
  }
  const errorChildren = new Map(USER_ERROR_KINDS.map((kind) => [kind, userErrors.labels(kind)] as const));
  for (const child of errorChildren.values()) child.inc(0);
  const observeAnswer = (call: AnsweredCall): void => {
    queueWait.observe(call.queueTimeMs / 1000);
    if (call.memoryUsedBytes !== undefined) memory.observe(call.memoryUsedBytes);
    if (call.errorKind !== undefined) errorChildren.get(call.errorKind)?.inc();
  };
  // The pool counts replaced workers; the counter follows it at scrape time (it only grows).
  let replacedSeen = 0;
  new Counter({
    name: 'ldbox_runner_pool_workers_replaced_total',
    help: 'Sandbox workers that died (crash, heap limit, a hard stop) and were replaced.',
    registers: [registry],
    collect() {
      const replaced = pool.status().workersReplaced;
      if (replaced > replacedSeen) this.inc(replaced - replacedSeen);
      replacedSeen = Math.max(replacedSeen, replaced);
    },
  });
  const poolGauge = (name: string, help: string, read: (s: ReturnType<RunnerPool['status']>) => number): void => {
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(read(pool.status()));
      },
    });
  };
  poolGauge('ldbox_runner_pool_workers', 'Worker threads of the sandbox pool.', (s) => s.workers);
  poolGauge('ldbox_runner_pool_busy', 'Calls running in a sandbox now.', (s) => s.busy);
  poolGauge('ldbox_runner_pool_queue_depth', 'Calls waiting for a sandbox.', (s) => s.queued);
  poolGauge(
    'ldbox_runner_pool_utilization',
    'Share of the calls the runner runs at once in use (computing or parked waiting for host work): busy / LDBOX_RUNNER_MAX_INFLIGHT, 0 to 1.',
    (s) => (s.workers * s.concurrentPerWorker === 0 ? 0 : s.busy / (s.workers * s.concurrentPerWorker)),
  );

  // One child per outcome, made once: prom-client hashes a label object on every call otherwise.
  const children = new Map<ExecuteOutcome, { seconds: { observe(v: number): void }; total: { inc(): void } }>();
  const observe = (outcome: ExecuteOutcome, started: number): void => {
    let child = children.get(outcome);
    if (!child) {
      child = { seconds: seconds.labels(outcome), total: total.labels(outcome) };
      children.set(outcome, child);
    }
    child.seconds.observe((performance.now() - started) / 1000);
    child.total.inc();
  };
  const interceptor: Interceptor = (next) => async (req) => {
    if (req.method !== RunnerService.method.execute) return next(req);
    const started = performance.now();
    try {
      const res = await next(req);
      const message = res.stream ? undefined : (res.message as ExecuteResponse);
      observe(message?.error !== undefined ? 'error' : 'ok', started);
      if (message) {
        observeAnswer({
          queueTimeMs: message.stats?.queueTimeMs ?? 0,
          memoryUsedBytes: message.stats === undefined ? undefined : Number(message.stats.memoryUsedBytes),
          errorKind: message.error === undefined ? undefined : KIND_OF_PROTO[message.error.kind],
        });
      }
      return res;
    } catch (err) {
      observe(outcomeOfError(err), started);
      throw err;
    }
  };
  return { registry, interceptor, observe, observeAnswer };
}

/** The outcome of an Execute call that ended with a gRPC status other than OK. */
export function outcomeOfError(err: unknown): ExecuteOutcome {
  return outcomeOfCode(ConnectError.from(err).code);
}

/** The outcome of an Execute call answered with status `code` (not OK). */
export function outcomeOfCode(code: Code): ExecuteOutcome {
  switch (code) {
    case Code.InvalidArgument:
    case Code.Unauthenticated:
    case Code.PermissionDenied:
      return 'rejected';
    case Code.ResourceExhausted:
    case Code.Unavailable:
      return 'busy';
    case Code.Canceled:
    case Code.DeadlineExceeded:
      return 'cancelled';
    default:
      return 'internal';
  }
}
