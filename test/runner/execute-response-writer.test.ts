/**
 * The worker's direct writer of ExecuteResponse (runner/wire/execute-response.ts) against protobuf-es's
 * reflective `toBinary`: for every shape of outcome without files or a download, the two must give the
 * same bytes, and a reader must get back every field (a field number or a default rule wrong in the
 * writer shows up here).
 */
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import t from 'tap';
import { ErrorKind, ExecuteResponseSchema, LogLevel } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import type { SandboxOutcome } from '../../runner/sandbox/index.js';
import { encodeExecuteResponse, toExecuteResponse } from '../../runner/wire/execute-response.js';

const base: SandboxOutcome = { requestId: 'req-1', resultJson: '1', logs: [], wallTimeMs: 0.25, memoryUsedBytes: 262_144 };

const cases: Array<[string, SandboxOutcome, number]> = [
  ['a plain result', base, 0.5],
  ['no request id, zero stats', { ...base, requestId: '', wallTimeMs: 0, memoryUsedBytes: 0 }, 0],
  ['negative zero and large numbers', { ...base, wallTimeMs: -0, memoryUsedBytes: 2 ** 40 + 3 }, 1e9],
  [
    'logs of both levels, empty and non-ASCII messages',
    {
      ...base,
      logs: [
        { level: 'info', message: 'hello' },
        { level: 'warn', message: '' },
        { level: 'info', message: 'žluťoučký 🐴 \u0000 end' },
      ],
    },
    2,
  ],
  ...(['thrown', 'syntax', 'timeout', 'memory-limit', 'invalid-result'] as const).map((kind): [string, SandboxOutcome, number] => [
    `error ${kind}`,
    { ...base, resultJson: undefined, error: { kind, name: 'Error', message: `it failed: ${kind}`, stack: kind === 'syntax' ? '' : 'at <user>:1:1' } },
    3,
  ]),
  ['an error with every text empty', { ...base, resultJson: undefined, error: { kind: 'thrown', name: '', message: '', stack: '' } }, 0],
  ['a long log message', { ...base, logs: [{ level: 'info', message: 'x'.repeat(70_000) }] }, 0],
];

for (const [name, outcome, queueTimeMs] of cases) {
  t.test(name, async (t) => {
    const direct = encodeExecuteResponse({ ...outcome, resultJson: undefined }, queueTimeMs, 'proto', false);
    const reflective = toBinary(ExecuteResponseSchema, toExecuteResponse(outcome, queueTimeMs, false));
    t.same(Buffer.from(direct).toString('hex'), Buffer.from(reflective).toString('hex'), 'the same bytes as toBinary');

    const read = fromBinary(ExecuteResponseSchema, encodeExecuteResponse(outcome, queueTimeMs, 'proto', false));
    t.equal(read.requestId, outcome.requestId);
    t.same(
      read.logs.map((l) => [l.level, l.message]),
      outcome.logs.map((l) => [l.level === 'warn' ? LogLevel.WARN : LogLevel.INFO, l.message]),
    );
    t.equal(read.error?.kind, outcome.error && ErrorKind[outcome.error.kind.toUpperCase().replace('-', '_') as keyof typeof ErrorKind]);
    t.equal(read.error?.message, outcome.error?.message);
    t.equal(read.stats?.wallTimeMs, outcome.wallTimeMs === 0 ? 0 : outcome.wallTimeMs);
    t.equal(read.stats?.queueTimeMs, queueTimeMs);
    t.equal(read.stats?.memoryUsedBytes, BigInt(outcome.memoryUsedBytes));
    t.equal(read.result === undefined, outcome.resultJson === undefined, 'the result is there when there is one');
  });
}

t.test('an outcome with files still goes through toBinary (and reads back)', async (t) => {
  const outcome: SandboxOutcome = {
    ...base,
    resultJson: undefined,
    files: [{ fileName: 'a.txt', mimeType: 'text/plain', content: new TextEncoder().encode('hi'), isText: true }],
  };
  const read = fromBinary(ExecuteResponseSchema, encodeExecuteResponse(outcome, 1, 'proto', false));
  t.equal(read.files[0]?.fileName, 'a.txt');
  t.equal(read.stats?.queueTimeMs, 1);
});
