/**
 * The runner's own gRPC path for Execute (runner/server/grpc-unary-call.ts, execute-route.ts), read
 * off a raw node:http2 client so that every byte of the request is ours: hostile and malformed frames
 * get a clear gRPC status and never take down a worker, the pool or the process; a client's
 * RST_STREAM cancels the call in the pool; and the streams the runner does not read itself (gRPC-Web,
 * health, Connect) still reach connect-node on the same connection.
 */
import http2 from 'node:http2';
import { setTimeout as delay } from 'node:timers/promises';
import { create, fromBinary, toBinary, toJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import { Code } from '@connectrpc/connect';
import t from 'tap';
import { ExecuteRequestSchema, ExecuteResponseSchema } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import {
  HealthCheckRequestSchema,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from '../../src/gen/grpc/health/v1/health_pb.js';
import { type ExecuteInit, startInProcessRunner } from '../helpers/runner-harness.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

const runner = await startInProcessRunner({ LDBOX_MAX_CODE_BYTES: '2048', LDBOX_MAX_INPUT_BYTES: '1024' });
const session = http2.connect(runner.url);
session.on('error', () => {});
t.teardown(async () => {
  session.close();
  await runner.close();
});

/** 2048 + 2 × 1024 + 64 KiB: the largest request message (execute-route.ts). */
const MAX_MESSAGE = 2048 + 2 * 1024 + 64 * 1024;
const EXECUTE = '/ldbox.runner.v1.RunnerService/Execute';

interface Answer {
  status: number | undefined;
  headers: http2.IncomingHttpHeaders;
  body: Buffer;
  /** grpc-status and grpc-message, from the trailers or (Trailers-Only) the headers. */
  grpcStatus: number | undefined;
  grpcMessage: string | undefined;
}

/** One request on the shared session; `body` chunks are written in order, then the stream ends. */
function request(headers: http2.OutgoingHttpHeaders, body: Uint8Array[]): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':method': 'POST', ':path': EXECUTE, 'content-type': 'application/grpc', te: 'trailers', ...headers });
    let head: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    stream.on('response', (h) => (head = h));
    stream.on('trailers', (h) => (trailers = h));
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('error', () => {}); // a reset after the answer (RST_STREAM NO_ERROR) is fine
    stream.on('close', () => {
      const status = trailers['grpc-status'] ?? head['grpc-status'];
      const message = trailers['grpc-message'] ?? head['grpc-message'];
      resolve({
        status: head[':status'] as number | undefined,
        headers: head,
        body: Buffer.concat(chunks),
        grpcStatus: status === undefined ? undefined : Number(status),
        grpcMessage: message === undefined ? undefined : decodeURIComponent(String(message)),
      });
    });
    stream.on('aborted', () => reject(new Error('aborted')));
    for (const b of body) stream.write(b);
    stream.end();
  });
}

/** `bytes` behind a gRPC message header with `flags`. */
function frame(bytes: Uint8Array, flags = 0, length = bytes.byteLength): Buffer {
  const head = Buffer.alloc(5);
  head[0] = flags;
  head.writeUInt32BE(length, 1);
  return Buffer.concat([head, bytes]);
}

const encode = (init: ExecuteInit) => toBinary(ExecuteRequestSchema, create(ExecuteRequestSchema, init));

/** Decodes a successful answer's one message. */
function resultOf(a: Answer): unknown {
  const res = fromBinary(ExecuteResponseSchema, a.body.subarray(5));
  return res.result && toJson(ValueSchema, res.result);
}

/** The runner still serves: the pool has both workers and a plain call works. */
async function stillServes(t: Test): Promise<void> {
  const a = await request({}, [frame(encode({ code: 'return 40 + 2' }))]);
  t.same([a.grpcStatus, resultOf(a)], [0, 42], 'a well-formed call after it succeeds');
  t.equal(runner.server.pool.status().workers, 2, 'both workers are alive');
}

t.test('a well-formed call: HEADERS, one message, grpc-status 0 in the trailers', async (t) => {
  const a = await request({}, [frame(encode({ code: 'return data.input.n * 2', input: { n: 21 } }))]);
  t.equal(a.status, 200);
  t.equal(a.headers['content-type'], 'application/grpc');
  t.equal(a.grpcStatus, 0);
  t.equal(a.body.readUInt32BE(1), a.body.length - 5, 'one length-prefixed message');
  t.equal(resultOf(a), 42);
  const split = await request(
    {},
    [...frame(encode({ code: 'return 7' }))].map((b) => Uint8Array.of(b)),
  );
  t.same([split.grpcStatus, resultOf(split)], [0, 7], 'a message sent one byte per DATA frame');
  const plus = await request({ 'content-type': 'application/grpc+proto' }, [frame(encode({ code: 'return 8' }))]);
  t.same([plus.grpcStatus, resultOf(plus)], [0, 8], 'application/grpc+proto');
});

