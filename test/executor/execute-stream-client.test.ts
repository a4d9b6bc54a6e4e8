/**
 * The executor's ExecuteStream client (src/executor/execute-stream-client.ts) and its use by RunnerClients,
 * against real runners (`ldbox runner` processes): many calls on one stream, a local deadline and an abort
 * that also stop the call in the runner, a runner killed under calls, a connection that idles out, a
 * runner that drains, and a runner that does not serve ExecuteStream (an older version: connect-node's own
 * UNIMPLEMENTED), whose calls go as unary Execute.
 */
import http2 from 'node:http2';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import { ExecuteRequestSchema, ExecuteResponseSchema, RunnerService } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import { ExecuteStreamClient } from '../../src/executor/execute-stream-client.js';
import { GrpcUnaryClient } from '../../src/executor/grpc-unary-client.js';
import { RunnerClients } from '../../src/executor/runner-clients.js';
import { startTestRunner } from '../helpers/runner-harness.js';

const TOKEN = 'stream-client-test-token-0123456789';
const auth = { authorization: `Bearer ${TOKEN}` };

function connection(url: string, idleTimeoutMs = 60_000): GrpcUnaryClient {
  return new GrpcUnaryClient(url, { headers: auth, readMaxBytes: 1 << 20, pingIntervalMs: 10_000, idleTimeoutMs });
}

const encoded = (code: string, requestId: string, timeoutMs = 0): Uint8Array =>
  toBinary(ExecuteRequestSchema, create(ExecuteRequestSchema, { code, requestId, limits: { timeoutMs } }));

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

/** The rejection of `p` as a ConnectError (fails the test if `p` resolves). */
async function rejection(t: Test, p: Promise<unknown>): Promise<ConnectError> {
  try {
    await p;
  } catch (err) {
    t.type(err, ConnectError);
    return err as ConnectError;
  }
  t.fail('expected a rejection');
  return new ConnectError('resolved', Code.Unknown);
}

// One worker that runs one call at a time: a call left running in it would hold up every later call.
// The pool queues at most 64 calls: the tests below stay under it.
const runner = await startTestRunner({ LDBOX_RUNNER_TOKEN: TOKEN, LDBOX_POOL_SIZE: '1', LDBOX_POOL_CONCURRENCY: '1' });
t.teardown(() => runner.close());

t.test('many calls at once on one stream: each gets its own answer', async (t) => {
  const conn = connection(runner.url);
  const client = new ExecuteStreamClient(conn, { headers: auth, readMaxBytes: 1 << 20 });
  t.teardown(() => {
    client.close();
    conn.close();
  });
  const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => client.call(encoded(`return ${i} * 3`, `call-${i}`), { timeoutMs: 30_000 })));
  answers.forEach((bytes, i) => {
    const r = fromBinary(ExecuteResponseSchema, bytes);
    if (r.requestId !== `call-${i}` || r.result?.kind.value !== i * 3) t.fail(`call ${i}: ${r.requestId} ${String(r.result?.kind.value)}`);
  });
  t.equal(answers.length, 60);
  t.notOk(client.unsupported);
});

t.test('no more calls in flight than the runner takes on one stream: the rest wait, none is refused', async (t) => {
  const narrow = await startTestRunner({ LDBOX_RUNNER_TOKEN: TOKEN, LDBOX_MAX_STREAMS_PER_CONNECTION: '4' });
  t.teardown(() => narrow.close());
  const conn = connection(narrow.url);
  const client = new ExecuteStreamClient(conn, { headers: auth, readMaxBytes: 1 << 20 });
  t.teardown(() => {
    client.close();
    conn.close();
  });
  // Sent at once, before the runner's SETTINGS (4 streams) have arrived: 12 calls that each wait.
  const answers = await Promise.all(
    Array.from({ length: 12 }, (_, i) => client.call(encoded(`await ld.wait(100); return ${i}`, `n-${i}`), { timeoutMs: 30_000 })),
  );
  t.same(
    answers.map((b) => fromBinary(ExecuteResponseSchema, b).result?.kind.value),
    Array.from({ length: 12 }, (_, i) => i),
  );
});

t.test('a local deadline and an abort reject the call and stop it in the runner', async (t) => {
  const conn = connection(runner.url);
  const client = new ExecuteStreamClient(conn, { headers: auth, readMaxBytes: 1 << 20 });
  t.teardown(() => {
    client.close();
    conn.close();
  });
  // The code may run for a minute; only the cancel frees the runner's one worker in time for the next call.
  const loop = encoded('while (true) {}', 'loop', 60_000);
  const timedOut = await rejection(t, client.call(loop, { timeoutMs: 300 }));
  t.equal(timedOut.code, Code.DeadlineExceeded);
  const next = fromBinary(ExecuteResponseSchema, await client.call(encoded('return 1', 'after-deadline'), { timeoutMs: 20_000 }));
  t.equal(next.result?.kind.value, 1, 'the worker was freed by the cancel');

  const ac = new AbortController();
  const aborted = client.call(loop, { timeoutMs: 60_000, signal: ac.signal });
  setTimeout(() => ac.abort(), 200);
  t.equal((await rejection(t, aborted)).code, Code.Canceled);
  const after = fromBinary(ExecuteResponseSchema, await client.call(encoded('return 2', 'after-abort'), { timeoutMs: 20_000 }));
  t.equal(after.result?.kind.value, 2, 'the worker was freed again');
  t.equal((await rejection(t, client.call(loop, { timeoutMs: 1000, signal: AbortSignal.abort() }))).code, Code.Canceled, 'an aborted signal: not sent');
});

