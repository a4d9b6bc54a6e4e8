/**
 * Cancellation, deadlines and pool saturation through a real runner (runner.proto: CANCELLED /
 * DEADLINE_EXCEEDED when the client gives up, RESOURCE_EXHAUSTED when the queue is full; GetPoolStatus).
 * A cancelled call must free its worker without killing it.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { toJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import { Code } from '@connectrpc/connect';
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import type { ExecuteResponse, GetPoolStatusResponse } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import { startTestRunner, type TestRunner, connectError, grpcError } from '../helpers/runner-harness.js';

const runner = await startTestRunner();
t.teardown(() => runner.close());

/** Polls GetPoolStatus until `predicate` holds (up to `ms`, room for a loaded machine); returns the last status. */
async function eventually(on: TestRunner, predicate: (s: GetPoolStatusResponse) => boolean, ms = 10_000): Promise<GetPoolStatusResponse> {
  const until = performance.now() + ms;
  let s = await on.grpc.getPoolStatus();
  while (!predicate(s) && performance.now() < until) {
    await delay(10);
    s = await on.grpc.getPoolStatus();
  }
  return s;
}

const counters = (s: GetPoolStatusResponse) => ({
  busy: s.busy,
  queued: s.queued,
  completed: Number(s.completed),
  failed: Number(s.failed),
  workersReplaced: Number(s.workersReplaced),
});

const resultOf = (res: ExecuteResponse) => (res.result === undefined ? undefined : toJson(ValueSchema, res.result));

t.test('a fresh pool', async (t) => {
  const s = await runner.grpc.getPoolStatus();
  t.same(
    {
      workers: s.workers,
      ...counters(s),
      maxQueue: s.maxQueue,
      concurrentPerWorker: s.concurrentPerWorker,
      samples: s.latency?.samples,
    },
    { workers: 2, busy: 0, queued: 0, completed: 0, failed: 0, workersReplaced: 0, maxQueue: 128, concurrentPerWorker: 5000, samples: 0 },
  );
});

t.test('client cancellation while the code awaits ld.wait', async (t) => {
  const before = counters(await runner.grpc.getPoolStatus());
  const abort = new AbortController();
  const call = grpcError(runner.grpc.execute({ code: 'await ld.wait(10000);\nreturn 1' }, { signal: abort.signal }));
  await eventually(runner, (s) => s.busy === 1);
  await delay(100);
  const started = performance.now();
  abort.abort();
  const err = await call;
  const took = performance.now() - started;
  t.equal(err?.code, grpc.status.CANCELLED, 'CANCELLED (1)');
  t.ok(took < 2000, `ended quickly (${Math.round(took)} ms)`);
  const after = await eventually(runner, (s) => s.busy === 0 && Number(s.failed) === before.failed + 1);
  t.same(
    counters(after),
    { ...before, busy: 0, failed: before.failed + 1 },
    'the worker is freed; the call counts as failed, not completed; no worker replaced',
  );
  const next = await runner.grpc.execute({ code: 'return "next"' });
  t.equal(resultOf(next), 'next', 'the next call works');
});

t.test('Connect client cancellation', async (t) => {
  const before = counters(await runner.grpc.getPoolStatus());
  const abort = new AbortController();
  const call = connectError(runner.connect.execute({ code: 'await ld.wait(10000);\nreturn 1' }, { signal: abort.signal }));
  await eventually(runner, (s) => s.busy === 1);
  abort.abort();
  const err = await call;
  t.equal(err?.code, Code.Canceled, 'Canceled');
  const after = await eventually(runner, (s) => s.busy === 0 && Number(s.failed) === before.failed + 1);
  t.same(counters(after), { ...before, busy: 0, failed: before.failed + 1 });
});

