/**
 * Calls waiting for a worker are queued per tenant and taken in turn (runner/pool/fair-queue.ts): one
 * tenant's flood of calls does not delay another tenant's call behind the whole flood. The tenant is read
 * from the encoded request on the main thread (peekTenant). Each check is an order of events, not a clock.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { create, toBinary } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import { FairQueue } from '../../runner/pool/fair-queue.js';
import { ExecuteRequestSchema } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import { peekTenant } from '../../src/protobuf/execute-stream-wire.js';
import { grpcError, startTestRunner } from '../helpers/runner-harness.js';

t.test('FairQueue: FIFO within a tenant, tenants in turn, calls taken back go first', async (t) => {
  const q = new FairQueue<{ tenant: string; n: number }>();
  for (let n = 0; n < 5; n++) q.push({ tenant: 'a', n });
  q.push({ tenant: 'b', n: 100 });
  q.push({ tenant: 'c', n: 200 });
  q.push({ tenant: 'b', n: 101 });
  t.equal(q.size, 8);
  const order: string[] = [];
  const first = q.shift()!;
  order.push(`${first.tenant}${first.n}`);
  q.returnToFront([first]);
  t.equal(q.size, 8, 'a call taken back counts again');
  while (q.size > 0) {
    const next = q.peek()!;
    t.equal(q.shift(), next, 'shift takes what peek showed');
    order.push(`${next.tenant}${next.n}`);
  }
  t.same(order, ['a0', 'b100', 'c200', 'a0', 'b101', 'a1', 'a2', 'a3', 'a4'], 'a flood waits behind one call of each other tenant');
  t.equal(q.shift(), undefined);
  q.push({ tenant: '', n: 1 });
  t.same(q.takeAll(), [{ tenant: '', n: 1 }]);
  t.equal(q.size, 0);
});

t.test('peekTenant reads the tenant of an encoded ExecuteRequest, whatever comes around it', async (t) => {
  const encoded = (init: Parameters<typeof create<typeof ExecuteRequestSchema>>[1]) => toBinary(ExecuteRequestSchema, create(ExecuteRequestSchema, init));
  t.equal(peekTenant(encoded({ code: 'return 1', tenant: 'acme.prod' })), 'acme.prod');
  t.equal(
    peekTenant(encoded({ code: 'x'.repeat(5000), input: { a: { b: [1, 2, 'z'] } }, requestId: 'r-1', limits: { timeoutMs: 5 }, tenant: 'globex' })),
    'globex',
  );
  t.equal(peekTenant(encoded({ code: 'return 1' })), '', 'absent: the shared tenant');
  t.equal(peekTenant(encoded({ code: 'return 1', tenant: 't'.repeat(129) })), '', 'too long: the worker refuses it, the queue takes it as shared');
  t.equal(peekTenant(new Uint8Array([0x0a, 0xff])), '', 'unreadable bytes: shared (the worker answers INVALID_ARGUMENT)');
});

t.test("through a runner: another tenant's call is not queued behind a flood", async (t) => {
  // One worker: a flood of 300 calls that each compute ~40 ms fills its lane and the pool's queue (one
  // HTTP/2 connection carries them all).
  const runner = await startTestRunner({ LDBOX_POOL_SIZE: '1', LDBOX_MAX_STREAMS_PER_CONNECTION: '1000' });
  t.teardown(() => runner.close());
  await runner.grpc.execute({ code: 'return 0' });
  const FLOOD = 300;
  let floodDone = 0;
  const busy = 'const until = Date.now() + 40; while (Date.now() < until) {} return 1';
  const flood = Array.from({ length: FLOOD }, () =>
    runner.grpc.execute({ code: busy, tenant: 'flooder', limits: { timeoutMs: 60_000 } }).then(() => {
      floodDone++;
    }),
  );
  // Wait until most of the flood is queued, then send the other tenant's call.
  const patience = Date.now() + 30_000;
  for (let s = await runner.grpc.getPoolStatus(); s.queued < 200 && Date.now() < patience; s = await runner.grpc.getPoolStatus()) {
    await new Promise((r) => setTimeout(r, 5));
  }
  const queuedAhead = FLOOD - floodDone;
  const other = await runner.grpc.execute({ code: 'return 2', tenant: 'quiet' });
  const floodDoneThen = floodDone;
  t.equal(Number(other.result?.kind.value), 2);
  t.ok(queuedAhead > 200, `the flood was queued when the other call came (${queuedAhead} not answered)`);
  // The lane holds up to 36 calls of the flood ahead of it, and the queue one per tenant in turn.
  t.ok(
    floodDoneThen - (FLOOD - queuedAhead) < 80,
    `the other tenant's call waited behind ${floodDoneThen - (FLOOD - queuedAhead)} of the flood's calls, not ${queuedAhead}`,
  );
  await Promise.all(flood);
  t.equal(floodDone, FLOOD, 'the flood finishes');
});

t.test("through a runner: a tenant whose calls wait cannot take the room another tenant's call needs", async (t) => {
  // Capacity 100 calls (one worker, no queue): one tenant alone may hold 90 of them. The API never answers
  // until the test ends, so the admitted calls stay parked.
  let held = 0;
  const api = http.createServer(() => {
    held++;
  });
  await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(api.address() as AddressInfo).port}/`;
  const runner = await startTestRunner({ LDBOX_POOL_SIZE: '1', LDBOX_RUNNER_MAX_INFLIGHT: '100', LDBOX_POOL_MAX_QUEUE: '0', LDBOX_EGRESS_ALLOW: '127.0.0.1' });
  t.teardown(async () => {
    api.closeAllConnections();
    await new Promise((r) => api.close(r));
    await runner.close();
  });
  const waiting = `await ld.request({ method: 'GET', url: ${JSON.stringify(url)} }); return 1`;
  const refusals: (string | undefined)[] = [];
  for (let i = 0; i < 110; i++) {
    void grpcError(runner.grpc.execute({ code: waiting, tenant: 'flooder', limits: { timeoutMs: 60_000 } })).then((err) => {
      if (err?.code === grpc.status.RESOURCE_EXHAUSTED) refusals.push(err.details);
    });
  }
  for (const until = Date.now() + 30_000; (held < 90 || refusals.length < 20) && Date.now() < until; ) await new Promise((r) => setTimeout(r, 10));
  t.equal(held, 90, 'the flooding tenant holds 90 calls, waiting on the API');
  t.equal(refusals.length, 20, 'its 20 other calls were refused (RESOURCE_EXHAUSTED)');
  t.match(refusals[0], /this tenant has 90 of the runner's 90 calls in flight, more than its share/);
  const other = await runner.grpc.execute({ code: 'return 2', tenant: 'quiet' });
  t.equal(Number(other.result?.kind.value), 2, "another tenant's call is admitted and answered");
});
