/**
 * The executor role: runs queued webhook jobs as executions of their workflows. See executor-service.ts.
 */
export { startExecutor, type Executor, type StartExecutorOptions } from './executor-service.js';
export { RunnerClients, RunnerCallError, RunnerRejectedError, RunnerUnavailableError } from './runner-clients.js';
export { runExecution, recordExhausted, RetryableRunError, type ExecutionDeps, type RunOutcome } from './run-execution.js';
export { COST_UNIT_MS, nodeCostUnits } from './execution-record.js';