t.test('a connection that idles out ends its stream; the next call opens another', async (t) => {
  const conn = connection(runner.url, 200);
  const client = new ExecuteStreamClient(conn, { headers: auth, readMaxBytes: 1 << 20 });
  t.teardown(() => {
    client.close();
    conn.close();
  });
  await client.call(encoded('return 1', 'first'), { timeoutMs: 20_000 });
  const first = conn.session();
  // A session closes for good only once its streams end: an ExecuteStream left open would keep it.
  if (!first.destroyed) await once(first, 'close');
  t.ok(first.destroyed, 'the idle session closed');
  const r = fromBinary(ExecuteResponseSchema, await client.call(encoded('return 5', 'second'), { timeoutMs: 20_000 }));
  t.equal(r.result?.kind.value, 5);
  t.not(conn.session(), first, 'on a new session');
});

t.test('a runner killed under calls: every call fails UNAVAILABLE at once, not at its deadline', async (t) => {
  const victim = await startTestRunner({ LDBOX_RUNNER_TOKEN: TOKEN });
  t.teardown(() => victim.close());
  const conn = connection(victim.url);
  const client = new ExecuteStreamClient(conn, { headers: auth, readMaxBytes: 1 << 20 });
  t.teardown(() => {
    client.close();
    conn.close();
  });
  await client.call(encoded('return 1', 'warm'), { timeoutMs: 20_000 });
  const calls = Array.from({ length: 4 }, (_, i) =>
    rejection(t, client.call(encoded('await ld.wait(30000); return 1', `w-${i}`, 60_000), { timeoutMs: 60_000 })),
  );
  const started = Date.now();
  await victim.process.kill('SIGKILL');
  for (const err of await Promise.all(calls)) t.equal(err.code, Code.Unavailable, err.message);
  t.ok(Date.now() - started < 30_000, 'well before the deadline');
});

t.test('a runner that drains answers the call in flight, then the stream ends', async (t) => {
  const draining = await startTestRunner({ LDBOX_RUNNER_TOKEN: TOKEN });
  const metadata = new grpc.Metadata();
  metadata.set('authorization', auth.authorization);
  t.teardown(() => draining.close());
  const clients = new RunnerClients([draining.url], TOKEN);
  t.teardown(() => clients.close());
  await clients.execute({ code: 'return 1' }, { timeoutMs: 20_000 });
  const inFlight = clients.execute({ code: 'await ld.wait(1500); return "finished"' }, { timeoutMs: 30_000 });
  // SIGTERM once the call runs in the runner: its worker pool reports it busy.
  for (;;) {
    const status = await draining.grpc.getPoolStatus(metadata);
    if (status.busy > 0) break;
  }
  const stopped = draining.process.kill('SIGTERM');
  t.same((await inFlight).result, 'finished', 'the call in flight is answered');
  await stopped;
});

/** A runner as connect-node serves RunnerService with `executeStream` implemented or not (an older runner). */
async function connectNodeRunner(t: Test, withStream: boolean): Promise<string> {
  const h2 = http2.createServer(
    connectNodeAdapter({
      grpc: true,
      routes: (router) =>
        router.service(RunnerService, {
          execute: (req) => create(ExecuteResponseSchema, { requestId: req.requestId, result: { kind: { case: 'stringValue', value: `unary: ${req.code}` } } }),
          ...(withStream
            ? {
                // biome-ignore lint/correctness/useYield: answers nothing; the stream fails at once
                async *executeStream() {
                  throw new ConnectError('the stream was used', Code.PermissionDenied);
                },
              }
            : {}),
        }),
    }),
  );
  h2.listen(0, '127.0.0.1');
  await once(h2, 'listening');
  t.teardown(() => new Promise<void>((r) => h2.close(() => r())));
  return `http://127.0.0.1:${(h2.address() as AddressInfo).port}`;
}

t.test('a runner without ExecuteStream (connect-node: UNIMPLEMENTED): calls go as unary Execute', async (t) => {
  const clients = new RunnerClients([await connectNodeRunner(t, false)], undefined);
  t.teardown(() => clients.close());
  const results = await Promise.all([1, 2, 3].map((i) => clients.execute({ code: `c${i}`, requestId: `r${i}` }, { timeoutMs: 10_000 })));
  t.same(
    results.map((r) => r.result),
    ['unary: c1', 'unary: c2', 'unary: c3'],
  );
  const later = await clients.execute({ code: 'c4' }, { timeoutMs: 10_000 });
  t.equal(later.result, 'unary: c4');
});

t.test('LDBOX_RUNNER_CALLS: the stream by default, unary calls with `unary`', async (t) => {
  const url = await connectNodeRunner(t, true);
  const streamed = new RunnerClients([url], undefined);
  const unary = new RunnerClients([url], undefined, { unaryOnly: true });
  t.teardown(() => {
    streamed.close();
    unary.close();
  });
  await t.rejects(streamed.execute({ code: 'c' }, { timeoutMs: 10_000 }), /the stream was used/, 'by default the call goes on the stream');
  t.equal((await unary.execute({ code: 'c' }, { timeoutMs: 10_000 })).result, 'unary: c');
});
