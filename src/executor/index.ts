/**
 * The executor role: runs queued webhook jobs as executions of their workflows. See executor-service.ts.
 * The composition root (src/cli, src/dev) loads the executor's config (executor-config.ts: its settings,
 * for `--help` and the unknown-variable warning, and their loader) and starts the executor through this
 * file only (test/architecture/dependency-rule.test.ts).
 */
export { EXECUTOR_SETTINGS, type ExecutorConfig, loadExecutorConfig } from './executor-config.js';
export { startExecutor, type Executor, type StartExecutorOptions } from './executor-service.js';
