import { ConfigError } from '../../src/config/env-parsers.js';

/** The message of the ConfigError `load(env)` throws; undefined when it throws none (any other error propagates). */
export function configErrorMessage<E>(load: (env: E) => unknown, env: E): string | undefined {
  try {
    load(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  return undefined;
}