t.test('a deadline', async (t) => {
  const before = counters(await runner.grpc.getPoolStatus());
  const started = performance.now();
  const err = await grpcError(runner.grpc.execute({ code: 'await ld.wait(10000);\nreturn 1' }, { deadlineMs: 300 }));
  const took = performance.now() - started;
  t.equal(err?.code, grpc.status.DEADLINE_EXCEEDED, 'DEADLINE_EXCEEDED (4)');
  t.ok(took >= 250 && took < 2000, `ended at about the deadline (${Math.round(took)} ms)`);
  const after = await eventually(runner, (s) => s.busy === 0 && Number(s.completed) + Number(s.failed) === before.completed + before.failed + 1);
  t.equal(after.busy, 0, 'the worker is freed');
  t.equal(Number(after.completed) + Number(after.failed), before.completed + before.failed + 1, 'the call is counted once');
  t.equal(Number(after.workersReplaced), 0, 'cancellation did not kill the worker');
  t.equal(after.workers, 2, 'both workers alive');

  const connectStarted = performance.now();
  const c = await connectError(runner.connect.execute({ code: 'await ld.wait(10000);\nreturn 1' }, { timeoutMs: 300 }));
  t.equal(c?.code, Code.DeadlineExceeded, 'Connect: DeadlineExceeded');
  t.ok(performance.now() - connectStarted < 2000, 'quickly');
  // Until that call is counted too (on the main thread, a moment after its worker is free): the next test
  // reads the counters as its baseline.
  const counted = Number(after.completed) + Number(after.failed) + 1;
  const settled = await eventually(runner, (s) => s.busy === 0 && Number(s.completed) + Number(s.failed) === counted);
  t.same([settled.busy, Number(settled.workersReplaced)], [0, 0]);
});

t.test('cancelling a CPU-bound call frees the worker', async (t) => {
  const before = counters(await runner.grpc.getPoolStatus());
  const abort = new AbortController();
  const call = grpcError(runner.grpc.execute({ code: 'while (true) {}', limits: { timeoutMs: 20000 } }, { signal: abort.signal }));
  await eventually(runner, (s) => s.busy === 1);
  await delay(200);
  const cancelledAt = performance.now();
  abort.abort();
  t.equal((await call)?.code, grpc.status.CANCELLED, 'CANCELLED (1)');
  // The flag goes DONE in the worker a moment before its reply is counted on the main thread.
  const after = await eventually(runner, (s) => s.busy === 0 && Number(s.failed) === before.failed + 1);
  const freedAfter = performance.now() - cancelledAt;
  t.equal(after.busy, 0, 'busy back to 0');
  // Stopped by the cancel, not by the hard stop that would end the loop only after its 20 s limit.
  t.ok(freedAfter < 10_000, `the worker was freed long before the call's limit (${Math.round(freedAfter)} ms)`);
  t.same(counters(after), { ...before, busy: 0, failed: before.failed + 1 }, 'counted as failed; no worker replaced');

  // The same with a deadline instead of an explicit cancel.
  const deadline = await grpcError(runner.grpc.execute({ code: 'while (true) {}', limits: { timeoutMs: 20000 } }, { deadlineMs: 300 }));
  t.equal(deadline?.code, grpc.status.DEADLINE_EXCEEDED, 'a deadline on a busy loop: DEADLINE_EXCEEDED');
  const freed = await eventually(runner, (s) => s.busy === 0);
  t.same([freed.busy, Number(freed.workersReplaced)], [0, 0], 'freed without replacing the worker');

  // Every slot still works: as many concurrent calls as the pool has sandboxes.
  const results = await Promise.all(Array.from({ length: 8 }, (_, i) => runner.grpc.execute({ code: `return ${i}` })));
  t.same(results.map(resultOf), [0, 1, 2, 3, 4, 5, 6, 7], 'all 8 sandboxes take calls');
});

