/** The runner role's way in: the composition root (the CLI, `ldbox dev`) starts it through here. */
export { startRunnerServer, type RunnerServer, type StartRunnerOptions } from './runner-server.js';
export { applyHeapGrowth } from './heap-policy.js';
