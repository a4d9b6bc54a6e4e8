/**
 * The runs of `ldbox workflows apply` and `ldbox workflows ls` (their usage and argument checks are in
 * workflows-command.ts): imported when one runs, with the generated messages and the protobuf runtime.
 *
 * Tests: test/cli/control-plane-cli.test.ts.
 */
import { type JsonValue, toJson } from '@bufbuild/protobuf';
import {
  AuthMethod,
  type CreateWorkflowRequest,
  type Node,
  NodeSchema,
  OverRate,
  SignaturePreset,
  type Workflow,
  WorkflowSchema,
} from '../gen/ldbox/workflows/v1/workflows_pb.js';
import { DEFAULT_WORKSPACE, parseLimit } from './control-plane-args.js';
import { callErrorMessage, isFatalCallError, type WorkflowClient } from './control-plane-client.js';
import { CommandUsageError, type ControlPlaneContext, type ParsedValues } from './control-plane-command.js';
import { printListing } from './control-plane-format.js';
import { formatTime } from './control-plane-values.js';
import { readWorkflowFile, WorkflowFileError } from './workflow-file.js';
import { authMethodFromProto } from '../workflows/workflow-model.js';

/** Workflows read per ListWorkflows call (the control plane's maximum). */
const WORKFLOW_PAGE = 500;

interface ApplyResult {
  action: 'created' | 'updated' | 'unchanged' | 'failed';
  name: string;
  workspace: string;
  id?: string;
  version?: number;
  webhookUrl?: string;
  secret?: string;
  error?: string;
}

export async function runApply(values: ParsedValues, _positionals: readonly string[], ctx: ControlPlaneContext): Promise<number> {
  let items: CreateWorkflowRequest[];
  try {
    items = readWorkflowFile(values.file as string);
  } catch (err) {
    if (err instanceof WorkflowFileError) throw new CommandUsageError(err.message);
    throw err;
  }
  const flagWorkspace = values.workspace as string | undefined;
  const seen = new Set<string>();
  for (const item of items) {
    if (item.workspace === '') item.workspace = flagWorkspace ?? DEFAULT_WORKSPACE;
    else if (flagWorkspace !== undefined && item.workspace !== flagWorkspace) {
      throw new CommandUsageError(`workflow ${JSON.stringify(item.name)} is in workspace "${item.workspace}" but --workspace is "${flagWorkspace}"`);
    }
    const key = JSON.stringify([item.workspace, item.name]);
    if (seen.has(key)) throw new CommandUsageError(`workflow ${JSON.stringify(item.name)} is in the file twice (workspace "${item.workspace}")`);
    seen.add(key);
  }

  const results: ApplyResult[] = [];
  const byWorkspace = new Map<string, Workflow[]>();
  for (const item of items) {
    const result: ApplyResult = { action: 'failed', name: item.name, workspace: item.workspace };
    results.push(result);
    try {
      let existing = byWorkspace.get(item.workspace);
      if (existing === undefined) {
        existing = await listWorkflows(ctx.client, item.workspace);
        byWorkspace.set(item.workspace, existing);
      }
      await applyOne(item, existing, result, ctx, values.json === true);
    } catch (err) {
      result.error = callErrorMessage(err, ctx.config.url);
      if (!values.json) ctx.stderr(`ldbox workflows apply: ${JSON.stringify(item.name)}: ${result.error}\n`);
      if (isFatalCallError(err)) break;
    }
  }
  if (values.json) ctx.stdout(`${JSON.stringify(results, null, 2)}\n`);
  return results.length === items.length && results.every((r) => r.action !== 'failed') ? 0 : 1;
}

async function applyOne(item: CreateWorkflowRequest, existing: Workflow[], result: ApplyResult, ctx: ControlPlaneContext, json: boolean): Promise<void> {
  const show = (extra = '') =>
    `${result.action.padEnd(9)}  ${result.id}  version ${result.version}  ${JSON.stringify(item.name)} (workspace ${item.workspace})${extra}\n`;
  const matches = existing.filter((w) => w.name === item.name);
  if (matches.length > 1) {
    throw new Error(
      `${matches.length} workflows are named ${JSON.stringify(item.name)} in workspace ${item.workspace} (${matches.map((w) => w.id).join(', ')}): rename or delete all but one`,
    );
  }
  const current = matches[0];
  if (current === undefined) {
    const created = (await ctx.client.createWorkflow(item)).workflow!;
    existing.push(created);
    Object.assign(result, { action: 'created', id: created.id, version: created.version, webhookUrl: created.webhook?.url ?? '' });
    if (created.webhook?.secret) result.secret = created.webhook.secret;
    if (!json) {
      ctx.stdout(show());
      ctx.stdout(`           webhook ${result.webhookUrl}\n`);
      if (result.secret) ctx.stdout(`           secret  ${result.secret}   (shown this once: keep it now)\n`);
      for (const w of created.webhook?.warnings ?? []) ctx.stderr(`warning: ${JSON.stringify(item.name)}: ${w}\n`);
    }
    return;
  }
  if (!json) for (const w of keptSettingsWarnings(item, current)) ctx.stderr(`warning: ${JSON.stringify(item.name)}: ${w}\n`);
  if (sameDefinition(item, current)) {
    Object.assign(result, { action: 'unchanged', id: current.id, version: current.version, webhookUrl: current.webhook?.url ?? '' });
    if (!json) ctx.stdout(show());
    return;
  }
  const updated = (await ctx.client.updateWorkflow({ workflow: { id: current.id, name: item.name, nodes: item.nodes, version: current.version } })).workflow!;
  Object.assign(result, { action: 'updated', id: updated.id, version: updated.version, webhookUrl: updated.webhook?.url ?? '' });
  if (!json) ctx.stdout(show(`  (was version ${current.version})`));
}

