/**
 * When a call is stuck inside one long built-in past its deadline, its worker is stopped
 * (runner/pool/runner-pool.ts): the stuck call reports TIMEOUT, calls that shared the worker and had
 * not started host work are run again elsewhere and succeed, a call that had started host work fails
 * with UNAVAILABLE (never INTERNAL), and the stuck code is refused for a while (hard-stop-penalty.ts).
 * One worker, so every call shares it; each step waits on the pool's status, not on a clock.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { toJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import { ErrorKind } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import { codeHash, FIRST_COOLDOWN_MS, PenaltyTable, createPenaltyTableMemory, MAX_COOLDOWN_MS } from '../../runner/pool/hard-stop-penalty.js';
import { grpcError, startTestRunner } from '../helpers/runner-harness.js';

const STUCK = 'return new Array(4e9).indexOf(1)';

t.test('a hard stop re-runs the innocent, fails the rest with UNAVAILABLE and pauses the stuck code', async (t) => {
  const runner = await startTestRunner({ LDBOX_POOL_SIZE: '1', LDBOX_POOL_CONCURRENCY: '8' });
  t.teardown(() => runner.close());
  await runner.grpc.execute({ code: 'return 1' });
  const busy = async (n: number) => {
    while ((await runner.grpc.getPoolStatus()).busy !== n) await delay(5);
  };

  // Started host work before the worker is lost: not run again.
  const waiting = grpcError(runner.grpc.execute({ code: 'await ld.wait(25000); return "waited"', limits: { timeoutMs: 30_000 } }));
  await busy(1);
  const stuck = runner.grpc.execute({ code: STUCK, limits: { timeoutMs: 200 } });
  await busy(2);
  // Handed to the same worker while it is stuck: they never started, so they run again elsewhere.
  const innocent = Array.from({ length: 3 }, (_, i) => runner.grpc.execute({ code: `return ${i} * 7` }));

  const stopped = await stuck;
  t.equal(stopped.error?.kind, ErrorKind.TIMEOUT);
  t.match(stopped.error?.message, /^the code ran longer than its 200 ms limit \(it was stuck in a built-in and its worker was stopped\)/);
  t.same(
    (await Promise.all(innocent)).map((r) => toJson(ValueSchema, r.result!)),
    [0, 7, 14],
    'the calls that shared the worker were run again',
  );
  const lost = await waiting;
  t.equal(lost?.code, grpc.status.UNAVAILABLE, 'the call that had started host work is UNAVAILABLE, not INTERNAL');
  t.match(lost?.details, /lost its sandbox worker .* after it had started host work/);
  t.equal(Number((await runner.grpc.getPoolStatus()).workersReplaced), 1);

  // The stuck code is refused for a while; other code runs.
  const again = await grpcError(runner.grpc.execute({ code: STUCK, limits: { timeoutMs: 200 } }));
  t.equal(again?.code, grpc.status.RESOURCE_EXHAUSTED);
  t.match(again?.details, /this code recently got stuck past its deadline .* refused for another \d+ s/);
  const other = await runner.grpc.execute({ code: 'return "still serving"' });
  t.equal(toJson(ValueSchema, other.result!), 'still serving');
});

t.test('the pause doubles with each hard stop, up to a ceiling, and is forgotten after an hour', async (t) => {
  const table = new PenaltyTable(createPenaltyTableMemory());
  const h = codeHash('while (1) x.indexOf(1)');
  const at = 1_000_000_000;
  t.equal(table.refusedUntil(h, at), 0, 'unknown code runs');
  t.equal(table.recordHardStop(h, at), FIRST_COOLDOWN_MS);
  t.equal(table.refusedUntil(h, at + 1), at + FIRST_COOLDOWN_MS);
  t.equal(table.refusedUntil(h, at + FIRST_COOLDOWN_MS + 1), 0, 'runs again after the pause');
  t.equal(table.recordHardStop(h, at + 10_000), 2 * FIRST_COOLDOWN_MS);
  t.equal(table.recordHardStop(h, at + 20_000), 4 * FIRST_COOLDOWN_MS);
  let cooldown = 0;
  for (let i = 0; i < 20; i++) cooldown = table.recordHardStop(h, at + 30_000 + i);
  t.equal(cooldown, MAX_COOLDOWN_MS, 'capped');
  t.equal(table.recordHardStop(h, at + 30_000 + 61 * 60_000), FIRST_COOLDOWN_MS, 'forgotten after an hour without a stop');
  t.equal(table.refusedUntil(codeHash('other code'), at + 1), 0, 'other code is not affected');
  t.not(codeHash(''), 0);
});
