/**
 * The executor's ExecuteStream client (src/executor/execute-stream-client.ts) and its use by RunnerClients,
 * against real runners (`ldbox runner` processes): many calls on one stream, a local deadline and an abort
 * that also stop the call in the runner, a runner killed under calls, a connection that idles out, a
 * runner that drains, and a runner that does not serve ExecuteStream (an older version: connect-node's own
 * UNIMPLEMENTED), whose calls go as unary Execute. Also: a call's deadline runs from when it is sent, not
 * while it waits for room on the stream; a call on a stream the runner keeps open past LDBOX_BODY_TIMEOUT_MS
 * runs once; a runner's idle end (OK) fails nothing, and a call sent as it ended is sent again on a new
 * stream.
 */
import http from 'node:http';
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
import { decodeStreamRequest, encodeStreamResponse, GrpcMessageReader } from '../../src/protobuf/execute-stream-wire.js';
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

t.test("a call's deadline runs from when it is sent: waiting for room on the stream is not charged", async (t) => {
  // One call in flight per stream: the second waits in the client until the first is answered.
  const single = await startTestRunner({
    LDBOX_RUNNER_TOKEN: TOKEN,
    LDBOX_MAX_STREAMS_PER_CONNECTION: '1',
    LDBOX_RUNNER_MAX_INFLIGHT: '1',
    LDBOX_POOL_SIZE: '1',
  });
  t.teardown(() => single.close());
  const conn = connection(single.url);
  const client = new ExecuteStreamClient(conn, { headers: auth, readMaxBytes: 1 << 20 });
  t.teardown(() => {
    client.close();
    conn.close();
  });
  await client.call(encoded('return 0', 'warm'), { timeoutMs: 20_000 });
  // Each call takes 700 ms of its 1200 ms: the second, counted from when it was queued, would pass 1400 ms.
  const started = performance.now();
  const results = await Promise.allSettled([1, 2].map((i) => client.call(encoded(`await ld.wait(700); return ${i}`, `wait-${i}`), { timeoutMs: 1200 })));
  const took = performance.now() - started;
  t.same(
    results.map((r) => (r.status === 'fulfilled' ? fromBinary(ExecuteResponseSchema, r.value).result?.kind.value : ConnectError.from(r.reason).message)),
    [1, 2],
    'both calls succeed',
  );
  t.ok(took > 1200, `one after the other, longer than a deadline in all (${Math.round(took)} ms)`);

  // A call waiting for room still answers to its signal at once.
  const first = client.call(encoded('await ld.wait(700); return 1', 'holder'), { timeoutMs: 20_000 });
  const ac = new AbortController();
  const waiting = client.call(encoded('return 2', 'waiter'), { timeoutMs: 20_000, signal: ac.signal });
  const order: string[] = [];
  void first.then(() => order.push('first'));
  ac.abort();
  t.equal((await rejection(t, waiting)).code, Code.Canceled, 'a waiting call aborted: CANCELED');
  order.push('waiting');
  t.equal(fromBinary(ExecuteResponseSchema, await first).result?.kind.value, 1, 'the call ahead is not disturbed');
  t.same(order, ['waiting', 'first'], 'the aborted call ended at once, not once the call ahead was answered');
  t.equal(fromBinary(ExecuteResponseSchema, await client.call(encoded('return 3', 'after'), { timeoutMs: 20_000 })).result?.kind.value, 3);
});

t.test('a stream carries as many calls at once as the runner states, beyond SETTINGS_MAX_CONCURRENT_STREAMS', async (t) => {
  // Two HTTP/2 streams per connection, but the runner runs 10,000 calls at once: waiting calls park.
  const narrow = await startTestRunner({ LDBOX_RUNNER_TOKEN: TOKEN, LDBOX_MAX_STREAMS_PER_CONNECTION: '2' });
  t.teardown(() => narrow.close());
  const conn = connection(narrow.url);
  const client = new ExecuteStreamClient(conn, { headers: auth, readMaxBytes: 1 << 20 });
  t.teardown(() => {
    client.close();
    conn.close();
  });
  const meta = new grpc.Metadata();
  meta.set('authorization', `Bearer ${TOKEN}`);
  const calls = Array.from({ length: 20 }, (_, i) => client.call(encoded(`await ld.wait(3000); return ${i}`, `w-${i}`), { timeoutMs: 20_000 }));
  let busy = 0;
  for (const until = Date.now() + 15_000; busy < 20 && Date.now() < until; ) {
    busy = (await narrow.grpc.getPoolStatus(meta)).busy;
    if (busy < 20) await new Promise((r) => setTimeout(r, 20));
  }
  t.equal(busy, 20, 'all 20 calls ran in the runner at once on one stream');
  const answers = await Promise.all(calls);
  t.same(
    answers.map((a) => fromBinary(ExecuteResponseSchema, a).result?.kind.value),
    Array.from({ length: 20 }, (_, i) => i),
  );
});

