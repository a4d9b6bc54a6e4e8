/**
 * A node entry as the executor stores it (src/executor/execution-record.ts `nodeEntry`) is the proto JSON
 * of `ldbox.workflows.v1.NodeExecution`: entries without an error are written directly, and must be what
 * protobuf-es's `toJson` gives — byte for byte once stringified (same keys, same order, same timestamps).
 * protobuf-es is the oracle here, applied to the same outcome.
 */
import { create, type JsonObject, type JsonValue, toJson } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import t from 'tap';
import { type LogEntry, LogEntrySchema, LogLevel } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import { ExecutionStatus, NodeExecutionSchema } from '../../src/gen/ldbox/workflows/v1/workflows_pb.js';
import { type NodeOutcome, nodeEntry, readStoredNode } from '../../src/executor/execution-record.js';

const STATUS = { running: ExecutionStatus.RUNNING, succeeded: ExecutionStatus.SUCCEEDED, failed: ExecutionStatus.FAILED } as const;

/** protobuf-es's proto JSON of the outcome (no error, logs as given), the output appended as nodeEntry stores it. */
function oracle(n: NodeOutcome, logs: readonly LogEntry[], output: JsonValue | undefined): string {
  const json = toJson(
    NodeExecutionSchema,
    create(NodeExecutionSchema, {
      id: n.id,
      status: STATUS[n.status],
      logs: [...logs],
      startedAt: timestampFromDate(n.startedAt),
      ...(n.finishedAt ? { finishedAt: timestampFromDate(n.finishedAt) } : {}),
    }),
  ) as JsonObject;
  if (output !== undefined) json.output = output;
  return JSON.stringify(json);
}

const log = (level: LogLevel, message: string) => create(LogEntrySchema, { level, message });
const BIG = 1 << 20;

t.test('entries without an error are protobuf-es proto JSON, byte for byte', async (t) => {
  const at = new Date('2026-11-25T04:33:52.123Z');
  const cases: Array<[string, NodeOutcome]> = [
    ['running, no logs', { id: 'a', status: 'running', startedAt: at }],
    [
      'succeeded with an output',
      { id: 'send_1', status: 'succeeded', startedAt: at, finishedAt: new Date(at.getTime() + 7), output: { ok: true, n: [1, 'x'] } },
    ],
    ['a null output', { id: 'a', status: 'succeeded', startedAt: at, finishedAt: at, output: null }],
    [
      'whole seconds: no fraction',
      { id: 'a', status: 'succeeded', startedAt: new Date('2026-11-25T04:33:52.000Z'), finishedAt: new Date('2026-01-01T00:00:00Z'), output: 1 },
    ],
    ['an empty id is omitted', { id: '', status: 'running', startedAt: at }],
    ['the epoch and a distant year', { id: 'a', status: 'succeeded', startedAt: new Date(0), finishedAt: new Date('9999-12-31T23:59:59.999Z') }],
    ['failed without an error object', { id: 'a', status: 'failed', startedAt: at, finishedAt: at }],
    [
      'logs of every level, empty and multi-byte messages',
      {
        id: 'a',
        status: 'succeeded',
        startedAt: at,
        finishedAt: at,
        output: 'done',
        logs: [
          log(LogLevel.INFO, 'hello'),
          log(LogLevel.WARN, 'héllo ✓ "quoted" \\ \n'),
          log(LogLevel.WARN, ''),
          log(LogLevel.UNSPECIFIED, 'no level'),
          log(LogLevel.INFO, '{"__proto__": 1}'),
        ],
      },
    ],
  ];
  for (const [name, n] of cases) {
    const got = nodeEntry(n, BIG);
    t.equal(got.outputRecorded, true, `${name}: output recorded`);
    t.equal(JSON.stringify(got.json), oracle(n, n.logs ?? [], n.output), name);
  }
});

t.test('an output over the share: left out, with the WARN entry, as protobuf-es writes it', async (t) => {
  const at = new Date('2026-11-25T04:33:52.5Z');
  const n: NodeOutcome = { id: 'big', status: 'succeeded', startedAt: at, finishedAt: at, output: { s: 'x'.repeat(5000) }, logs: [log(LogLevel.INFO, 'kept')] };
  const got = nodeEntry(n, 2048);
  t.equal(got.outputRecorded, false);
  const warn = log(LogLevel.WARN, "the output (5008 bytes of JSON) is not recorded: over this node's 2048-byte share of the execution record");
  t.equal(JSON.stringify(got.json), oracle(n, [...n.logs!, warn], undefined));
  t.same(readStoredNode(got.json), { id: 'big', succeeded: true, output: null });
});

t.test('an own __proto__ key of the output is kept as data', async (t) => {
  const output = JSON.parse('{"__proto__": {"polluted": true}, "a": 1}') as JsonValue;
  const got = nodeEntry({ id: 'a', status: 'succeeded', startedAt: new Date(1), finishedAt: new Date(2), output }, BIG);
  const stored = JSON.parse(JSON.stringify(got.json)) as JsonObject;
  t.same(Object.keys(stored.output as JsonObject), ['__proto__', 'a']);
  t.equal(({} as { polluted?: boolean }).polluted, undefined, 'nothing polluted');
  t.same(readStoredNode(stored)?.output, output);
});

t.test('a log level the schema does not name: written by protobuf-es (as its number)', async (t) => {
  const n: NodeOutcome = { id: 'a', status: 'succeeded', startedAt: new Date(1000), finishedAt: new Date(1001), logs: [log(42 as LogLevel, 'odd')] };
  t.equal(JSON.stringify(nodeEntry(n, BIG).json), oracle(n, n.logs!, undefined));
  t.same((nodeEntry(n, BIG).json as { logs: JsonValue[] }).logs, [{ level: 42, message: 'odd' }]);
});

t.test('entries with an error still go through protobuf-es', async (t) => {
  const at = new Date('2026-11-25T04:33:52.123Z');
  const got = nodeEntry({ id: 'a', status: 'failed', startedAt: at, finishedAt: at, error: { kind: 'template', message: 'input.x: no such path' } }, BIG);
  t.same(got.json, {
    id: 'a',
    status: 'EXECUTION_STATUS_FAILED',
    error: { kind: 'NODE_ERROR_KIND_TEMPLATE', message: 'input.x: no such path' },
    startedAt: '2026-11-25T04:33:52.123Z',
    finishedAt: '2026-11-25T04:33:52.123Z',
  });
});
