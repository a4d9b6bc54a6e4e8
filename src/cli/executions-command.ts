/**
 * `ldbox executions ls | show ID | replay ID | tail` on the control plane (ListExecutions, GetExecution,
 * ReplayExecution).
 *
 * tail polls ListExecutions every second, newest first, from the creation time of the oldest execution it
 * still follows (one not yet ended; at most {@link TAIL_FOLLOWED}) or else the newest it saw, and prints
 * each execution that is new or whose status changed, oldest first, until Ctrl-C (exit 0).
 *
 * Tests: test/cli/control-plane-cli.test.ts.
 */
import { toJson } from '@bufbuild/protobuf';
import { type Timestamp, timestampDate, timestampFromDate, ValueSchema } from '@bufbuild/protobuf/wkt';
import { ErrorKind, LogLevel } from '../gen/ldbox/runner/v1/runner_pb.js';
import {
  type Execution,
  ExecutionSchema,
  type ExecutionStatus,
  type ListExecutionsRequest,
  NodeErrorKind,
  type NodeExecution,
} from '../gen/ldbox/workflows/v1/workflows_pb.js';
import { isExecutionId, isWorkflowId } from '../workflows/ids.js';
import { callErrorMessage, isTransientCallError, type WorkflowClient } from './control-plane-client.js';
import { CommandUsageError, type ControlPlaneContext, type ParsedValues, type Subcommand } from './control-plane-command.js';
import { formatDuration, formatTable, formatTime, isFinal, msBetween, oneLine, STATUS_WORDS, statusWord } from './control-plane-format.js';
import { parseLimit } from './workflows-command.js';

/** How often tail asks. */
export const TAIL_INTERVAL_MS = 1000;
/** Most executions tail keeps following until they end (older ones are let go). */
export const TAIL_FOLLOWED = 200;
/** Executions per ListExecutions page (the control plane's maximum). */
const EXECUTION_PAGE = 100;

const SINCE_UNITS: Readonly<Record<string, number>> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `--since 30m|1h|2d|45s` (before now) or an RFC 3339 time; exact message otherwise. */
export function parseSince(raw: string, now: Date, flag = '--since'): Date {
  const m = /^(\d{1,9})([smhd])$/.exec(raw);
  if (m && Number(m[1]) > 0) return new Date(now.getTime() - Number(m[1]) * SINCE_UNITS[m[2]!]!);
  if (/^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$/i.test(raw) && !Number.isNaN(Date.parse(raw))) return new Date(raw);
  throw new CommandUsageError(`${flag} takes a time before now (30s, 30m, 1h, 2d) or an RFC 3339 time (2026-11-24T10:00:00Z), got ${JSON.stringify(raw)}`);
}

/** `--status failed,succeeded` (repeatable, any case) as the proto statuses; exact message otherwise. */
export function parseStatuses(raw: readonly string[]): ExecutionStatus[] {
  const out = new Set<ExecutionStatus>();
  for (const word of raw.flatMap((r) => r.split(','))) {
    const s = STATUS_WORDS[word.trim().toLowerCase()];
    if (s === undefined) {
      throw new CommandUsageError(`--status takes ${Object.keys(STATUS_WORDS).join(', ')} (comma-separated, any case), got ${JSON.stringify(word)}`);
    }
    out.add(s);
  }
  return [...out];
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

/** The ListExecutions filters of `--workflow`, `--status`, `--since`, `--until`. */
function filterOf(values: ParsedValues, now: Date): ExecutionFilter {
  const after = values.since === undefined ? undefined : parseSince(values.since as string, now);
  const before = values.until === undefined ? undefined : parseSince(values.until as string, now, '--until');
  if (after !== undefined && before !== undefined && after.getTime() >= before.getTime()) {
    throw new CommandUsageError(`--until (${before.toISOString()}) must be later than --since (${after.toISOString()})`);
  }
  return {
    workflowId: (values.workflow as string | undefined) ?? '',
    statuses: parseStatuses((values.status as string[] | undefined) ?? []),
    createdAfter: after === undefined ? undefined : timestampFromDate(after),
    createdBefore: before === undefined ? undefined : timestampFromDate(before),
  };
}

/** The filters of ListExecutions. */
type ExecutionFilter = Pick<ListExecutionsRequest, 'workflowId' | 'statuses' | 'createdAfter' | 'createdBefore'>;

const FILTER_OPTIONS = {
  workflow: { type: 'string' },
  status: { type: 'string', multiple: true },
  since: { type: 'string' },
  json: { type: 'boolean' },
} as const;

const FILTER_HELP = `  --workflow ID        only this workflow's executions (default: every workflow)
  --status S[,S…]      only these statuses: queued, running, succeeded, failed, cancelled (any case; repeatable)
  --since T            only executions created since T: 30s, 30m, 1h, 2d before now, or an RFC 3339 time`;

/** Up to `limit` executions matching `filter`, newest first, page after page. */
async function listExecutions(client: WorkflowClient, filter: ExecutionFilter, limit: number, maxPages = 1000): Promise<Execution[]> {
  const out: Execution[] = [];
  let pageToken = '';
  for (let page = 0; page < maxPages; page++) {
    const r = await client.listExecutions({ ...filter, pageSize: Math.min(EXECUTION_PAGE, limit - out.length), pageToken });
    out.push(...r.executions);
    pageToken = r.nextPageToken;
    if (pageToken === '' || out.length >= limit) break;
  }
  return out.slice(0, limit);
}

const executionJson = (e: Execution) => toJson(ExecutionSchema, e);

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
    filterOf(values, new Date());
    if (values.limit !== undefined) parseLimit(values.limit as string);
  },
  async run(values, _positionals, ctx) {
    const limit = values.limit === undefined ? 20 : parseLimit(values.limit as string);
    const executions = await listExecutions(ctx.client, filterOf(values, ctx.now()), limit);
    if (values.json) {
      ctx.stdout(`${JSON.stringify(executions.map(executionJson), null, 2)}\n`);
      return 0;
    }
    if (executions.length === 0) {
      ctx.stderr('no executions\n');
      return 0;
    }
    ctx.stdout(
      formatTable(
        ['ID', 'WORKFLOW', 'VERSION', 'STATUS', 'CREATED', 'DURATION', 'COST', 'ERROR'],
        executions.map((e) => [
          e.id,
          e.workflowId,
          e.workflowVersion === 0 ? '-' : String(e.workflowVersion),
          statusWord(e.status),
          formatTime(e.createdAt),
          formatDuration(msBetween(e.startedAt, e.finishedAt)),
          String(e.costUnits),
          oneLine(e.error),
        ]),
      ),
    );
    return 0;
  },
};

