/**
 * The control plane's one error table (WorkflowService, WorkspaceService; control-plane.ts): each way a
 * call fails → its Connect code → what the client is told. A ConnectError a handler throws is already an
 * answer; anything not in the table is INTERNAL "internal error", its cause logged, never sent. Tested
 * whole: test/gateway/control-plane-errors.test.ts.
 */
import { Code, type ConnectError } from '@connectrpc/connect';
import { type ConnectErrorTable, connectErrorOf, instanceOf, OWN_MESSAGE } from '../src/connect/connect-error-table.js';
import type { Logger } from '../src/logging/logger.js';
import { NatsUnavailableError } from '../src/nats/connect.js';
import { isSecretUnavailable, isStoreConflict, isStoreUnavailable } from '../src/store/store-errors.js';
import { isWorkflowValidationError } from '../src/workflows/validation-error.js';

const NATS_UNREACHABLE = 'NATS is not reachable: try again shortly';

export const CONTROL_PLANE_ERRORS = {
  /** A request check failed; the message names the field. */
  WorkflowValidationError: { is: isWorkflowValidationError, code: Code.InvalidArgument, message: OWN_MESSAGE },
  /** The KV store did not answer. */
  StoreUnavailableError: {
    is: isStoreUnavailable,
    code: Code.Unavailable,
    message: NATS_UNREACHABLE,
    log: { level: 'warn', msg: 'control plane call failed: NATS unavailable' },
  },
  /** The NATS connection is down. */
  NatsUnavailableError: {
    is: instanceOf(NatsUnavailableError),
    code: Code.Unavailable,
    message: NATS_UNREACHABLE,
    log: { level: 'warn', msg: 'control plane call failed: NATS unavailable' },
  },
  /** A compare-and-set lost to concurrent writers on every attempt. */
  StoreConflictError: { is: isStoreConflict, code: Code.Aborted, message: OWN_MESSAGE },
  /** A stored node `auth` cannot be opened (its data key is missing, or it was altered); names the key id. */
  SecretUnavailableError: {
    is: isSecretUnavailable,
    code: Code.FailedPrecondition,
    message: OWN_MESSAGE,
    log: { level: 'error', msg: 'a stored secret cannot be opened' },
  },
  /** Anything else is a bug. */
  Error: { is: () => true, code: Code.Internal, message: 'internal error', log: { level: 'error', msg: 'control plane call failed' } },
} as const satisfies ConnectErrorTable;

/** `err` as the ConnectError a control-plane `method` answers with, `err` kept as its `cause`. */
export function controlPlaneConnectError(err: unknown, method: string, log: Logger): ConnectError {
  return connectErrorOf(CONTROL_PLANE_ERRORS, err, { method }, log);
}
