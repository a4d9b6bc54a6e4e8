/**
 * The runs of `ldbox executions ls | show | replay | tail` (their usage and argument checks are in
 * executions-command.ts): imported when one runs, with the generated messages and the protobuf runtime.
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
import { filterTimes, parseLimit, parseStatusWords } from './control-plane-args.js';
import { callErrorMessage, isTransientCallError, type WorkflowClient } from './control-plane-client.js';
import type { ControlPlaneContext, ParsedValues } from './control-plane-command.js';
import { formatDuration, oneLine, printListing } from './control-plane-format.js';
import { formatTime, isFinal, msBetween, STATUS_WORDS, statusWord } from './control-plane-values.js';

/** How often tail asks. */
export const TAIL_INTERVAL_MS = 1000;
/** Most executions tail keeps following until they end (older ones are let go). */
export const TAIL_FOLLOWED = 200;
/** Executions per ListExecutions page (the control plane's maximum). */
const EXECUTION_PAGE = 100;

/** The ListExecutions filters of `--workflow`, `--status`, `--since`, `--until`. */
function filterOf(values: ParsedValues, now: Date): ExecutionFilter {
  const { after, before } = filterTimes(values, now);
  return {
    workflowId: (values.workflow as string | undefined) ?? '',
    statuses: parseStatusWords((values.status as string[] | undefined) ?? []).map((w) => STATUS_WORDS[w]!),
    createdAfter: after === undefined ? undefined : timestampFromDate(after),
    createdBefore: before === undefined ? undefined : timestampFromDate(before),
  };
}

/** The filters of ListExecutions. */
type ExecutionFilter = Pick<ListExecutionsRequest, 'workflowId' | 'statuses' | 'createdAfter' | 'createdBefore'>;

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

/** `ldbox executions ls`. */
export async function runLs(values: ParsedValues, _positionals: readonly string[], ctx: ControlPlaneContext): Promise<number> {
  const limit = values.limit === undefined ? 20 : parseLimit(values.limit as string);
  const executions = await listExecutions(ctx.client, filterOf(values, ctx.now()), limit);
  return printListing(ctx, executions, {
    json: values.json === true,
    toJson: executionJson,
    none: 'executions',
    header: ['ID', 'WORKFLOW', 'VERSION', 'STATUS', 'CREATED', 'DURATION', 'COST', 'ERROR'],
    row: (e) => [
      e.id,
      e.workflowId,
      e.workflowVersion === 0 ? '-' : String(e.workflowVersion),
      statusWord(e.status),
      formatTime(e.createdAt),
      formatDuration(msBetween(e.startedAt, e.finishedAt)),
      String(e.costUnits),
      oneLine(e.error),
    ],
  });
}

/** `ldbox executions show`. */
export async function runShow(values: ParsedValues, positionals: readonly string[], ctx: ControlPlaneContext): Promise<number> {
  const e = (await ctx.client.getExecution({ id: positionals[0]! })).execution!;
  ctx.stdout(values.json ? `${JSON.stringify(executionJson(e), null, 2)}\n` : describeExecution(e));
  return 0;
}

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

/** `ldbox executions replay`. */
export async function runReplay(values: ParsedValues, positionals: readonly string[], ctx: ControlPlaneContext): Promise<number> {
  const e = (await ctx.client.replayExecution({ id: positionals[0]! })).execution!;
  ctx.stdout(values.json ? `${JSON.stringify(executionJson(e), null, 2)}\n` : `${e.id}\n`);
  return 0;
}

/** `ldbox executions tail`. */
export async function runTail(values: ParsedValues, _positionals: readonly string[], ctx: ControlPlaneContext): Promise<number> {
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
