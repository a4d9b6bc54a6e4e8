/**
 * The executor role: runs queued webhook jobs as executions of their workflows. See executor-service.ts.
 * The composition root (src/cli, src/dev) loads the executor's config and starts the executor through
 * this file; it reads the executor's settings list (for `--help` and the unknown-variable warning) from
 * executor-config.ts, a second entry that does not load the executor (test/architecture/dependency-rule.test.ts).
 */
export { type ExecutorConfig, loadExecutorConfig } from './executor-config.js';
export { startExecutor, type Executor, type StartExecutorOptions } from './executor-service.js';
