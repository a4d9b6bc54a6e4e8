/**
 * Prometheus metrics of the executor (`GET /metrics` on LDBOX_EXECUTOR_PORT), on a registry of its own
 * (several executors in one process — `ldbox dev`, tests — must not collide on prom-client's global one):
 * - `ldbox_executor_executions_total{outcome}`: jobs finished: `succeeded`, `failed`, `already_finished`
 *   (a redelivery of a finished execution, a no-op), `malformed` (a job that could not be read), `cancelled`
 *   (stopped by CancelExecution);
 * - `ldbox_executor_execution_seconds{outcome}`: one attempt's run time, from pick-up to the final record;
 * - `ldbox_executor_queue_wait_seconds`: from the webhook's acceptance to an executor's pick-up (first
 *   attempts only: a retry waits by design);
 * - `ldbox_executor_execute_seconds{outcome}`: one node's `Execute` call (`ok`, `code_error`, `runner_error`);
 * - `ldbox_executor_attempts_total{result}`: attempts by how they ended (`done`, `retry`, `exhausted`);
 * - `ldbox_executor_jobs_in_flight` and `ldbox_executor_concurrency`: utilisation is their ratio;
 * - `ldbox_executor_queue_depth{state}`: jobs `pending` (not yet delivered) and `unacked` (delivered, being
 *   run), read from the durable consumer at scrape time;
 * - `ldbox_executor_nats_connected`;
 * - the default Node process metrics (`process_*`, `nodejs_*`).
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ExecuteOutcome } from './run-execution.js';

export type ExecutionOutcomeLabel = 'succeeded' | 'failed' | 'already_finished' | 'malformed' | 'cancelled';
export type AttemptResult = 'done' | 'retry' | 'exhausted';

export interface ExecutorMetrics {
  registry: Registry;
  execution(outcome: ExecutionOutcomeLabel, seconds: number): void;
  queueWait(seconds: number): void;
  execute(seconds: number, outcome: ExecuteOutcome): void;
  attempt(result: AttemptResult): void;
  setNatsConnected(connected: boolean): void;
}

export interface ExecutorMetricsSources {
  concurrency: number;
  inFlight: () => number;
  /** Consumer state, or undefined when NATS is not reachable. */
  queueDepth: () => Promise<{ pending: number; unacked: number } | undefined>;
}

const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

export function createExecutorMetrics(sources: ExecutorMetricsSources): ExecutorMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const executions = new Counter({
    name: 'ldbox_executor_executions_total',
    help: 'Jobs finished by the executor, by outcome.',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const executionSeconds = new Histogram({
    name: 'ldbox_executor_execution_seconds',
    help: 'Run time of one attempt, from pick-up to the final record.',
    labelNames: ['outcome'] as const,
    buckets: SECONDS,
    registers: [registry],
  });
  const queueWait = new Histogram({
    name: 'ldbox_executor_queue_wait_seconds',
    help: "Time from the webhook's acceptance to an executor picking the job up (first attempts).",
    buckets: SECONDS,
    registers: [registry],
  });
  const execute = new Histogram({
    name: 'ldbox_executor_execute_seconds',
    help: "Latency of one node's Execute call to a runner, by outcome.",
    labelNames: ['outcome'] as const,
    buckets: SECONDS,
    registers: [registry],
  });
  const attempts = new Counter({
    name: 'ldbox_executor_attempts_total',
    help: 'Job attempts by how they ended: done (final record written), retry (given back), exhausted (recorded as failed).',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  new Gauge({
    name: 'ldbox_executor_jobs_in_flight',
    help: 'Jobs being run right now.',
    registers: [registry],
    collect() {
      this.set(sources.inFlight());
    },
  });
  new Gauge({ name: 'ldbox_executor_concurrency', help: 'Jobs this executor runs at once at most.', registers: [registry] }).set(sources.concurrency);
  new Gauge({
    name: 'ldbox_executor_queue_depth',
    help: 'Jobs in the durable consumer: pending (not yet delivered) and unacked (delivered, not finished).',
    labelNames: ['state'] as const,
    registers: [registry],
    async collect() {
      const depth = await sources.queueDepth().catch(() => undefined);
      this.reset();
      if (!depth) return;
      this.set({ state: 'pending' }, depth.pending);
      this.set({ state: 'unacked' }, depth.unacked);
    },
  });
  const nats = new Gauge({ name: 'ldbox_executor_nats_connected', help: '1 while the executor is connected to NATS.', registers: [registry] });
  return {
    registry,
    execution: (outcome, seconds) => {
      executions.inc({ outcome });
      executionSeconds.observe({ outcome }, seconds);
    },
    queueWait: (s) => queueWait.observe(s),
    execute: (seconds, outcome) => execute.observe({ outcome }, seconds),
    attempt: (result) => attempts.inc({ result }),
    setNatsConnected: (c) => nats.set(c ? 1 : 0),
  };
}
