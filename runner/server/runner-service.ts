import { create } from '@bufbuild/protobuf';
import type { ConnectRouter } from '@connectrpc/connect';
import type { RunnerConfig } from '../config/index.js';
import type { Logger } from '../../src/logging/logger.js';
import { GetPoolStatusResponseSchema, RunnerService } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import type { RunnerPool } from '../pool/index.js';
import { runnerConnectError } from './runner-errors.js';
import { toSandboxRequest } from '../wire/execute-request.js';
import { toExecuteResponse } from '../wire/execute-response.js';

/**
 * `ldbox.runner.v1.RunnerService` as connect-node serves it. User-code failures are normal responses;
 * gRPC codes are for the call's own faults, one code per failure: the table in runner-errors.ts.
 *
 * Execute here is the path for what the runner's own routes (execute-route.ts) leave to connect-node:
 * gRPC-Web, gRPC+JSON and compressed requests. It hands the pool a decoded request (an object graph);
 * protobuf-es has already dropped any `__proto__` key of `input` and `auth` and read an unknown enum name
 * in JSON as unset, which the runner's own routes do not.
 */
export function registerRunnerService(router: ConnectRouter, pool: RunnerPool, config: RunnerConfig, log: Logger): void {
  router.service(RunnerService, {
    async execute(req, ctx) {
      let request;
      try {
        ({ request } = toSandboxRequest(req, config, ctx.timeoutMs()));
      } catch (err) {
        throw runnerConnectError(err, ctx, undefined, log);
      }
      try {
        const { outcome, queueTimeMs } = await pool.execute(request, ctx.signal);
        if (outcome.internalFault !== undefined) {
          log.warn({ requestId: request.requestId, fault: outcome.internalFault }, 'a sandbox built-in failed on the host');
        }
        return toExecuteResponse(outcome, queueTimeMs);
      } catch (err) {
        throw runnerConnectError(err, ctx, request.requestId, log);
      }
    },
    getPoolStatus() {
      const s = pool.status();
      return create(GetPoolStatusResponseSchema, {
        workers: s.workers,
        busy: s.busy,
        queued: s.queued,
        completed: BigInt(s.completed),
        failed: BigInt(s.failed),
        workersReplaced: BigInt(s.workersReplaced),
        maxQueue: s.maxQueue,
        concurrentPerWorker: s.concurrentPerWorker,
        latency: { p50Ms: s.latency.p50, p90Ms: s.latency.p90, p99Ms: s.latency.p99, maxMs: s.latency.max, samples: s.latency.samples },
      });
    },
  });
}
