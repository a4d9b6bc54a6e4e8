/**
 * Building the parts of an execution record the executor writes: node entries (the proto JSON of
 * `ldbox.workflows.v1.NodeExecution`), their size bound, the run's error text and its cost.
 *
 * Size bound: the record is one KV value, and a KV value is one NATS message, so it must stay under the
 * server's `max_payload` (1 MB by default). Each node gets an equal share of what the trigger leaves;
 * an output over its share is not recorded (a WARN log entry says so, and the node id is listed in
 * `unrecordedOutputs` so that a later attempt does not reuse a value it does not have), and logs are
 * cut from the end with a WARN entry counting what was left out.
 */
import { create, type JsonObject, type JsonValue, toJson } from '@bufbuild/protobuf';
import { timestampFromDate, TimestampSchema } from '@bufbuild/protobuf/wkt';
import { type ExecutionError, type LogEntry, LogEntrySchema, LogLevel, LogLevelSchema } from '../gen/ldbox/runner/v1/runner_pb.js';
import { ExecutionStatus, ExecutionStatusSchema, NodeErrorKind, NodeErrorSchema, NodeExecutionSchema } from '../gen/ldbox/workflows/v1/workflows_pb.js';

/** Room kept in a record for everything but node outputs and logs (ids, times, error text, JSON syntax). */
export const RECORD_OVERHEAD_BYTES = 16 * 1024;
/** The smallest share a node gets, however many nodes and however large the trigger. */
export const MIN_NODE_SHARE_BYTES = 2 * 1024;

/** One cost unit is 100 ms of sandbox wall time; every node that ran costs at least one. */
export const COST_UNIT_MS = 100;

/** The cost of one node run from the runner's measured wall time. */
export function nodeCostUnits(wallTimeMs: number): number {
  return Math.max(1, Math.ceil(wallTimeMs / COST_UNIT_MS));
}

/** What one node may take of a record of at most `maxRecordBytes`, given the trigger's JSON size. */
export function nodeShareBytes(maxRecordBytes: number, triggerBytes: number, nodeCount: number): number {
  const left = maxRecordBytes - RECORD_OVERHEAD_BYTES - 2 * triggerBytes; // the trigger may be stored twice (record + escaping)
  return Math.max(MIN_NODE_SHARE_BYTES, Math.floor(left / Math.max(1, nodeCount)));
}

export interface NodeOutcome {
  id: string;
  status: 'running' | 'succeeded' | 'failed';
  startedAt: Date;
  finishedAt?: Date;
  output?: JsonValue;
  logs?: readonly LogEntry[];
  error?: { kind: 'template' | 'code' | 'runner'; message: string; codeError?: ExecutionError };
}

const STATUS = { running: ExecutionStatus.RUNNING, succeeded: ExecutionStatus.SUCCEEDED, failed: ExecutionStatus.FAILED } as const;
const STATUS_JSON = {
  running: ExecutionStatusSchema.value[ExecutionStatus.RUNNING]!.name,
  succeeded: ExecutionStatusSchema.value[ExecutionStatus.SUCCEEDED]!.name,
  failed: ExecutionStatusSchema.value[ExecutionStatus.FAILED]!.name,
} as const;
const KIND = { template: NodeErrorKind.TEMPLATE, code: NodeErrorKind.CODE, runner: NodeErrorKind.RUNNER } as const;

const jsonBytes = (v: unknown): number => Buffer.byteLength(JSON.stringify(v) ?? 'null', 'utf8');

/**
 * The node entry as stored, fitted into `shareBytes`; `outputRecorded` is false when the output was
 * left out for size.
 */
export function nodeEntry(n: NodeOutcome, shareBytes: number): { json: JsonValue; outputRecorded: boolean } {
  let logs = [...(n.logs ?? [])];
  let output = n.output;
  let outputRecorded = true;
  const errorBytes = n.error ? jsonBytes(n.error.message) + jsonBytes(n.error.codeError?.stack ?? '') + 256 : 0;
  let room = shareBytes - errorBytes - 256;
  if (output !== undefined) {
    const size = jsonBytes(output);
    if (size > room) {
      output = undefined;
      outputRecorded = false;
      logs.push(
        create(LogEntrySchema, {
          level: LogLevel.WARN,
          message: `the output (${size} bytes of JSON) is not recorded: over this node's ${shareBytes}-byte share of the execution record`,
        }),
      );
    } else {
      room -= size;
    }
  }
  if (logsBytes(logs) > room) logs = fitLogs(logs, room);
  const json = n.error === undefined ? plainNodeJson(n, logs) : undefined;
  if (json !== undefined) {
    if (output !== undefined) json.output = output;
    return { json, outputRecorded };
  }
  return { json: protoNodeJson(n, logs, output), outputRecorded };
}

