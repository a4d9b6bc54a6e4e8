export { createRunnerPool, type RunnerPool, type PoolStatus, type ExecuteResult } from './runner-pool.js';
export { PoolCancelledError, PoolClosedError, PoolFullError, PoolInternalError } from './pool-errors.js';