/** Every workflow of `workspace`, page after page. */
async function listWorkflows(client: WorkflowClient, workspace: string | undefined, limit = Number.POSITIVE_INFINITY): Promise<Workflow[]> {
  const out: Workflow[] = [];
  let pageToken = '';
  do {
    const page = await client.listWorkflows({ workspace: workspace ?? '', pageSize: WORKFLOW_PAGE, pageToken });
    out.push(...page.workflows);
    pageToken = page.nextPageToken;
  } while (pageToken !== '' && out.length < limit);
  return out.slice(0, limit);
}

/** True when the stored workflow has the file's name and nodes (as far as they can be compared, see the file comment). */
function sameDefinition(item: CreateWorkflowRequest, stored: Workflow): boolean {
  if (stored.unreadable !== '' || item.name !== stored.name || item.nodes.length !== stored.nodes.length) return false;
  return item.nodes.every((n, i) => !hasStrings(n.auth ?? {}) && canonical(n) === canonical(stored.nodes[i]!));
}

/** A node as comparable JSON: unset input and auth as `{}`, unset limits as 0, keys sorted. */
function canonical(n: Node): string {
  const json = toJson(NodeSchema, n) as Record<string, JsonValue>;
  const limits = (json.limits ?? {}) as Record<string, JsonValue>;
  return sortedJson({
    id: n.id,
    code: n.code,
    input: json.input ?? {},
    auth: json.auth ?? {},
    limits: { timeoutMs: Number(limits.timeoutMs ?? 0), memoryBytes: String(limits.memoryBytes ?? '0') },
  });
}

function sortedJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(sortedJson).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${sortedJson(x)}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

function hasStrings(v: unknown): boolean {
  if (typeof v === 'string') return true;
  if (Array.isArray(v)) return v.some(hasStrings);
  if (v !== null && typeof v === 'object') return Object.values(v).some(hasStrings);
  return false;
}

/** What the file sets differently from the stored workflow that UpdateWorkflow keeps (webhook and rate settings). */
function keptSettingsWarnings(item: CreateWorkflowRequest, stored: Workflow): string[] {
  const out: string[] = [];
  const method = item.webhook?.authMethod ?? AuthMethod.UNSPECIFIED;
  if (method !== AuthMethod.UNSPECIFIED && method !== stored.webhook?.authMethod) {
    out.push(
      `webhook.authMethod ${AuthMethod[method]} is not applied: the webhook keeps ${authWord(stored)} (change it with SetWebhookAuthMethod, so that senders are not cut off)`,
    );
  }
  if (item.rateLimitPerSecond !== 0 && item.rateLimitPerSecond !== stored.rateLimitPerSecond) {
    out.push(`rateLimitPerSecond ${item.rateLimitPerSecond} is not applied: UpdateWorkflow keeps ${stored.rateLimitPerSecond}`);
  }
  if (item.overRate !== OverRate.UNSPECIFIED && item.overRate !== stored.overRate) {
    out.push(`overRate ${OverRate[item.overRate]} is not applied: UpdateWorkflow keeps the stored one`);
  }
  return out;
}

/** `header`, `query`, `none`, `signature/github`, `legacy` (also for a method this CLI does not know). */
function authWord(w: Workflow): string {
  let method: string;
  try {
    method = authMethodFromProto(w.webhook?.authMethod ?? AuthMethod.UNSPECIFIED);
  } catch {
    return 'legacy';
  }
  if (method !== 'signature') return method;
  return `signature/${(SignaturePreset[w.webhook!.signaturePreset] ?? '?').toLowerCase().replace(/_/g, '-')}`;
}

/** `ldbox workflows ls`. */
export async function runLs(values: ParsedValues, _positionals: readonly string[], ctx: ControlPlaneContext): Promise<number> {
  const limit = values.limit === undefined ? Number.POSITIVE_INFINITY : parseLimit(values.limit as string);
  const workflows = await listWorkflows(ctx.client, values.workspace as string | undefined, limit);
  return printListing(ctx, workflows, {
    json: values.json === true,
    toJson: (w) => toJson(WorkflowSchema, w),
    none: 'workflows',
    header: ['ID', 'NAME', 'WORKSPACE', 'VERSION', 'NODES', 'AUTH', 'UPDATED'],
    row: (w) => [
      w.id,
      w.name,
      w.workspace,
      String(w.version),
      String(w.nodes.length),
      w.unreadable === '' ? authWord(w) : 'unreadable',
      formatTime(w.updatedAt),
    ],
  });
}