const show: Subcommand = {
  help: `usage: ldbox executions show ID [--json]

Shows one execution: status, error, workflow and version, timings, attempts, cost, the trigger (method,
headers, query, body), then each node that started: status, run time, output, logs and error.

  --json               the execution as the control plane returns it`,
  options: { json: { type: 'boolean' } },
  positionals: ['ID'],
  check: (_values, positionals) => checkExecutionIdArg(positionals),
  async run(values, positionals, ctx) {
    const e = (await ctx.client.getExecution({ id: positionals[0]! })).execution!;
    ctx.stdout(values.json ? `${JSON.stringify(executionJson(e), null, 2)}\n` : describeExecution(e));
    return 0;
  },
};

const valueJson = (v: Parameters<typeof toJson<typeof ValueSchema>>[1] | undefined) => (v === undefined ? 'null' : JSON.stringify(toJson(ValueSchema, v)));

/** The human view of `ldbox executions show`. */
export function describeExecution(e: Execution): string {
  const rows: [string, string][] = [
    ['execution', e.id],
    ['status', statusWord(e.status)],
  ];
  if (e.error !== '') rows.push(['error', e.error]);
  rows.push(['workflow', `${e.workflowId}${e.workflowVersion === 0 ? '' : ` (version ${e.workflowVersion})`}`]);
  if (e.replayOf !== '') rows.push(['replay of', e.replayOf]);
  rows.push(['created', formatTime(e.createdAt)]);
  rows.push(['started', `${formatTime(e.startedAt)}${e.startedAt ? ` (queued ${formatDuration(msBetween(e.createdAt, e.startedAt))})` : ''}`]);
  rows.push(['finished', `${formatTime(e.finishedAt)}${e.finishedAt ? ` (ran ${formatDuration(msBetween(e.startedAt, e.finishedAt))})` : ''}`]);
  rows.push(['attempts', String(e.attempts)]);
  rows.push(['cost', `${e.costUnits} unit${e.costUnits === 1n ? '' : 's'}`]);
  const t = e.trigger;
  if (t) {
    rows.push(['trigger', t.method === '' ? '(method not recorded)' : t.method]);
    rows.push(['  headers', JSON.stringify(t.headers)]);
    rows.push(['  query', JSON.stringify(t.query ?? {})]);
    rows.push(['  body', valueJson(t.body)]);
  }
  const w = Math.max(...rows.map(([k]) => k.length));
  let out = rows.map(([k, v]) => `${k.padEnd(w)}  ${v}`).join('\n');
  out += `\n\nnodes (${e.nodes.length})`;
  if (e.nodes.length === 0) out += ': none started';
  for (const n of e.nodes) out += `\n${describeNode(n)}`;
  return `${out}\n`;
}

function describeNode(n: NodeExecution): string {
  const lines = [`  ${n.id}  ${statusWord(n.status)}  ${formatDuration(msBetween(n.startedAt, n.finishedAt))}  (started ${formatTime(n.startedAt)})`];
  if (n.output !== undefined) lines.push(`    output  ${valueJson(n.output)}`);
  if (n.logs.length > 0) {
    lines.push(`    logs (${n.logs.length})`);
    for (const l of n.logs)
      lines.push(`      ${(LogLevel[l.level] ?? String(l.level)).toLowerCase().padEnd(5)}  ${l.message.replace(/\n/g, '\n             ')}`);
  }
  if (n.error) {
    const kind = (NodeErrorKind[n.error.kind] ?? String(n.error.kind)).toLowerCase();
    lines.push(`    error   ${kind}: ${n.error.message}`);
    const c = n.error.codeError;
    if (c) {
      lines.push(`            ${(ErrorKind[c.kind] ?? String(c.kind)).toLowerCase()}${c.name === '' ? '' : ` ${c.name}`}: ${c.message}`);
      if (c.stack !== '') lines.push(...c.stack.split('\n').map((s) => `            ${s}`));
    }
  }
  return lines.join('\n');
}