t.test('concurrent calls each get their own input', async (t) => {
  const before = counters(await runner.grpc.getPoolStatus());
  const calls = Array.from({ length: 16 }, (_, i) => {
    // Long enough for all 16 to be seen running together on a loaded machine.
    const req = {
      code: 'await ld.wait(1000);\nreturn {i: data.input.i, twice: data.input.i * 2, secret: data.auth.k === "key-" + data.input.i}',
      input: { i },
      auth: { k: `key-${i}` },
      requestId: `c-${i}`,
    };
    return i % 2 === 0 ? runner.grpc.execute(req) : runner.connect.execute(req);
  });
  // A call waiting for host work parks and takes no sandbox: all 16 run at once, none waits in a queue.
  const mid = await eventually(runner, (s) => s.busy === 16, 5000);
  t.same([mid.busy, mid.queued], [16, 0], 'all 16 run at once (waiting calls park), none is queued');
  const results = await Promise.all(calls);
  t.same(
    results.map((r) => [r.requestId, resultOf(r), r.error]),
    Array.from({ length: 16 }, (_, i) => [`c-${i}`, { i, twice: i * 2, secret: true }, undefined]),
  );
  const after = await eventually(runner, (s) => s.busy === 0 && s.queued === 0);
  t.same(counters(after), { ...before, completed: before.completed + 16 });
});

t.test('pool saturation', async (t) => {
  const small = await startTestRunner({ LDBOX_POOL_SIZE: '1', LDBOX_RUNNER_MAX_INFLIGHT: '1', LDBOX_POOL_MAX_QUEUE: '2' });
  t.teardown(() => small.close());
  const long = (n: number) => small.grpc.execute({ code: `await ld.wait(1500);\nreturn ${n}` });

  const first = long(1);
  await eventually(small, (s) => s.busy === 1);
  const queuedCalls = [long(2), long(3)];
  const full = await eventually(small, (s) => s.queued === 2);
  t.same(
    { workers: full.workers, busy: full.busy, queued: full.queued, maxQueue: full.maxQueue, concurrentPerWorker: full.concurrentPerWorker },
    { workers: 1, busy: 1, queued: 2, maxQueue: 2, concurrentPerWorker: 1 },
    'one call runs, two wait',
  );

  const g = await grpcError(small.grpc.execute({ code: 'return 4' }));
  t.equal(g?.code, grpc.status.RESOURCE_EXHAUSTED, 'a 4th call: RESOURCE_EXHAUSTED (8)');
  t.match(g?.details ?? '', /queue/, 'the message mentions the queue');
  const c = await connectError(small.connect.execute({ code: 'return 4' }));
  t.same([c?.code, c?.rawMessage], [Code.ResourceExhausted, "the runner's queue is full (2 calls waiting): retry later"], 'Connect');

  const results = await Promise.all([first, ...queuedCalls]);
  t.same(results.map(resultOf), [1, 2, 3], 'the accepted calls all finish');
  t.ok((results[2]?.stats?.queueTimeMs ?? 0) >= 2500, `the last one waited for two calls (${Math.round(results[2]?.stats?.queueTimeMs ?? 0)} ms)`);

  const drained = await eventually(small, (s) => s.busy === 0 && s.queued === 0);
  t.same(
    { ...counters(drained), samples: drained.latency?.samples },
    { busy: 0, queued: 0, completed: 3, failed: 2, workersReplaced: 0, samples: 3 },
    'three completed; the two refused calls count as failed',
  );
  t.ok((drained.latency?.maxMs ?? 0) >= 4000, `the slowest call waited and ran (${Math.round(drained.latency?.maxMs ?? 0)} ms)`);
  t.ok((drained.latency?.p50Ms ?? 0) <= (drained.latency?.p90Ms ?? 0) && (drained.latency?.p90Ms ?? 0) <= (drained.latency?.maxMs ?? 0), 'p50 <= p90 <= max');

  const again = await small.grpc.execute({ code: 'return 5' });
  t.equal(resultOf(again), 5, 'calls succeed again');
  const last = await small.grpc.getPoolStatus();
  t.same([Number(last.completed), last.latency?.samples], [4, 4]);
});
