/**
 * The one error type of workflow request checks. The gateway answers it with INVALID_ARGUMENT and its
 * message as is; `field` names the offending field as the message does (`nodes[1].limits.timeoutMs`).
 */
export class WorkflowValidationError extends Error {
  override readonly name = 'WorkflowValidationError';
  /** Stable code for callers and tests. */
  readonly code = 'INVALID_ARGUMENT';

  constructor(
    /** The field the message is about, as a path from the request's root; empty for the request as a whole. */
    readonly field: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** True when `err` is a {@link WorkflowValidationError}. */
export function isWorkflowValidationError(err: unknown): err is WorkflowValidationError {
  return err instanceof WorkflowValidationError;
}
