/** Failures of the pool itself (never of user code), each mapped to one gRPC code at the edge. */

/** The queue is at its bound: the caller should back off (RESOURCE_EXHAUSTED). */
export class PoolFullError extends Error {
  override readonly name = 'PoolFullError';
}

/** The caller cancelled or its deadline passed before the call finished. */
export class PoolCancelledError extends Error {
  override readonly name = 'PoolCancelledError';
}

/** A worker died, or the sandbox machinery failed (INTERNAL). The message is for logs only. */
export class PoolInternalError extends Error {
  override readonly name = 'PoolInternalError';
}

/** The pool is closing and takes no new calls (UNAVAILABLE). */
export class PoolClosedError extends Error {
  override readonly name = 'PoolClosedError';
}

/**
 * The call lost its worker (stopped because another call on it was stuck, or crashed) and could not be
 * run again safely (UNAVAILABLE: the caller may retry).
 */
export class PoolUnavailableError extends Error {
  override readonly name = 'PoolUnavailableError';
}
