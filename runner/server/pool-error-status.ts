import { Code } from '@connectrpc/connect';
import type { Logger } from '../../src/logging/logger.js';
import { PoolCancelledError, PoolClosedError, PoolFullError, PoolInternalError, PoolUnavailableError } from '../pool/index.js';

/** A gRPC status and the message sent to the client. */
export interface CallStatus {
  code: Code;
  message: string;
}

/**
 * The one status for each way the pool fails a call (runner.proto: RESOURCE_EXHAUSTED for a full
 * queue, UNAVAILABLE while shutting down, CANCELLED, INTERNAL), shared by connect-node's Execute
 * (runner-service.ts) and the runner's own routes (execute-route.ts). What is not the client's to see
 * (a worker's error, a bug) is logged and answered with a fixed message.
 */
export function statusOfPoolError(err: unknown, requestId: string | undefined, log: Logger): CallStatus {
  if (err instanceof PoolFullError) return { code: Code.ResourceExhausted, message: err.message };
  if (err instanceof PoolClosedError) return { code: Code.Unavailable, message: err.message };
  if (err instanceof PoolUnavailableError) return { code: Code.Unavailable, message: err.message };
  if (err instanceof PoolCancelledError) return { code: Code.Canceled, message: 'the call was cancelled' };
  if (err instanceof PoolInternalError) {
    log.error({ requestId, err: err.message, cause: err.cause instanceof Error ? err.cause.message : undefined }, 'sandbox call failed');
    return { code: Code.Internal, message: 'the sandbox failed to run the call; it is safe to retry' };
  }
  log.error({ requestId, err: err instanceof Error ? err.message : String(err) }, 'unexpected error in Execute');
  return { code: Code.Internal, message: 'internal error' };
}
