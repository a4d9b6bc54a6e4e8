/**
 * `ldbox workflows <apply|ls>` and `ldbox executions <ls|show|replay|tail>`: commands on a running gateway's
 * control plane, configured by LDBOX_URL and LDBOX_ADMIN_TOKEN (control-plane-config.ts). Each subcommand
 * has its --help. Exit codes: 0 ok; 1 the call failed (the gateway's refusal as it wrote it, or the gateway
 * could not be reached: one line, no stack); 2 bad usage or a configuration error.
 *
 * Tests: test/cli/control-plane-cli.test.ts.
 */
import { parseArgs } from 'node:util';
import { ConfigError, type Env } from '../config/env-parsers.js';
import { callErrorMessage, createWorkflowClient } from './control-plane-client.js';
import { type CommandIo, isCommandUsageError, type Subcommand } from './control-plane-command.js';
import { CONTROL_PLANE_CLIENT_SETTINGS, loadControlPlaneClientConfig } from './control-plane-config.js';
import { formatTable } from './control-plane-format.js';
import { EXECUTIONS_SUBCOMMANDS } from './executions-command.js';
import { isParseArgsError, usageMessage } from './usage-message.js';
import { WORKFLOWS_SUBCOMMANDS } from './workflows-command.js';

export type ControlPlaneGroup = 'workflows' | 'executions';

const GROUPS: Readonly<Record<ControlPlaneGroup, { about: string; subcommands: Readonly<Record<string, Subcommand>> }>> = {
  workflows: {
    about: `usage: ldbox workflows <command> [--help]

Workflows on a running gateway's control plane.

  apply -f FILE       create or update the workflows of a YAML or JSON file, matched by name
  ls                  list workflows`,
    subcommands: WORKFLOWS_SUBCOMMANDS,
  },
  executions: {
    about: `usage: ldbox executions <command> [--help]

Executions on a running gateway's control plane.

  ls                  list executions, filtered by workflow, status and creation time
  show ID             one execution: trigger, nodes, outputs, logs, errors, timings, cost
  replay ID           run an execution's trigger again; prints the new execution's id
  tail                follow new executions and status changes live (Ctrl-C stops)`,
    subcommands: EXECUTIONS_SUBCOMMANDS,
  },
};

/** The settings part of every control-plane --help. */
function settingsHelp(): string {
  return `\nSettings (environment):\n${formatTable(
    ['name', 'default', 'meaning'],
    CONTROL_PLANE_CLIENT_SETTINGS.map((s) => [s.name, s.shown, s.meaning]),
  )
    .split('\n')
    .map((l) => (l === '' ? l : `  ${l}`))
    .join('\n')}\nExit codes: 0 ok, 1 the call failed (the gateway refused it or cannot be reached), 2 bad usage or configuration.\n`;
}

/** `ldbox <group> --help`. */
export function controlPlaneGroupHelp(group: ControlPlaneGroup): string {
  return `${GROUPS[group].about}\n\n'ldbox ${group} <command> --help' shows a command's options.\n${settingsHelp()}`;
}

export interface ControlPlaneRunOptions {
  /** Resolves on Ctrl-C (SIGINT) or SIGTERM; asked for only by `tail`. */
  untilSignal: () => Promise<void>;
  now?: () => Date;
}

/** Runs `ldbox <group> <args…>`; returns the exit code. */
export async function runControlPlaneCommand(
  group: ControlPlaneGroup,
  args: readonly string[],
  env: Env,
  io: CommandIo,
  options: ControlPlaneRunOptions,
): Promise<number> {
  const [name, ...rest] = args;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    (name === undefined ? io.stderr : io.stdout)(controlPlaneGroupHelp(group));
    return name === undefined ? 2 : 0;
  }
  const sub = Object.hasOwn(GROUPS[group].subcommands, name) ? GROUPS[group].subcommands[name] : undefined;
  if (sub === undefined) {
    io.stderr(`unknown command "${group} ${name}"\nsee 'ldbox ${group} --help'\n`);
    return 2;
  }
  const command = `ldbox ${group} ${name}`;
  const usage = (message: string) => {
    io.stderr(`${message}\nsee '${command} --help'\n`);
    return 2;
  };
  let values;
  let positionals;
  try {
    ({ values, positionals } = parseArgs({
      args: [...rest],
      options: { help: { type: 'boolean', short: 'h' }, ...sub.options },
      strict: true,
      allowPositionals: true,
    }));
  } catch (err) {
    if (isParseArgsError(err)) return usage(usageMessage(err));
    throw err;
  }
  if (values.help) {
    io.stdout(`${sub.help}\n${settingsHelp()}`);
    return 0;
  }
  if (positionals.length < sub.positionals.length) return usage(`${sub.positionals[positionals.length]} is required`);
  if (positionals.length > sub.positionals.length) return usage(`unexpected argument ${JSON.stringify(positionals[sub.positionals.length])}`);
  let config;
  try {
    await sub.check?.(values, positionals);
    config = loadControlPlaneClientConfig(env);
  } catch (err) {
    if (isCommandUsageError(err)) return usage(err.message);
    if (err instanceof ConfigError) {
      io.stderr(`configuration error: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  const ctx = { ...io, client: await createWorkflowClient(config), config, untilSignal: options.untilSignal, now: options.now ?? (() => new Date()) };
  try {
    return await sub.run(values, positionals, ctx);
  } catch (err) {
    if (isCommandUsageError(err)) return usage(err.message);
    io.stderr(`${command}: ${callErrorMessage(err, config.url)}\n`);
    return 1;
  }
}
