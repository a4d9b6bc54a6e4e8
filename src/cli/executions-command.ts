/**
 * `ldbox executions ls | show ID | replay ID | tail` on the control plane (ListExecutions, GetExecution,
 * ReplayExecution).
 *
 * This module is what `--help` and the argument checks need; the runs are in executions-run.ts, imported
 * to run (with the generated messages and the protobuf runtime).
 *
 * Tests: test/cli/control-plane-cli.test.ts.
 */
import { isExecutionId, isWorkflowId } from '../workflows/ids.js';
import { filterTimes, parseLimit, parseStatusWords } from './control-plane-args.js';
import { CommandUsageError, type ParsedValues, type Subcommand } from './control-plane-command.js';

/** Checks the filters of `ls` and `tail` (the run builds them: executions-run.ts). */
function checkFilter(values: ParsedValues, now: Date): void {
  filterTimes(values, now);
  parseStatusWords((values.status as string[] | undefined) ?? []);
}

function checkWorkflowFlag(values: ParsedValues): void {
  const id = values.workflow as string | undefined;
  if (id !== undefined && !isWorkflowId(id))
    throw new CommandUsageError(`--workflow must be a workflow id (wf_ and 20 characters of 0-9 a-z), got ${JSON.stringify(id)}`);
}

function checkExecutionIdArg(positionals: readonly string[]): void {
  const id = positionals[0]!;
  if (!isExecutionId(id)) throw new CommandUsageError(`ID must be an execution id (ex_ and 26 characters of 0-9 a-z), got ${JSON.stringify(id)}`);
}

const FILTER_OPTIONS = {
  workflow: { type: 'string' },
  status: { type: 'string', multiple: true },
  since: { type: 'string' },
  json: { type: 'boolean' },
} as const;

const FILTER_HELP = `  --workflow ID        only this workflow's executions (default: every workflow)
  --status S[,S…]      only these statuses: queued, running, succeeded, failed, cancelled (any case; repeatable)
  --since T            only executions created since T: 30s, 30m, 1h, 2d before now, or an RFC 3339 time`;

const ls: Subcommand = {
  help: `usage: ldbox executions ls [--workflow ID] [--status S,…] [--since T] [--until T] [--limit N] [--json]

Lists executions, newest first: id, workflow, version, status, creation time, run time, cost, error.

${FILTER_HELP}
  --until T            only executions created before T (same forms as --since)
  --limit N            at most N executions (default 20, at most 10000)
  --json               one JSON array of the executions as the control plane returns them`,
  options: { ...FILTER_OPTIONS, until: { type: 'string' }, limit: { type: 'string' } },
  positionals: [],
  check(values) {
    checkWorkflowFlag(values);
    checkFilter(values, new Date());
    if (values.limit !== undefined) parseLimit(values.limit as string);
  },
  run: async (values, positionals, ctx) => (await import('./executions-run.js')).runLs(values, positionals, ctx),
};

const show: Subcommand = {
  help: `usage: ldbox executions show ID [--json]

Shows one execution: status, error, workflow and version, timings, attempts, cost, the trigger (method,
headers, query, body), then each node that started: status, run time, output, logs and error.

  --json               the execution as the control plane returns it`,
  options: { json: { type: 'boolean' } },
  positionals: ['ID'],
  check: (_values, positionals) => checkExecutionIdArg(positionals),
  run: async (values, positionals, ctx) => (await import('./executions-run.js')).runShow(values, positionals, ctx),
};

const replay: Subcommand = {
  help: `usage: ldbox executions replay ID [--json]

Runs execution ID's trigger again as a new execution of the workflow's current version and prints the
new execution's id (follow it with 'ldbox executions show').

  --json               the new (queued) execution as the control plane returns it`,
  options: { json: { type: 'boolean' } },
  positionals: ['ID'],
  check: (_values, positionals) => checkExecutionIdArg(positionals),
  run: async (values, positionals, ctx) => (await import('./executions-run.js')).runReplay(values, positionals, ctx),
};

const tail: Subcommand = {
  help: `usage: ldbox executions tail [--workflow ID] [--status S,…] [--since T] [--json]

Follows executions live: prints the latest ones (those since T with --since, else the last 10), then each
new execution and each change of status as it happens (polling every second), until Ctrl-C.
One line each: creation time, id, workflow, status, run time, cost, error.

${FILTER_HELP}
  --json               one JSON object (the execution) per line`,
  options: FILTER_OPTIONS,
  positionals: [],
  check(values) {
    checkWorkflowFlag(values);
    checkFilter(values, new Date());
  },
  run: async (values, positionals, ctx) => (await import('./executions-run.js')).runTail(values, positionals, ctx),
};

export const EXECUTIONS_SUBCOMMANDS: Readonly<Record<string, Subcommand>> = { ls, show, replay, tail };