/**
 * The proto JSON of a node entry without an error, written directly: what `toJson(NodeExecutionSchema, …)`
 * gives (same keys, same order, same timestamp form), without building the message and walking its
 * descriptor — two entries per execution, a measured ~5 % of the executor's CPU in bench:webhook part 2.
 * Undefined when a log entry's level is not one the schema names (the general path then writes it).
 * test/executor/execution-record.test.ts checks it against protobuf-es.
 */
function plainNodeJson(n: NodeOutcome, logs: readonly LogEntry[]): JsonObject | undefined {
  const json: JsonObject = {};
  if (n.id !== '') json.id = n.id;
  json.status = STATUS_JSON[n.status];
  if (logs.length > 0) {
    const entries: JsonObject[] = [];
    for (const l of logs) {
      const e: JsonObject = {};
      if (l.level !== LogLevel.UNSPECIFIED) {
        const name = LogLevelSchema.value[l.level]?.name;
        if (name === undefined) return undefined;
        e.level = name;
      }
      if (l.message !== '') e.message = l.message;
      entries.push(e);
    }
    json.logs = entries;
  }
  json.startedAt = timestampJson(n.startedAt);
  if (n.finishedAt) json.finishedAt = timestampJson(n.finishedAt);
  return json;
}

/** A Timestamp's proto JSON for a Date (whole milliseconds): RFC 3339 in UTC, no fraction when it is zero. */
function timestampJson(d: Date): string {
  const iso = d.toISOString();
  if (iso.length !== 24) return toJson(TimestampSchema, timestampFromDate(d)) as string; // years past 9999 or before 0: protobuf-es's checks
  return iso.endsWith('.000Z') ? `${iso.slice(0, 19)}Z` : iso;
}

function protoNodeJson(n: NodeOutcome, logs: readonly LogEntry[], output: JsonValue | undefined): JsonObject {
  const entry = create(NodeExecutionSchema, {
    id: n.id,
    status: STATUS[n.status],
    logs: [...logs],
    startedAt: timestampFromDate(n.startedAt),
    ...(n.finishedAt ? { finishedAt: timestampFromDate(n.finishedAt) } : {}),
    ...(n.error
      ? {
          error: create(NodeErrorSchema, {
            kind: KIND[n.error.kind],
            message: n.error.message,
            ...(n.error.codeError ? { codeError: n.error.codeError } : {}),
          }),
        }
      : {}),
  });
  const json = toJson(NodeExecutionSchema, entry) as JsonObject;
  // The output is stored as the JSON it is (the proto JSON of a Value is that JSON): a round trip through
  // protobuf-es's Struct would lose an own `__proto__` key.
  if (output !== undefined) Object.defineProperty(json, 'output', { value: output, enumerable: true, writable: true, configurable: true });
  return json;
}

function logsBytes(logs: readonly LogEntry[]): number {
  let n = 0;
  for (const l of logs) n += Buffer.byteLength(l.message, 'utf8') + 48;
  return n;
}

/** The first entries that fit in `room`, then a WARN entry counting the rest. */
function fitLogs(logs: readonly LogEntry[], room: number): LogEntry[] {
  const kept: LogEntry[] = [];
  let used = 200; // the marker
  for (const l of logs) {
    const size = Buffer.byteLength(l.message, 'utf8') + 48;
    if (used + size > room) break;
    kept.push(l);
    used += size;
  }
  kept.push(
    create(LogEntrySchema, {
      level: LogLevel.WARN,
      message: `${logs.length - kept.length} more log entries are not recorded: over this node's share of the execution record`,
    }),
  );
  return kept;
}

/** The run's `error` text for a failed node: `node "send" failed: TypeError: x is not a function`. */
export function runError(nodeId: string, message: string): string {
  return `node ${JSON.stringify(nodeId)} failed: ${message}`;
}

/** A stored node entry read back: what a later attempt needs to reuse a finished node. */
export interface StoredNode {
  id: string;
  succeeded: boolean;
  output: JsonValue;
}

/** Reads the fields of a stored node entry that a resumed run needs. */
export function readStoredNode(json: JsonValue): StoredNode | undefined {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return undefined;
  const id = json.id;
  if (typeof id !== 'string') return undefined;
  return { id, succeeded: json.status === 'EXECUTION_STATUS_SUCCEEDED', output: json.output === undefined ? null : json.output };
}