t.test("a runner's idle end of the stream (OK) fails no call: calls in flight longer than it run to the end", async (t) => {
  const idling = await startTestRunner({ LDBOX_RUNNER_TOKEN: TOKEN, LDBOX_IDLE_TIMEOUT_MS: '300' });
  t.teardown(() => idling.close());
  const conn = connection(idling.url);
  const client = new ExecuteStreamClient(conn, { headers: auth, readMaxBytes: 1 << 20 });
  t.teardown(() => {
    client.close();
    conn.close();
  });
  const long = await client.call(encoded('await ld.wait(1000); return "long"', 'long'), { timeoutMs: 20_000 });
  t.equal(fromBinary(ExecuteResponseSchema, long).result?.kind.value, 'long', 'a call three times the idle timeout succeeds');
  // The stream ends once idle, then the connection without a stream (GOAWAY): a session left with the
  // stream open would not close.
  const first = conn.session();
  if (!first.destroyed) await within(once(first, 'close'), 'the idle connection did not close');
  const next = await client.call(encoded('return "next"', 'next'), { timeoutMs: 20_000 });
  t.equal(fromBinary(ExecuteResponseSchema, next).result?.kind.value, 'next', 'the next call opens a new stream');
  t.not(conn.session(), first, 'on a new connection');
});

/**
 * A stand-in for a runner, on a real socket: each ExecuteStream's calls are answered, except on the streams
 * `endsIdle` names, which end OK (as an idle runner's would) as soon as a call arrives, leaving it unread.
 */
async function endingRunner(t: Test, endsIdle: (streamIndex: number) => boolean): Promise<{ url: string; callsPerStream: number[] }> {
  const callsPerStream: number[] = [];
  const h2 = http2.createServer();
  h2.on('stream', (stream) => {
    const index = callsPerStream.push(0) - 1;
    stream.on('error', () => {});
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    let ended = false;
    const reader = new GrpcMessageReader(
      1 << 20,
      (body) => {
        const m = decodeStreamRequest(body);
        if (ended || m.cancel) return;
        callsPerStream[index]!++;
        if (endsIdle(index)) {
          ended = true;
          stream.once('wantTrailers', () => {
            stream.sendTrailers({ 'grpc-status': '0', 'grpc-message': 'the stream was idle for 300 ms' });
            setImmediate(() => stream.close(http2.constants.NGHTTP2_NO_ERROR));
          });
          stream.end();
          return;
        }
        const request = fromBinary(ExecuteRequestSchema, m.request!);
        const response = create(ExecuteResponseSchema, { requestId: request.requestId, result: { kind: { case: 'stringValue', value: `stream ${index}` } } });
        stream.write(encodeStreamResponse(m.callId, toBinary(ExecuteResponseSchema, response)));
      },
      () => {},
    );
    stream.on('data', (chunk: Buffer) => reader.push(chunk));
  });
  h2.listen(0, '127.0.0.1');
  await once(h2, 'listening');
  t.teardown(() => new Promise<void>((r) => h2.close(() => r())));
  return { url: `http://127.0.0.1:${(h2.address() as AddressInfo).port}`, callsPerStream };
}

t.test('a call sent as the runner ended an idle stream (OK), never started, is sent again on a new stream once', async (t) => {
  const once1 = await endingRunner(t, (i) => i === 0);
  const conn = connection(once1.url);
  const client = new ExecuteStreamClient(conn, { headers: auth, readMaxBytes: 1 << 20 });
  t.teardown(() => {
    client.close();
    conn.close();
  });
  const r = fromBinary(ExecuteResponseSchema, await client.call(encoded('return 1', 'raced'), { timeoutMs: 10_000 }));
  t.same([r.requestId, r.result?.kind.value], ['raced', 'stream 1'], 'answered on the second stream');
  t.same(once1.callsPerStream, [1, 1], 'sent once on each stream');

  const always = await endingRunner(t, () => true);
  const conn2 = connection(always.url);
  const client2 = new ExecuteStreamClient(conn2, { headers: auth, readMaxBytes: 1 << 20 });
  t.teardown(() => {
    client2.close();
    conn2.close();
  });
  const err = await rejection(t, client2.call(encoded('return 1', 'raced twice'), { timeoutMs: 10_000 }));
  t.equal(err.code, Code.Unavailable, 'a call left unstarted twice fails UNAVAILABLE (another runner may take it)');
  t.same(always.callsPerStream, [1, 1], 'after one resend');
});

t.test("RunnerClients: a node running past the runner's LDBOX_BODY_TIMEOUT_MS on ExecuteStream succeeds, run once", async (t) => {
  let hits = 0;
  const counter = http.createServer((_req, res) => {
    hits++;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  counter.listen(0, '127.0.0.1');
  await once(counter, 'listening');
  t.teardown(() => new Promise<void>((r) => counter.close(() => r())));
  const counterUrl = `http://127.0.0.1:${(counter.address() as AddressInfo).port}`;
  const short = await startTestRunner({ LDBOX_RUNNER_TOKEN: TOKEN, LDBOX_BODY_TIMEOUT_MS: '300', LDBOX_EGRESS_ALLOW: '127.0.0.1' });
  t.teardown(() => short.close());
  const clients = new RunnerClients([short.url], TOKEN);
  t.teardown(() => clients.close());
  const code = `const r = await ld.request({ url: '${counterUrl}/hit', method: 'POST', body: {} }); await ld.wait(1500); return r.status;`;
  const answer = await clients.execute({ code }, { timeoutMs: 20_000 });
  t.equal(answer.result, 200, 'the call succeeds');
  t.equal(hits, 1, 'and ran once');
});

/** `p`, or a rejection naming `what` after 10 s. */
async function within<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} within 10 s`)), 10_000);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