const replay: Subcommand = {
  help: `usage: ldbox executions replay ID [--json]

Runs execution ID's trigger again as a new execution of the workflow's current version and prints the
new execution's id (follow it with 'ldbox executions show').

  --json               the new (queued) execution as the control plane returns it`,
  options: { json: { type: 'boolean' } },
  positionals: ['ID'],
  check: (_values, positionals) => checkExecutionIdArg(positionals),
  async run(values, positionals, ctx) {
    const e = (await ctx.client.replayExecution({ id: positionals[0]! })).execution!;
    ctx.stdout(values.json ? `${JSON.stringify(executionJson(e), null, 2)}\n` : `${e.id}\n`);
    return 0;
  },
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
    filterOf(values, new Date());
  },
  run: runTail,
};

async function runTail(values: ParsedValues, _positionals: readonly string[], ctx: ControlPlaneContext): Promise<number> {
  const filter = filterOf(values, ctx.now());
  let stopped = false;
  let wake: () => void = () => {};
  void ctx.untilSignal().then(() => {
    stopped = true;
    wake();
  });
  /** The last status printed, by execution id, and the creation time of each execution not yet ended. */
  const printed = new Map<string, ExecutionStatus>();
  const open = new Map<string, Timestamp>();
  let newest: Timestamp | undefined;
  const print = (e: Execution) => {
    if (printed.get(e.id) === e.status) return;
    printed.set(e.id, e.status);
    ctx.stdout(values.json ? `${JSON.stringify(executionJson(e))}\n` : tailLine(e));
  };
  const later = (a: Timestamp | undefined, b: Timestamp | undefined) =>
    a === undefined ? b : b === undefined ? a : timestampDate(a).getTime() >= timestampDate(b).getTime() ? a : b;
  const take = (executions: Execution[]) => {
    for (const e of [...executions].reverse()) {
      print(e);
      if (isFinal(e.status)) open.delete(e.id);
      else open.set(e.id, e.createdAt!);
      newest = later(newest, e.createdAt);
    }
    // Follow at most TAIL_FOLLOWED unended executions: the oldest are let go (a backlog of queued ones).
    const byAge = [...open.entries()].sort(([a], [b]) => (a < b ? -1 : 1));
    for (const [id] of byAge.slice(0, Math.max(0, byAge.length - TAIL_FOLLOWED))) open.delete(id);
    // Forget printed executions that can no longer be listed again (older than the window).
    if (printed.size > 10 * TAIL_FOLLOWED)
      for (const id of [...printed.keys()].slice(0, printed.size - 5 * TAIL_FOLLOWED)) if (!open.has(id)) printed.delete(id);
  };
  let failures = 0;
  let first = true;
  while (!stopped) {
    try {
      if (first) {
        take(await listExecutions(ctx.client, filter, filter.createdAfter === undefined ? 10 : 1000, 10));
        first = false;
      } else {
        const oldestOpen = [...open.values()].reduce<Timestamp | undefined>(
          (a, b) => (a === undefined || timestampDate(b).getTime() < timestampDate(a).getTime() ? b : a),
          undefined,
        );
        const from = oldestOpen ?? newest ?? filter.createdAfter;
        take(await listExecutions(ctx.client, { ...filter, createdAfter: from }, 1000, 10));
      }
      if (failures > 0) ctx.stderr('ldbox executions tail: the gateway answers again\n');
      failures = 0;
    } catch (err) {
      const message = callErrorMessage(err, ctx.config.url);
      // A gateway that is away may come back (a restart): keep asking; a refused token will not change.
      if (!isTransientCallError(err)) {
        ctx.stderr(`ldbox executions tail: ${message}\n`);
        return 1;
      }
      if (failures === 0) ctx.stderr(`ldbox executions tail: ${message}; trying again every second\n`);
      failures++;
    }
    if (stopped) break;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, TAIL_INTERVAL_MS);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
  return 0;
}

/** One line of tail: `2026-11-24T10:00:03Z  ex_…  wf_…  succeeded  340 ms  cost 1  error`. */
function tailLine(e: Execution): string {
  const parts = [formatTime(e.createdAt), e.id, e.workflowId, statusWord(e.status).padEnd(9)];
  if (isFinal(e.status)) parts.push(formatDuration(msBetween(e.startedAt, e.finishedAt)), `cost ${e.costUnits}`);
  if (e.replayOf !== '') parts.push(`replay of ${e.replayOf}`);
  if (e.error !== '') parts.push(oneLine(e.error, 120));
  return `${parts.join('  ').trimEnd()}\n`;
}

export const EXECUTIONS_SUBCOMMANDS: Readonly<Record<string, Subcommand>> = { ls, show, replay, tail };
