import { create } from '@bufbuild/protobuf';
import { Code, ConnectError, type ConnectRouter, type HandlerContext } from '@connectrpc/connect';
import type { RunnerConfig } from '../../src/config/runner-config.js';
import type { Logger } from '../../src/logging/logger.js';
import { GetPoolStatusResponseSchema, RunnerService } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import {
  PoolCancelledError,
  PoolClosedError,
  PoolFullError,
  PoolInternalError,
  type RunnerPool,
} from '../pool/index.js';
import { toSandboxRequest } from './execute-request.js';
import { toExecuteResponse } from './execute-response.js';

/**
 * `ldbox.runner.v1.RunnerService`. User-code failures are normal responses; gRPC codes are for the
 * call's own faults, one code per failure (see runner.proto).
 */
export function registerRunnerService(router: ConnectRouter, pool: RunnerPool, config: RunnerConfig, log: Logger): void {
  router.service(RunnerService, {
    async execute(req, ctx) {
      const request = toSandboxRequest(req, config, ctx.timeoutMs());
      try {
        const { outcome, queueTimeMs } = await pool.execute(request, ctx.signal);
        if (outcome.internalFault !== undefined) {
          log.warn({ requestId: request.requestId, fault: outcome.internalFault }, 'a sandbox built-in failed on the host');
        }
        return toExecuteResponse(outcome, queueTimeMs);
      } catch (err) {
        throw toConnectError(err, ctx, request.requestId, log);
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

function toConnectError(err: unknown, ctx: HandlerContext, requestId: string, log: Logger): ConnectError {
  if (err instanceof PoolFullError) return new ConnectError(err.message, Code.ResourceExhausted);
  if (err instanceof PoolClosedError) return new ConnectError(err.message, Code.Unavailable);
  if (err instanceof PoolCancelledError) {
    // The handler's signal carries why: the client's deadline or its cancellation.
    const reason = ctx.signal.reason;
    return reason instanceof ConnectError ? reason : new ConnectError('the call was cancelled', Code.Canceled);
  }
  if (err instanceof PoolInternalError) {
    log.error({ requestId, err: err.message, cause: err.cause instanceof Error ? err.cause.message : undefined }, 'sandbox call failed');
    return new ConnectError('the sandbox failed to run the call; it is safe to retry', Code.Internal);
  }
  log.error({ requestId, err: err instanceof Error ? err.message : String(err) }, 'unexpected error in Execute');
  return new ConnectError('internal error', Code.Internal);
}
