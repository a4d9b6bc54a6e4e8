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
import { FIRST_COOLDOWN_MS, PenaltyTable, createPenaltyTableMemory, MAX_COOLDOWN_MS, penaltyKeys } from '../../runner/pool/hard-stop-penalty.js';
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
  const h = penaltyKeys('', 'while (1) x.indexOf(1)').code;
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
  t.equal(table.refusedUntil(penaltyKeys('', 'other code').code, at + 1), 0, 'other code is not affected');
  t.notSame(penaltyKeys('', '').code, [0, 0]);
});

t.test('penalties are per tenant: the same code of another tenant runs; a tenant is slowed from its second stop', async (t) => {
  const table = new PenaltyTable(createPenaltyTableMemory());
  const at = 1_000_000_000;
  const stuck = 'while (1) x.indexOf(1)';
  const a = penaltyKeys('acme', stuck);
  const b = penaltyKeys('globex', stuck);
  t.notSame(a.code, b.code, 'the same text has a key of its own in each tenant');
  table.recordCall(a, at);
  t.equal(table.refusedUntil(a.code, at + 1), at + FIRST_COOLDOWN_MS, "acme's stuck code is refused");
  t.equal(table.refusedUntil(b.code, at + 1), 0, "globex's identical code is not");
  t.equal(table.refusedUntil(a.tenant, at + 1), 0, "acme's other code still runs after one stop");
  // The same stuck loop with another comment each time: a new code key every time, one tenant.
  table.recordCall(penaltyKeys('acme', `${stuck} // 2`), at + 2);
  t.equal(table.refusedUntil(penaltyKeys('acme', 'return 1').tenant, at + 3), at + 2 + FIRST_COOLDOWN_MS, 'from its second stop every acme call waits');
  table.recordCall(penaltyKeys('acme', `${stuck} // 3`), at + FIRST_COOLDOWN_MS + 10);
  t.equal(table.refusedUntil(a.tenant, at + FIRST_COOLDOWN_MS + 11), at + FIRST_COOLDOWN_MS + 10 + 2 * FIRST_COOLDOWN_MS, 'and the pause doubles');
  t.equal(table.refusedUntil(b.tenant, at + FIRST_COOLDOWN_MS + 11), 0, 'globex is never refused for it');
});

t.test('through a runner: a tenant changing a comment each time is refused whatever it sends; another tenant runs', async (t) => {
  const runner = await startTestRunner({ LDBOX_POOL_SIZE: '1' });
  t.teardown(() => runner.close());
  const stuckAs = (tenant: string, n: number) => runner.grpc.execute({ code: `${STUCK} // try ${n}`, tenant, limits: { timeoutMs: 200 } });
  for (const n of [1, 2]) {
    const r = await stuckAs('acme', n);
    t.match(r.error?.message, /stuck in a built-in and its worker was stopped/, `stop ${n}`);
  }
  const refused = await grpcError(runner.grpc.execute({ code: 'return "innocent"', tenant: 'acme' }));
  t.equal(refused?.code, grpc.status.RESOURCE_EXHAUSTED, "acme's next call, whatever its code, is refused");
  t.match(refused?.details, /calls of this tenant recently got stuck .* refused for another \d+ s/);
  const other = await runner.grpc.execute({ code: 'return "innocent"', tenant: 'globex' });
  t.equal(toJson(ValueSchema, other.result!), 'innocent', "globex's call runs");
  const shared = await runner.grpc.execute({ code: 'return "innocent"' });
  t.equal(toJson(ValueSchema, shared.result!), 'innocent', 'and so does a call without a tenant');
  t.equal(Number((await runner.grpc.getPoolStatus()).workersReplaced), 2);
});
