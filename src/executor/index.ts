/**
 * The executor role: runs queued webhook jobs as executions of their workflows. See executor-service.ts.
 * The composition root (src/cli, src/dev) starts the executor through this file only
 * (test/architecture/dependency-rule.test.ts).
 */
export { startExecutor, type Executor, type StartExecutorOptions } from './executor-service.js';
