/**
 * `ldbox workflows apply -f FILE` and `ldbox workflows ls` on the control plane.
 *
 * apply matches each workflow of the file by name in its workspace (the file's `workspace`, else
 * `--workspace`, else {@link DEFAULT_WORKSPACE}): CreateWorkflow when none has the name, UpdateWorkflow
 * (compare-and-set on the version it read) when one has it and its name or nodes differ, nothing when they
 * do not. A node with string `auth` values is always sent again: the stored ones read back redacted, so an
 * unchanged secret cannot be told from a changed one. UpdateWorkflow keeps the webhook and rate settings;
 * a file that names others than the stored ones gets a warning, not a silent difference.
 *
 * This module is what `--help` and the argument checks need; the runs are in workflows-run.ts, imported
 * to run (with the generated messages and the protobuf runtime).
 *
 * Tests: test/cli/control-plane-cli.test.ts.
 */
import { DEFAULT_WORKSPACE, parseLimit } from './control-plane-args.js';
import { CommandUsageError, type Subcommand } from './control-plane-command.js';

const apply: Subcommand = {
  help: `usage: ldbox workflows apply -f FILE [--workspace NAME] [--json]

Creates or updates the workflows of FILE (YAML, or JSON when it ends in .json; - reads stdin): one
workflow or a list, each written as CreateWorkflow's request (name, workspace, nodes, webhook, …).
Each is matched by name in its workspace: created when new (its webhook URL and secret are printed, the
secret only this once), updated when its name or nodes changed (the webhook URL and secret stay), else
left unchanged. A refusal of the control plane is printed as it is and the command exits 1.

  -f, --file FILE      the workflow file
  --workspace NAME     the workspace of workflows that name none (default "${DEFAULT_WORKSPACE}")
  --json               one JSON array of {action, id, name, workspace, version, webhookUrl, secret?, error?}`,
  options: {
    file: { type: 'string', short: 'f' },
    workspace: { type: 'string' },
    json: { type: 'boolean' },
  },
  positionals: [],
  async check(values) {
    if (values.file === undefined) throw new CommandUsageError('-f FILE is required: the workflow file (YAML or JSON)');
    const ws = values.workspace as string | undefined;
    // The workflow model (and the protobuf runtime it uses) is imported only when there is a name to check.
    if (ws !== undefined && !(await import('../workflows/workflow-model.js')).isWorkspaceName(ws)) {
      throw new CommandUsageError(
        `--workspace must be a workspace name (1 to 64 characters: A-Z a-z 0-9 _ - in dot-separated parts, starting with a letter or digit), got ${JSON.stringify(ws)}`,
      );
    }
  },
  run: async (values, positionals, ctx) => (await import('./workflows-run.js')).runApply(values, positionals, ctx),
};

const ls: Subcommand = {
  help: `usage: ldbox workflows ls [--workspace NAME] [--limit N] [--json]

Lists workflows (of every workspace unless --workspace is given): id, name, workspace, version, nodes,
webhook authentication, last update.

  --workspace NAME     only this workspace's workflows
  --limit N            at most N workflows (default all)
  --json               one JSON array of the workflows as the control plane returns them`,
  options: { workspace: { type: 'string' }, limit: { type: 'string' }, json: { type: 'boolean' } },
  positionals: [],
  check(values) {
    if (values.limit !== undefined) parseLimit(values.limit as string);
  },
  run: async (values, positionals, ctx) => (await import('./workflows-run.js')).runLs(values, positionals, ctx),
};

export const WORKFLOWS_SUBCOMMANDS: Readonly<Record<string, Subcommand>> = { apply, ls };
