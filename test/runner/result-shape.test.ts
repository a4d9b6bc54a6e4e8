/**
 * A result is bounded by its shape as well as its size (runner/results MAX_RESULT_DEPTH and
 * MAX_RESULT_ITEMS): a deep or many-valued result is refused with a message that says what to do, and
 * results at the limits arrive whole — nothing more.
 */
import { toJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import t from 'tap';
import { ErrorKind } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import { MAX_RESULT_DEPTH, MAX_RESULT_ITEMS, jsonShape } from '../../runner/results/index.js';
import { startTestRunner } from '../helpers/runner-harness.js';

const runner = await startTestRunner();
t.teardown(() => runner.close());

t.test('jsonShape counts depth and values, skipping strings', async (t) => {
  t.same(jsonShape('1'), { depth: 0, items: 0 });
  t.same(jsonShape('[]'), { depth: 1, items: 0 });
  t.same(jsonShape('[{},{}]'), { depth: 2, items: 2 });
  t.same(jsonShape('{"a":[1,2,3],"b":{"c":null}}'), { depth: 2, items: 6 });
  t.same(jsonShape('["[,{\\"", "]}"]'), { depth: 1, items: 2 }, 'brackets, commas and escaped quotes inside strings do not count');
});

t.test(`a result ${MAX_RESULT_DEPTH} levels deep arrives; one level more is refused`, async (t) => {
  const at = await runner.grpc.execute({ code: `let a = {k: 1}; for (let i = 1; i < ${MAX_RESULT_DEPTH}; i++) a = {k: a}; return a` });
  t.equal(at.error, undefined);
  let depth = 0;
  for (let v: any = toJson(ValueSchema, at.result!); typeof v === 'object'; v = v.k) depth++;
  t.equal(depth, MAX_RESULT_DEPTH);
  const over = await runner.grpc.execute({ code: `let a = []; for (let i = 0; i < ${MAX_RESULT_DEPTH}; i++) a = [a]; return a` });
  t.equal(over.error?.kind, ErrorKind.INVALID_RESULT);
  t.equal(
    over.error?.message,
    `the result is nested ${MAX_RESULT_DEPTH + 1} levels deep, over the limit of ${MAX_RESULT_DEPTH}: flatten it or return it as a JSON string`,
  );
});

t.test('a result of millions of empty objects is refused, and the runner answers the next call', async (t) => {
  const many = await runner.grpc.execute({
    code: 'return Array.from({ length: 2_500_000 }, () => ({}))',
    limits: { memoryBytes: 512n * 1024n * 1024n, timeoutMs: 60_000 },
  });
  t.equal(many.error?.kind, ErrorKind.INVALID_RESULT, many.error?.message ?? 'refused');
  t.equal(
    many.error?.message,
    `the result holds 2500000 values, over the limit of ${MAX_RESULT_ITEMS}: return fewer, larger values (e.g. CSV text) or write the data elsewhere`,
  );
  const next = await runner.grpc.execute({ code: 'return Math.exp(1)' });
  t.equal(toJson(ValueSchema, next.result!), Math.exp(1));
});

t.test('a result at the value limit arrives whole', async (t) => {
  // Connect's client: ~6 MB of response is over grpc-js's default 4 MiB receive limit.
  const res = await runner.connect.execute({
    code: `return Array.from({ length: ${MAX_RESULT_ITEMS / 2} }, (_, i) => [i])`,
    limits: { memoryBytes: 512n * 1024n * 1024n, timeoutMs: 60_000 },
  });
  t.equal(res.error, undefined, res.error?.message ?? 'no error');
  const list = toJson(ValueSchema, res.result!) as number[][];
  t.equal(list.length, MAX_RESULT_ITEMS / 2);
  t.same([list[0], list[list.length - 1]], [[0], [MAX_RESULT_ITEMS / 2 - 1]]);
});