t.test('hostile and malformed frames', async (t) => {
  const cases: [string, Uint8Array[], number, string | RegExp][] = [
    [
      'a length over the limit',
      [frame(new Uint8Array(0), 0, MAX_MESSAGE + 1)],
      Code.ResourceExhausted,
      `the request message is ${MAX_MESSAGE + 1} bytes, over the limit of ${MAX_MESSAGE} bytes`,
    ],
    [
      'a 4 GiB length',
      [frame(new Uint8Array(0), 0, 0xffffffff)],
      Code.ResourceExhausted,
      `the request message is ${0xffffffff} bytes, over the limit of ${MAX_MESSAGE} bytes`,
    ],
    [
      'the compressed flag without grpc-encoding',
      [frame(encode({ code: 'return 1' }), 1)],
      Code.Internal,
      'protocol error: the message is compressed, but no grpc-encoding was sent',
    ],
    ['unknown flags', [frame(encode({ code: 'return 1' }), 0x80)], Code.Internal, 'protocol error: unknown message flags 0x80'],
    ['no message at all', [], Code.InvalidArgument, 'protocol error: the request has no message'],
    ['a truncated header', [Uint8Array.of(0, 0, 0)], Code.InvalidArgument, 'protocol error: the request ended inside a message header (3 of 5 bytes)'],
    ['a truncated message', [frame(new Uint8Array(10), 0, 20)], Code.InvalidArgument, 'protocol error: the request ended inside its message (10 of 20 bytes)'],
    [
      'two messages',
      [frame(encode({ code: 'return 1' })), frame(encode({ code: 'return 2' }))],
      Code.InvalidArgument,
      'protocol error: a unary request must carry exactly one message, got more',
    ],
    [
      'bytes that are not an ExecuteRequest',
      [frame(Uint8Array.of(0x0a, 0xff, 0xff, 0xff))],
      Code.InvalidArgument,
      /^cannot decode ldbox\.runner\.v1\.ExecuteRequest: /,
    ],
    ['an empty ExecuteRequest', [frame(new Uint8Array(0))], Code.InvalidArgument, 'code is empty: send a JavaScript body that ends with `return`'],
  ];
  for (const [what, body, code, message] of cases) {
    const a = await request({}, body);
    t.equal(a.status, 200, `${what}: HTTP 200`);
    t.equal(a.grpcStatus, code, `${what}: grpc-status ${code}`);
    if (typeof message === 'string') t.equal(a.grpcMessage, message, `${what}: the message`);
    else t.match(a.grpcMessage, message, `${what}: the message`);
    t.equal(a.body.length, 0, `${what}: no message in the answer`);
  }
  await stillServes(t);
});

t.test('a large body refused on its header is not read', async (t) => {
  // The header announces 1 MiB and 1 MiB follows: the answer comes from the header alone, and the
  // runner resets the stream (NO_ERROR) instead of buffering the rest.
  const a = await request({}, [frame(new Uint8Array(1024 * 1024))]);
  t.equal(a.grpcStatus, Code.ResourceExhausted);
  await stillServes(t);
});

t.test('grpc-timeout', async (t) => {
  const bad = await request({ 'grpc-timeout': '5 seconds' }, [frame(encode({ code: 'return 1' }))]);
  t.same([bad.grpcStatus, bad.grpcMessage], [Code.InvalidArgument, 'protocol error: invalid grpc-timeout value "5 seconds"'], 'a malformed value');
  const far = await request({ 'grpc-timeout': '99999999H' }, [frame(encode({ code: 'return 1' }))]);
  t.same([far.grpcStatus, resultOf(far)], [0, 1], 'beyond what a timer can wait: no deadline, the call runs');
  const passed = await request({ 'grpc-timeout': '200m' }, [frame(encode({ code: 'await ld.wait(5000); return 1' }))]);
  t.same([passed.grpcStatus, passed.grpcMessage], [Code.DeadlineExceeded, 'the operation timed out'], 'a deadline that passes');
  await stillServes(t);
});

t.test('a gzip grpc-encoding goes to connect-node, which reads it', async (t) => {
  const { gzipSync } = await import('node:zlib');
  const a = await request({ 'grpc-encoding': 'gzip' }, [frame(gzipSync(encode({ code: 'return 5' })), 1)]);
  t.equal(a.grpcStatus, 0);
  t.equal(a.body[0], 0, 'answered uncompressed (the client did not send grpc-accept-encoding)');
  t.equal(resultOf(a), 5);
});

