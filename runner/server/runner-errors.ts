/**
 * The runner's one error table: each way an Execute call fails → its gRPC code (runner.proto: INVALID_ARGUMENT
 * for a bad request, RESOURCE_EXHAUSTED for a full queue, UNAVAILABLE while shutting down or after a lost
 * worker, CANCELLED, INTERNAL) → what the client is told. Shared by connect-node's Execute
 * (runner-service.ts) and the runner's own routes (execute-route.ts). What is not the client's to see (a
 * worker's error, a bug) is logged and answered with a fixed message. Tested whole:
 * test/runner/runner-errors.test.ts.
 */
import type { HandlerContext } from '@connectrpc/connect';
import { Code, ConnectError } from '@connectrpc/connect';
import { type CallStatus, type ConnectErrorTable, connectErrorOf, instanceOf, OWN_MESSAGE, statusOf } from '../../src/connect/connect-error-table.js';
import type { Logger } from '../../src/logging/logger.js';
import { PoolCancelledError, PoolClosedError, PoolFullError, PoolInternalError, PoolUnavailableError } from '../pool/index.js';
import { isInvalidRequest } from '../wire/execute-request.js';

export const RUNNER_ERRORS = {
  /** The request breaks a rule or a limit; the message names the field and the limit. */
  InvalidRequestError: { is: isInvalidRequest, code: Code.InvalidArgument, message: OWN_MESSAGE },
  /** The queue is at its bound: back off. */
  PoolFullError: { is: instanceOf(PoolFullError), code: Code.ResourceExhausted, message: OWN_MESSAGE },
  /** The runner is shutting down. */
  PoolClosedError: { is: instanceOf(PoolClosedError), code: Code.Unavailable, message: OWN_MESSAGE },
  /** The call lost its worker and could not be run again safely: retry. */
  PoolUnavailableError: { is: instanceOf(PoolUnavailableError), code: Code.Unavailable, message: OWN_MESSAGE },
  /** The client cancelled (its deadline, when it had one, is answered from the handler's signal instead). */
  PoolCancelledError: { is: instanceOf(PoolCancelledError), code: Code.Canceled, message: 'the call was cancelled' },
  /** A worker died or the sandbox machinery failed: its message is for logs only. */
  PoolInternalError: {
    is: instanceOf(PoolInternalError),
    code: Code.Internal,
    message: 'the sandbox failed to run the call; it is safe to retry',
    log: { level: 'error', msg: 'sandbox call failed' },
  },
  /** Anything else is a bug. */
  Error: { is: () => true, code: Code.Internal, message: 'internal error', log: { level: 'error', msg: 'unexpected error in Execute' } },
} as const satisfies ConnectErrorTable;

/** The status and message the runner answers `err` with (logged when its row says so). */
export function runnerCallStatus(err: unknown, requestId: string | undefined, log: Logger): CallStatus {
  return statusOf(RUNNER_ERRORS, err, { requestId }, log);
}

/** `err` as the ConnectError connect-node's Execute throws, `err` kept as its `cause`. */
export function runnerConnectError(err: unknown, ctx: Pick<HandlerContext, 'signal'>, requestId: string | undefined, log: Logger): ConnectError {
  // The handler's signal carries why a call was cancelled: the client's deadline or its cancellation.
  if (err instanceof PoolCancelledError && ctx.signal.reason instanceof ConnectError) return ctx.signal.reason;
  return connectErrorOf(RUNNER_ERRORS, err, { requestId }, log);
}
