/**
 * What every control-plane subcommand (`ldbox workflows apply`, `ldbox executions ls`, …) is made of: its
 * usage, its options (`node:util` `parseArgs`), how many positionals it takes, and its `run`; the context a
 * run gets; and the usage error (exit 2) its argument checks throw.
 */
import type { ParseArgsConfig } from 'node:util';
import type { WorkflowClient } from './control-plane-client.js';
import type { ControlPlaneClientConfig } from './control-plane-config.js';

export interface CommandIo {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
}

export interface ControlPlaneContext extends CommandIo {
  client: WorkflowClient;
  config: ControlPlaneClientConfig;
  /** Resolves on Ctrl-C (SIGINT) or SIGTERM; only long-running commands (`tail`) ask for it. */
  untilSignal: () => Promise<void>;
  /** The current time (tests and `--since`). */
  now: () => Date;
}

export type ParsedValues = Record<string, string | boolean | string[] | boolean[] | undefined>;

export interface Subcommand {
  /** `usage: ldbox executions ls [--status S,…] …`, then what it does. */
  help: string;
  options: NonNullable<ParseArgsConfig['options']>;
  /** The names of its positionals (`['ID']`), all required. */
  positionals: readonly string[];
  /** Checks the arguments (throwing CommandUsageError) before any configuration is read or call made. */
  check?: (values: ParsedValues, positionals: readonly string[]) => void | Promise<void>;
  run: (values: ParsedValues, positionals: readonly string[], ctx: ControlPlaneContext) => Promise<number>;
}

/** A bad argument of a control-plane command: one line on stderr, exit 2. */
export class CommandUsageError extends Error {
  override readonly name = 'CommandUsageError';
}

/** True when `err` is a {@link CommandUsageError}. */
export function isCommandUsageError(err: unknown): err is CommandUsageError {
  return err instanceof CommandUsageError;
}