t.test('RST_STREAM from the client cancels the call in the pool', async (t) => {
  const before = runner.server.pool.status();
  const stream = session.request({ ':method': 'POST', ':path': EXECUTE, 'content-type': 'application/grpc', te: 'trailers' });
  stream.on('error', () => {});
  stream.end(frame(encode({ code: 'await ld.wait(20000); return 1' })));
  const until = performance.now() + 5000;
  while (runner.server.pool.status().busy === 0 && performance.now() < until) await delay(10);
  t.equal(runner.server.pool.status().busy, 1, 'the call runs');
  stream.close(http2.constants.NGHTTP2_CANCEL);
  // The slot is freed in the worker (busy is read from the shared flags) a message before the pool thread
  // counts the call: wait for both.
  const settled = () => {
    const s = runner.server.pool.status();
    return s.busy === 0 && s.failed > before.failed;
  };
  while (!settled() && performance.now() < until) await delay(10);
  const after = runner.server.pool.status();
  t.equal(after.busy, 0, 'the reset freed its slot');
  t.equal(after.failed, before.failed + 1, 'counted as a failed (cancelled) call');
  t.equal(after.workersReplaced, before.workersReplaced, 'without stopping a worker');
  await stillServes(t);
});

t.test('the streams the runner does not read itself still reach connect-node', async (t) => {
  // gRPC-Web on HTTP/2: the status is in a trailer frame inside the body.
  const web = await request({ 'content-type': 'application/grpc-web+proto' }, [frame(encode({ code: 'return 3' }))]);
  t.equal(web.headers['content-type'], 'application/grpc-web+proto', 'gRPC-Web answered by connect-node');
  const msgLength = web.body.readUInt32BE(1);
  t.equal(toJson(ValueSchema, fromBinary(ExecuteResponseSchema, web.body.subarray(5, 5 + msgLength)).result!), 3, 'with the result');
  t.match(web.body.subarray(10 + msgLength).toString(), /grpc-status: ?0/, 'and grpc-status 0 in its trailer frame');

  const health = await request({ ':path': '/grpc.health.v1.Health/Check' }, [
    frame(toBinary(HealthCheckRequestSchema, create(HealthCheckRequestSchema, { service: '' }))),
  ]);
  t.equal(health.grpcStatus, 0);
  t.equal(fromBinary(HealthCheckResponseSchema, health.body.subarray(5)).status, ServingStatus.SERVING, 'health Check');

  const unknown = await request({ ':path': '/ldbox.runner.v1.RunnerService/Nope' }, [frame(new Uint8Array(0))]);
  t.equal(unknown.status, 404, 'an unknown method: HTTP 404 from connect-node (gRPC clients read UNIMPLEMENTED)');

  const viaConnect = await runner.connect.execute({ code: 'return 4' });
  t.equal(viaConnect.result && toJson(ValueSchema, viaConnect.result), 4, 'Connect JSON over HTTP/2');
  const viaGrpcJs = await runner.grpc.execute({ code: 'return 6' });
  t.equal(viaGrpcJs.result && toJson(ValueSchema, viaGrpcJs.result), 6, 'grpc-js');
  const viaConnectGrpc = await runner.connectGrpc.execute({ code: 'return 9' });
  t.equal(viaConnectGrpc.result && toJson(ValueSchema, viaConnectGrpc.result), 9, "connect-node's gRPC client");
});

t.test('bearer token: refused on the headers, the body never read', async (t) => {
  const guarded = await startInProcessRunner({ LDBOX_RUNNER_TOKEN: 't'.repeat(32) });
  t.teardown(() => guarded.close());
  const s = http2.connect(guarded.url);
  s.on('error', () => {});
  t.teardown(() => s.close());
  const call = (authorization?: string) =>
    new Promise<http2.IncomingHttpHeaders>((resolve) => {
      const stream = s.request({
        ':method': 'POST',
        ':path': EXECUTE,
        'content-type': 'application/grpc',
        ...(authorization ? { authorization } : {}),
      });
      stream.on('error', () => {});
      let head: http2.IncomingHttpHeaders = {};
      stream.on('response', (h) => (head = h));
      stream.on('trailers', (h) => (head = { ...head, ...h }));
      stream.on('close', () => resolve(head));
      stream.resume();
      // The header announces 1 MiB: a token check after reading would wait for all of it.
      stream.write(frame(new Uint8Array(0), 0, 1024 * 1024));
    });
  const refused = await call();
  t.same(
    [refused['grpc-status'], refused['grpc-message']],
    [String(Code.Unauthenticated), 'missing or wrong runner token (Authorization: Bearer <LDBOX_RUNNER_TOKEN>)'],
  );
  const wrong = await call(`Bearer ${'u'.repeat(32)}`);
  t.equal(wrong['grpc-status'], String(Code.Unauthenticated), 'a wrong token');
});
