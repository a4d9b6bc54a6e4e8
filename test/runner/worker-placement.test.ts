/**
 * A call is not placed on a worker whose thread another call holds (runner/pool/worker-activity.ts):
 * while one tenant's code keeps its worker busy, other calls run on the free worker. The busy call only
 * ends when the test cancels it (or at its 20 s limit): a call placed behind it could only finish after
 * it, which the test sees as an order of events, not on a clock.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { toJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import t from 'tap';
import { grpcError, startTestRunner } from '../helpers/runner-harness.js';

const runner = await startTestRunner({ LDBOX_POOL_SIZE: '2', LDBOX_POOL_CONCURRENCY: '4' });
t.teardown(() => runner.close());

/**
 * Warms both workers (a call that has to wait for a new WASM module yields before its code starts, and
 * calls placed in that moment cannot know what is coming, see worker-activity.ts), then starts a call
 * that keeps its worker busy until `stop` is called (or its 20 s limit).
 */
async function startBusyCall() {
  for (let i = 0; i < 3; i++) await Promise.all(Array.from({ length: 8 }, () => runner.grpc.execute({ code: 'return 1' })));
  const stop = new AbortController();
  const busy = {
    ended: false,
    stop: () => stop.abort(),
    error: grpcError(runner.grpc.execute({ code: 'for (;;) {}', limits: { timeoutMs: 20_000 } }, { signal: stop.signal })).finally(() => {
      busy.ended = true;
    }),
  };
  return busy;
}

t.test('calls go around a worker that a busy loop holds', async (t) => {
  const busy = await startBusyCall();
  while ((await runner.grpc.getPoolStatus()).busy !== 1) await delay(5);

  for (let wave = 0; wave < 5; wave++) {
    // As many at once as the free worker takes (LDBOX_POOL_CONCURRENCY).
    const replies = await Promise.all(Array.from({ length: 4 }, (_, i) => runner.grpc.execute({ code: `return ${wave * 10 + i} * 2` })));
    t.same(
      replies.map((r) => toJson(ValueSchema, r.result!)),
      [0, 1, 2, 3].map((i) => (wave * 10 + i) * 2),
      `wave ${wave}`,
    );
    t.notOk(busy.ended, `wave ${wave} finished while the busy call still held its worker`);
  }

  busy.stop();
  const err = await busy.error;
  t.equal(err?.code, 1, 'the busy call ends CANCELLED when its caller gives up');
  const after = await runner.grpc.execute({ code: 'return Math.max(1, 2)' });
  t.equal(toJson(ValueSchema, after.result!), 2, 'its worker serves again');
});

t.test('calls placed on a worker before it got stuck are taken back and run on the other', async (t) => {
  // Sent together with the busy call, so the calls are placed in one go: about half of them land on the
  // worker that the busy loop then holds (call-dispatcher.ts), where they would wait until it is cancelled.
  const busy = await startBusyCall();
  const replies = await Promise.all(Array.from({ length: 12 }, (_, i) => runner.grpc.execute({ code: `return ${i} + 100` })));
  t.same(
    replies.map((r) => toJson(ValueSchema, r.result!)),
    Array.from({ length: 12 }, (_, i) => i + 100),
    'every call answered',
  );
  t.notOk(busy.ended, 'all of them while the busy call still held its worker');
  busy.stop();
  t.equal((await busy.error)?.code, 1, 'the busy call ends CANCELLED');
});
