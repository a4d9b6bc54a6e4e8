export {
  createRunnerPool,
  type RunnerPool,
  type RunnerPoolOptions,
  type PoolStatus,
  type ExecuteResult,
  type WireCall,
  type WireAnswer,
  type WireInvalid,
  type WireReply,
} from './runner-pool.js';
export { PoolCancelledError, PoolClosedError, PoolUnavailableError, PoolFullError, PoolInternalError } from './pool-errors.js';
export { CallCancel, type CancelSignal } from './call-cancel.js';
