/**
 * The log level of every role (LDBOX_LOG_LEVEL), checked once like any setting: a word pino does not know
 * is a configuration error naming the accepted levels, not a stack from pino.
 *
 * Tests: test/config/log-config.test.ts, test/cli/config-errors.test.ts.
 */
import { type ChoiceSpec, choiceSetting, type Env, type SettingSpec } from './env-parsers.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const LOG_LEVEL = {
  kind: 'choice',
  name: 'LDBOX_LOG_LEVEL',
  fallback: 'info',
  choices: LOG_LEVELS,
  meaning: 'service log level (JSON lines on stdout)',
} as const satisfies ChoiceSpec;

/** The settings of logging, for `--help` and the unknown-variable warning. */
export const LOG_SETTINGS: readonly SettingSpec[] = [LOG_LEVEL];

/** LDBOX_LOG_LEVEL, `info` when unset; throws a ConfigError on any other word. */
export function loadLogLevel(env: Env): LogLevel {
  return choiceSetting(env, LOG_LEVEL);
}
