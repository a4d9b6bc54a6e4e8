/**
 * The runner's settings: the one place that names them (RUNNER_SETTINGS, for `--help` and the
 * unknown-variable warning) and reads them (loadRunnerConfig). The composition root (src/cli, src/dev)
 * loads the runner's config through here, and the runner's other areas take their part of it
 * (PoolConfig, BuiltinConfig) from here too. The syntax of LDBOX_EGRESS_ALLOW (egress-allow-list.ts) is
 * a second entry, shared with the egress guard without loading the config loader
 * (test/architecture/dependency-rule.test.ts, ENTRIES).
 */
export {
  type BuiltinConfig,
  isLoopback,
  loadRunnerConfig,
  type PoolConfig,
  RUNNER_SETTINGS,
  type RunnerConfig,
  type RunnerTlsConfig,
} from './runner-config.js';
