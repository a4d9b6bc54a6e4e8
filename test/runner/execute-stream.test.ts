/**
 * `RunnerService.ExecuteStream` (runner/server/execute-stream.ts) read off a raw node:http2 client, so
 * that every byte is ours: requests are encoded by protobuf-es (which also checks the runner's hand-written
 * envelope codec, src/protobuf/execute-stream-wire.ts) and framed by hand, answers split into gRPC messages
 * here and decoded by protobuf-es.
 *
 * Covered: many calls on one stream, answered out of order and each naming its call; the bearer token
 * checked when the stream opens; per-call failures that are answers (the stream stays open) with the
 * message unary Execute gives; protocol errors that end the stream with a status (and cancel its calls
 * in the pool); cancel and timeout_ms of one call; half-close (OK once every call is answered); a client
 * reset; the per-stream limit of calls in flight; the runner draining under a stream; a stream that lives
 * past LDBOX_BODY_TIMEOUT_MS and ends (OK) only once it has had no call in flight for LDBOX_IDLE_TIMEOUT_MS;
 * and @grpc/grpc-js as a bidi client.
 */
import { once } from 'node:events';
import http2 from 'node:http2';
import { setTimeout as delay } from 'node:timers/promises';
import { create, fromBinary, type MessageInitShape, toBinary, toJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import { Code } from '@connectrpc/connect';
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import {
  type ExecuteResponse,
  ExecuteRequestSchema,
  type ExecuteStreamRequest,
  ExecuteStreamRequestSchema,
  type ExecuteStreamResponse,
  ExecuteStreamResponseSchema,
} from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import { type ExecuteInit, type InProcessRunner, startInProcessRunner } from '../helpers/runner-harness.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];
type PoolStatus = ReturnType<InProcessRunner['server']['pool']['status']>;

const EXECUTE = '/ldbox.runner.v1.RunnerService/Execute';
const EXECUTE_STREAM = '/ldbox.runner.v1.RunnerService/ExecuteStream';
/** How long a test waits for something that should happen at once, before it fails. */
const PATIENCE_MS = 10_000;

/** The runner most cases share: two workers of four sandboxes each (8 at once), small request limits. */
const ENV = { LDBOX_MAX_CODE_BYTES: '2048', LDBOX_MAX_INPUT_BYTES: '1024', LDBOX_MAX_TIMEOUT_MS: '10000' };
/** The largest envelope the runner reads: 2048 + 2 × 1024 + 64 KiB (the request limit) + 32 (execute-stream.ts). */
const MAX_ENVELOPE = 2048 + 2 * 1024 + 64 * 1024 + 32;
const SANDBOXES = 2 * 4;

const runner = await startInProcessRunner(ENV);
t.teardown(() => runner.close());

// ------------------------------------------------------------------------------------------ helpers

/** `bytes` behind a gRPC message header with `flags` (and `length`, if it must lie). */
function frame(bytes: Uint8Array, flags = 0, length = bytes.byteLength): Buffer {
  const head = Buffer.alloc(5);
  head[0] = flags;
  head.writeUInt32BE(length, 1);
  return Buffer.concat([head, bytes]);
}

/** One ExecuteStreamRequest, encoded by protobuf-es and framed. */
const message = (init: MessageInitShape<typeof ExecuteStreamRequestSchema>): Buffer =>
  frame(toBinary(ExecuteStreamRequestSchema, create(ExecuteStreamRequestSchema, init)));
/** A message starting call `callId`. */
const call = (callId: number, request: ExecuteInit, timeoutMs = 0): Buffer => message({ callId, request, timeoutMs });
/** A message cancelling call `callId`. */
const cancel = (callId: number): Buffer => message({ callId, cancel: true });

/** The JSON result of a successful answer, or a description of what came instead. */
function resultOf(a: ExecuteStreamResponse | undefined): unknown {
  if (a?.outcome.case !== 'response') return { notAResponse: a?.outcome.value ?? a };
  const res: ExecuteResponse = a.outcome.value;
  if (res.error) return { userError: res.error.message };
  return res.result && toJson(ValueSchema, res.result);
}

/** The status of a failed answer as [code, message], or undefined for a response. */
const statusOf = (a: ExecuteStreamResponse | undefined): [number, string] | undefined =>
  a?.outcome.case === 'status' ? [a.outcome.value.code, a.outcome.value.message] : undefined;

interface StreamEnd {
  /** grpc-status from the trailers, or from the headers of a Trailers-Only answer. */
  grpcStatus: number | undefined;
  grpcMessage: string | undefined;
  /** The RST_STREAM code the stream closed with (0 when it ended normally). */
  rstCode: number | undefined;
}

/**
 * One ExecuteStream on `session`: `send` writes raw bytes, `answer(id)` resolves when an answer for that
 * call arrives, `ended` when the stream is closed. Every answer is kept in arrival order.
 */
class Stream {
  readonly raw: http2.ClientHttp2Stream;
  /** Every answer, in the order it arrived. */
  readonly answers: ExecuteStreamResponse[] = [];
  readonly ended: Promise<StreamEnd>;
  /** Bytes of a message not yet whole. */
  #buffered = Buffer.alloc(0);
  readonly #waiting = new Map<number, (a: ExecuteStreamResponse) => void>();
  #headers: http2.IncomingHttpHeaders = {};
  #trailers: http2.IncomingHttpHeaders = {};
  /** Set when the answers could not be split or read: a test then fails on it. */
  decodeError: string | undefined;

  constructor(session: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders = {}) {
    this.raw = session.request({ ':method': 'POST', ':path': EXECUTE_STREAM, 'content-type': 'application/grpc', te: 'trailers', ...headers });
    this.raw.on('error', () => {}); // the runner may reset the stream (NO_ERROR) once it has ended it
    this.raw.on('response', (h) => (this.#headers = h));
    this.raw.on('trailers', (h) => (this.#trailers = h));
    this.raw.on('data', (chunk: Buffer) => this.#read(chunk));
    this.ended = new Promise((resolve) => {
      this.raw.once('close', () => {
        const status = this.#trailers['grpc-status'] ?? this.#headers['grpc-status'];
        const text = this.#trailers['grpc-message'] ?? this.#headers['grpc-message'];
        resolve({
          grpcStatus: status === undefined ? undefined : Number(status),
          grpcMessage: text === undefined ? undefined : decodeURIComponent(String(text)),
          rstCode: this.raw.rstCode,
        });
      });
    });
  }

  /** The response headers, once they came. */
  get headers(): http2.IncomingHttpHeaders {
    return this.#headers;
  }

  send(...bytes: Uint8Array[]): void {
    this.raw.write(bytes.length === 1 ? bytes[0]! : Buffer.concat(bytes));
  }

  /** Resolves with the (first) answer of call `callId`; rejects after {@link PATIENCE_MS} or when the stream closes without it. */
  answer(callId: number): Promise<ExecuteStreamResponse> {
    const got = this.answers.find((a) => a.callId === callId);
    if (got) return Promise.resolve(got);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer for call ${callId} within ${PATIENCE_MS} ms`)), PATIENCE_MS);
      const closed = () => {
        clearTimeout(timer);
        reject(new Error(`the stream closed without an answer for call ${callId}`));
      };
      this.raw.once('close', closed);
      this.#waiting.set(callId, (a) => {
        clearTimeout(timer);
        this.raw.off('close', closed);
        resolve(a);
      });
    });
  }

  /** How many answers named call `callId`. */
  count(callId: number): number {
    return this.answers.filter((a) => a.callId === callId).length;
  }

  /** The stream's end, or a rejection after {@link PATIENCE_MS}. */
  end(): Promise<StreamEnd> {
    return within(this.ended, 'the stream did not end');
  }

  #read(chunk: Buffer): void {
    this.#buffered = Buffer.concat([this.#buffered, chunk]);
    while (this.#buffered.length >= 5) {
      const length = this.#buffered.readUInt32BE(1);
      if (this.#buffered.length < 5 + length) return;
      if (this.#buffered[0] !== 0) this.decodeError ??= `an answer with flags ${this.#buffered[0]}`;
      const body = this.#buffered.subarray(5, 5 + length);
      this.#buffered = this.#buffered.subarray(5 + length);
      let a: ExecuteStreamResponse;
      try {
        a = fromBinary(ExecuteStreamResponseSchema, body);
      } catch (err) {
        this.decodeError ??= String(err);
        continue;
      }
      this.answers.push(a);
      const waiter = this.#waiting.get(a.callId);
      this.#waiting.delete(a.callId);
      waiter?.(a);
    }
  }
}

/** `p`, or a rejection naming `what` after {@link PATIENCE_MS}. */
async function within<T>(p: Promise<T>, what: string, ms = PATIENCE_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A new HTTP/2 connection to `on`, closed when `t` ends. */
function connect(t: Test, on: InProcessRunner = runner): http2.ClientHttp2Session {
  const session = http2.connect(on.url);
  session.on('error', () => {});
  t.teardown(() => session.destroy());
  return session;
}

/** Polls the pool until `ok` holds (every 10 ms), failing after {@link PATIENCE_MS}; returns the status that held. */
async function poolUntil(what: string, ok: (s: PoolStatus) => boolean, on: InProcessRunner = runner): Promise<PoolStatus> {
  const until = performance.now() + PATIENCE_MS;
  for (;;) {
    const s = on.server.pool.status();
    if (ok(s)) return s;
    if (performance.now() > until) throw new Error(`the pool never got to: ${what} (last: busy ${s.busy}, queued ${s.queued})`);
    await delay(10);
  }
}

/** Settles the pool's counters (a call's reply is counted a moment after its worker is free). */
const idle = (on: InProcessRunner = runner): Promise<PoolStatus> => poolUntil('idle', (s) => s.busy === 0 && s.queued === 0, on);

/** A unary Execute on `session` over binary gRPC: its grpc-status and grpc-message. */
function unary(session: http2.ClientHttp2Session, request: ExecuteInit): Promise<{ grpcStatus: number | undefined; grpcMessage: string | undefined }> {
  return new Promise((resolve) => {
    const stream = session.request({ ':method': 'POST', ':path': EXECUTE, 'content-type': 'application/grpc', te: 'trailers' });
    let head: http2.IncomingHttpHeaders = {};
    stream.on('response', (h) => (head = h));
    stream.on('trailers', (h) => (head = { ...head, ...h }));
    stream.on('error', () => {});
    stream.resume();
    stream.on('close', () =>
      resolve({
        grpcStatus: head['grpc-status'] === undefined ? undefined : Number(head['grpc-status']),
        grpcMessage: head['grpc-message'] === undefined ? undefined : decodeURIComponent(String(head['grpc-message'])),
      }),
    );
    stream.end(frame(toBinary(ExecuteRequestSchema, create(ExecuteRequestSchema, request))));
  });
}

/** The runner still serves ExecuteStream: a new stream on a new connection answers a call promptly. */
async function stillServes(t: Test, on: InProcessRunner = runner): Promise<void> {
  const s = new Stream(connect(t, on));
  s.send(call(1, { code: 'return data.input.n + 1', input: { n: 41 } }));
  t.equal(resultOf(await s.answer(1)), 42, 'a call on a new stream succeeds');
  s.raw.end();
  t.equal((await s.end()).grpcStatus, 0, 'and that stream ends OK');
}

// ------------------------------------------------------------------------------------------ cases

t.test('many calls on one stream: one answer each, in the order they end', async (t) => {
  const s = new Stream(connect(t));
  // A first round, so that every sandbox is warm and fast calls are fast.
  s.send(...Array.from({ length: SANDBOXES }, (_, i) => call(1000 + i, { code: 'return 1' })));
  await Promise.all(Array.from({ length: SANDBOXES }, (_, i) => s.answer(1000 + i)));
  s.answers.length = 0;

  // Call 1 waits; calls 2..50, sent after it in the same write, do not.
  const ids = Array.from({ length: 50 }, (_, i) => i + 1);
  s.send(
    ...ids.map((id) => (id === 1 ? call(id, { code: 'await ld.wait(500); return "slow"' }) : call(id, { code: 'return data.input.n * 2', input: { n: id } }))),
  );
  const answers = await Promise.all(ids.map((id) => s.answer(id)));
  t.equal(s.decodeError, undefined, 'every answer reads as an ExecuteStreamResponse');
  t.same(
    answers.map((a) => a.callId),
    ids,
    'each answer names its call',
  );
  t.same(
    answers.map(resultOf),
    ids.map((id) => (id === 1 ? 'slow' : id * 2)),
    'each call gets its own result',
  );
  t.same(
    ids.filter((id) => s.count(id) !== 1),
    [],
    'exactly one answer per call',
  );
  t.equal(s.answers.length, 50, 'and no other answer');
  const order = s.answers.map((a) => a.callId);
  t.equal(order.indexOf(1), 49, 'the waiting call, sent first, is answered after the 49 sent after it');

  s.raw.end();
  t.equal((await s.end()).grpcStatus, 0);
});

t.test('the bearer token is checked when the stream opens', async (t) => {
  const TOKEN = 'execute-stream-token-0123456789';
  const guarded = await startInProcessRunner({ ...ENV, LDBOX_RUNNER_TOKEN: TOKEN });
  t.teardown(() => guarded.close());
  const session = connect(t, guarded);

  for (const [what, headers] of [
    ['no authorization', {}],
    ['a wrong token', { authorization: `Bearer ${'x'.repeat(TOKEN.length)}` }],
  ] as const) {
    const s = new Stream(session, headers);
    // The client never ends its side: the runner must end the stream on its own, without reading.
    s.send(call(1, { code: 'return 1' }));
    const end = await s.end();
    t.equal(end.grpcStatus, Code.Unauthenticated, `${what}: UNAUTHENTICATED (16)`);
    t.equal(end.grpcMessage, 'missing or wrong runner token (Authorization: Bearer <LDBOX_RUNNER_TOKEN>)', `${what}: the message`);
    t.equal(s.answers.length, 0, `${what}: no call answered`);
  }

  const s = new Stream(session, { authorization: `Bearer ${TOKEN}` });
  s.send(call(1, { code: 'return 1 + 1' }), call(2, { code: 'return 3' }));
  t.same([resultOf(await s.answer(1)), resultOf(await s.answer(2))], [2, 3], 'the right token: calls work');
  s.raw.end();
  t.equal((await s.end()).grpcStatus, 0);
});

t.test('a call that fails is an answer: the stream stays open', async (t) => {
  const session = connect(t);
  const s = new Stream(session);

  s.send(message({ callId: 7 }));
  t.same(statusOf(await s.answer(7)), [Code.InvalidArgument, 'the message has no request'], 'no request: INVALID_ARGUMENT (3)');

  const refused: [string, ExecuteInit][] = [
    ['limits.timeoutMs above the maximum', { code: 'return 1', limits: { timeoutMs: 10_001 } }],
    ['code over LDBOX_MAX_CODE_BYTES', { code: `return ${JSON.stringify('é'.repeat(1100))}` }],
    ['empty code', { code: '' }],
  ];
  let id = 10;
  for (const [what, request] of refused) {
    const asUnary = await unary(session, request);
    t.equal(asUnary.grpcStatus, Code.InvalidArgument, `${what}: unary Execute refuses it`);
    s.send(call(++id, request));
    t.same(statusOf(await s.answer(id)), [Code.InvalidArgument, asUnary.grpcMessage], `${what}: the same status and message on the stream`);
  }
  t.match(statusOf(s.answers.find((a) => a.callId === 11))?.[1], /^limits\.timeoutMs must be at most 10000, got 10001$/, 'a message naming the limit');

  s.send(call(99, { code: 'return "still open"' }));
  t.equal(resultOf(await s.answer(99)), 'still open', 'a later call on the same stream succeeds');
  t.equal(s.raw.closed, false, 'the stream is still open');
  s.raw.end();
  t.equal((await s.end()).grpcStatus, 0);
});

t.test('protocol errors end the stream with a status', async (t) => {
  const session = connect(t);
  const ended = async (what: string, bytes: Buffer[], endAfter: boolean, code: Code, text: string | RegExp): Promise<Stream> => {
    const s = new Stream(session);
    for (const b of bytes) s.send(b);
    if (endAfter) s.raw.end();
    const end = await s.end();
    t.equal(end.grpcStatus, code, `${what}: grpc-status ${code}`);
    if (typeof text === 'string') t.equal(end.grpcMessage, text, `${what}: the message`);
    else t.match(end.grpcMessage, text, `${what}: the message`);
    return s;
  };

  const zero = await ended('call_id 0', [call(0, { code: 'return 1' })], false, Code.InvalidArgument, 'protocol error: a message has no call_id (or 0)');
  t.equal(zero.answers.length, 0, 'call_id 0: nothing answered');

  await ended(
    'bytes that are not a message',
    [frame(Uint8Array.of(0xff, 0xff, 0xff, 0xff))],
    false,
    Code.InvalidArgument,
    /^protocol error: a message cannot be read: /,
  );
  t.throws(() => fromBinary(ExecuteStreamRequestSchema, Uint8Array.of(0xff, 0xff, 0xff, 0xff)), 'protobuf-es cannot read those bytes either');

  await ended(
    'the compressed flag',
    [frame(toBinary(ExecuteStreamRequestSchema, create(ExecuteStreamRequestSchema, { callId: 1, request: { code: 'return 1' } })), 1)],
    false,
    Code.Internal,
    'protocol error: a message is compressed, but no grpc-encoding was sent',
  );

  await ended(
    'a length over the limit, sent without its body',
    [frame(new Uint8Array(0), 0, MAX_ENVELOPE + 1)],
    false,
    Code.ResourceExhausted,
    `a message is ${MAX_ENVELOPE + 1} bytes, over the limit of ${MAX_ENVELOPE} bytes`,
  );

  const whole = call(1, { code: 'return 1' });
  await ended(
    'END_STREAM inside a message',
    [whole.subarray(0, whole.length - 3)],
    true,
    Code.InvalidArgument,
    `protocol error: the stream ended inside a message (${whole.length - 3} bytes of it)`,
  );
  await ended(
    'END_STREAM inside a message header',
    [whole.subarray(0, 3)],
    true,
    Code.InvalidArgument,
    'protocol error: the stream ended inside a message (3 bytes of it)',
  );

  // A call id still in flight: the stream ends, and the call that was running is cancelled in the pool.
  const before = await idle();
  const dup = new Stream(session);
  dup.send(call(5, { code: 'await ld.wait(20000); return 1' }), call(6, { code: 'return 6' }));
  t.equal(resultOf(await dup.answer(6)), 6, 'another call on the stream is answered');
  await poolUntil('the waiting call runs', (s) => s.busy === 1);
  const sentAt = performance.now();
  dup.send(call(5, { code: 'return 2' }));
  const end = await dup.end();
  t.same(
    [end.grpcStatus, end.grpcMessage],
    [Code.InvalidArgument, 'protocol error: call_id 5 is already in flight on this stream'],
    'a call_id in flight: INVALID_ARGUMENT',
  );
  t.equal(dup.count(5), 0, 'the call in flight is not answered');
  const after = await poolUntil('the call in flight is cancelled', (s) => s.busy === 0 && s.failed === before.failed + 1);
  t.ok(performance.now() - sentAt < 5000, 'cancelled when the stream ended, not by its 10 s limit');
  t.equal(after.workersReplaced, before.workersReplaced, 'cancelled without stopping a worker');

  await stillServes(t);
});

t.test('cancel: the call is answered CANCELLED and its sandbox freed', async (t) => {
  const before = await idle();
  const s = new Stream(connect(t));
  s.send(call(1, { code: 'while (true) {}', limits: { timeoutMs: 10_000 } }));
  await poolUntil('the loop runs', (p) => p.busy === 1);
  const cancelledAt = performance.now();
  s.send(cancel(1));
  t.same(statusOf(await s.answer(1)), [Code.Canceled, 'the call was cancelled by the client'], 'CANCELLED (1) for that call');
  const after = await poolUntil('the loop is stopped', (p) => p.busy === 0 && p.failed === before.failed + 1);
  t.ok(performance.now() - cancelledAt < 5000, 'stopped by the cancel, not by its 10 s limit');
  t.equal(after.workersReplaced, before.workersReplaced, 'without stopping a worker');

  // As many calls at once as the pool has sandboxes, each holding one for a moment: a sandbox still
  // running the loop would hold the last of them up until the loop's limit.
  const started = performance.now();
  const ids = Array.from({ length: SANDBOXES }, (_, i) => 10 + i);
  s.send(...ids.map((id) => call(id, { code: `await ld.wait(100); return ${id}` })));
  const answers = await Promise.all(ids.map((id) => s.answer(id)));
  t.same(answers.map(resultOf), ids, `${SANDBOXES} calls at once all succeed`);
  t.ok(performance.now() - started < 3000, `promptly (${Math.round(performance.now() - started)} ms)`);

  const answered = s.answers.length;
  s.send(cancel(12345), cancel(10)); // an id never used, and one already answered
  s.send(call(20, { code: 'return "usable"' }));
  t.equal(resultOf(await s.answer(20)), 'usable', 'a cancel for an unknown or answered id is ignored');
  t.same(
    s.answers.slice(answered).map((a) => a.callId),
    [20],
    'and answers nothing',
  );
  s.raw.end();
  t.equal((await s.end()).grpcStatus, 0);
});

t.test('timeout_ms: a call past its deadline is answered DEADLINE_EXCEEDED', async (t) => {
  const s = new Stream(connect(t));
  const started = performance.now();
  s.send(call(3, { code: 'while (true) {}', limits: { timeoutMs: 10_000 } }, 200), call(4, { code: 'return 4' }, 200));
  t.same(statusOf(await s.answer(3)), [Code.DeadlineExceeded, 'the operation timed out'], 'DEADLINE_EXCEEDED (4) for that call');
  const took = performance.now() - started;
  t.ok(took >= 150 && took < 5000, `after about 200 ms (${Math.round(took)} ms)`);
  t.equal(resultOf(await s.answer(4)), 4, 'a call that makes its deadline succeeds');
  await idle();
  s.send(call(5, { code: 'return 5' }));
  t.equal(resultOf(await s.answer(5)), 5, 'the stream goes on');
  s.raw.end();
  t.equal((await s.end()).grpcStatus, 0);
});

t.test('half-close: every answer, then OK', async (t) => {
  const s = new Stream(connect(t));
  const ids = [1, 2, 3, 4, 5];
  s.raw.end(Buffer.concat(ids.map((id) => call(id, { code: `await ld.wait(${id * 20}); return ${id}` }))));
  const end = await s.end();
  t.same([end.grpcStatus, end.rstCode], [0, http2.constants.NGHTTP2_NO_ERROR], 'grpc-status 0 in the trailers');
  t.same(s.answers.map((a) => a.callId).sort(), ids, 'every call was answered before the trailers');
  t.same(s.answers.map(resultOf).sort(), ids, 'with its result');

  const empty = new Stream(connect(t));
  empty.raw.end();
  const emptyEnd = await empty.end();
  t.same([emptyEnd.grpcStatus, empty.answers.length], [0, 0], 'no calls at all: OK at once');
});

t.test('a client reset cancels its calls; the runner goes on', async (t) => {
  const before = await idle();
  const s = new Stream(connect(t));
  s.send(call(1, { code: 'while (true) {}', limits: { timeoutMs: 10_000 } }), call(2, { code: 'await ld.wait(20000); return 2' }));
  await poolUntil('both calls run', (p) => p.busy === 2);
  const resetAt = performance.now();
  s.raw.close(http2.constants.NGHTTP2_CANCEL);
  await s.end();
  const after = await poolUntil('both calls are cancelled', (p) => p.busy === 0 && p.failed === before.failed + 2);
  t.ok(performance.now() - resetAt < 5000, 'cancelled by the reset, not by their 10 s limit');
  t.equal(after.workersReplaced, before.workersReplaced, 'without stopping a worker');
  t.equal(after.workers, 2, 'both workers are alive');
  await stillServes(t);
});

t.test('at most as many calls in flight on a stream as the runner runs (LDBOX_RUNNER_MAX_INFLIGHT)', async (t) => {
  // Never fewer than LDBOX_MAX_STREAMS_PER_CONNECTION: the two are set alike here.
  const small = await startInProcessRunner({ ...ENV, LDBOX_MAX_STREAMS_PER_CONNECTION: '4', LDBOX_RUNNER_MAX_INFLIGHT: '4' });
  t.teardown(() => small.close());
  const s = new Stream(connect(t, small));
  const ids = [1, 2, 3, 4, 5];
  s.send(...ids.map((id) => call(id, { code: `await ld.wait(200); return ${id}` })));
  t.same(
    statusOf(await s.answer(5)),
    [Code.ResourceExhausted, 'this stream has 4 calls in flight, the most a stream may have: try another runner, or another stream'],
    'the 5th: RESOURCE_EXHAUSTED (8)',
  );
  t.equal(s.headers['ldbox-max-calls-in-flight'], '4', 'the stream states its limit in its response headers');
  const first = await Promise.all([1, 2, 3, 4].map((id) => s.answer(id)));
  t.same(first.map(resultOf), [1, 2, 3, 4], 'the first 4 succeed');
  t.equal(s.answers[0]?.callId, 5, 'the 5th was answered first, at once');
  s.send(call(6, { code: 'return 6' }));
  t.equal(resultOf(await s.answer(6)), 6, 'once they are answered, a new call is taken');
  s.raw.end();
  t.equal((await s.end()).grpcStatus, 0);
});

t.test('drain: calls in flight are answered, new ones UNAVAILABLE, then the stream ends UNAVAILABLE', async (t) => {
  const draining = await startInProcessRunner(ENV);
  t.teardown(() => draining.close());
  const s = new Stream(connect(t, draining));
  s.send(call(1, { code: 'await ld.wait(500); return "finished"' }));
  await poolUntil('the call runs', (p) => p.busy === 1, draining);
  const closed = draining.server.close(5000);
  t.equal(draining.server.state, 'draining');
  s.send(call(2, { code: 'return 2' }));
  t.same(
    statusOf(await s.answer(2)),
    [Code.Unavailable, 'the runner is shutting down: try another runner'],
    'a call sent after the close began: UNAVAILABLE (14)',
  );
  t.equal(resultOf(await s.answer(1)), 'finished', 'the call in flight still gets its answer');
  const end = await s.end();
  t.same([end.grpcStatus, end.grpcMessage], [Code.Unavailable, 'the runner is shutting down: try another runner'], 'the stream ends UNAVAILABLE');
  await within(closed, 'the runner did not close');
  t.equal(draining.server.state, 'closed');
});

t.test('LDBOX_BODY_TIMEOUT_MS does not apply to an ExecuteStream: a call that runs past it is answered', async (t) => {
  // Its request body never ends: the body timer used to reset every ExecuteStream this long after it opened.
  const short = await startInProcessRunner({ ...ENV, LDBOX_BODY_TIMEOUT_MS: '300' });
  t.teardown(() => short.close());
  const session = connect(t, short);
  const s = new Stream(session);
  const opened = performance.now();
  s.send(call(1, { code: 'await ld.wait(1500); return 7' }));
  t.equal(resultOf(await s.answer(1)), 7, 'the answer, 1.5 s after the stream opened');
  t.ok(performance.now() - opened >= 1500, 'well past the 300 ms body timeout');
  t.equal(s.raw.closed, false, 'the stream is still open');
  s.send(call(2, { code: 'return 8' }));
  t.equal(resultOf(await s.answer(2)), 8, 'and takes another call');
  s.raw.end();
  t.same([(await s.end()).grpcStatus, s.raw.rstCode], [0, http2.constants.NGHTTP2_NO_ERROR], 'it ends OK when the client half-closes, not reset');

  // A unary Execute whose body never ends is still reset by it.
  const stalled = session.request({ ':method': 'POST', ':path': EXECUTE, 'content-type': 'application/grpc', te: 'trailers' });
  stalled.on('error', () => {});
  stalled.write(Buffer.from([0, 0, 0, 0, 100]));
  stalled.resume();
  await within(new Promise((resolve) => stalled.once('close', resolve)), 'the stalled unary call was not reset');
  t.equal(stalled.rstCode, http2.constants.NGHTTP2_CANCEL, 'a stalled unary Execute: RST_STREAM CANCEL');
});

t.test('LDBOX_IDLE_TIMEOUT_MS: a stream ends (OK) once it has had no call in flight that long, never while one runs', async (t) => {
  const IDLE_MS = 300;
  const idling = await startInProcessRunner({ ...ENV, LDBOX_IDLE_TIMEOUT_MS: String(IDLE_MS) });
  t.teardown(() => idling.close());

  const s = new Stream(connect(t, idling));
  s.send(call(1, { code: 'await ld.wait(1200); return "long"' }));
  t.equal(resultOf(await s.answer(1)), 'long', 'a call running four times the idle timeout is answered');
  const answeredAt = performance.now();
  t.equal(s.raw.closed, false, 'the stream was open all the while');
  const end = await s.end();
  const idleFor = performance.now() - answeredAt;
  t.same(
    [end.grpcStatus, end.grpcMessage, end.rstCode],
    [0, `the stream was idle for ${IDLE_MS} ms`, http2.constants.NGHTTP2_NO_ERROR],
    'then it ends OK, saying why, and is closed with NO_ERROR',
  );
  t.ok(idleFor >= IDLE_MS - 50, `once idle for the timeout (${Math.round(idleFor)} ms after the answer)`);
  t.equal(s.answers.length, 1, 'no other answer');

  const partial = new Stream(connect(t, idling));
  const whole = call(1, { code: 'return 1' });
  partial.send(whole.subarray(0, 10));
  const partialEnd = await partial.end();
  t.same(
    [partialEnd.grpcStatus, partialEnd.grpcMessage],
    [0, `the stream was idle for ${IDLE_MS} ms, with 10 bytes of a message that never ended`],
    'a message begun but never finished does not hold it open',
  );
  t.equal(partial.answers.length, 0, 'nothing was answered');

  // A client that never reads: the answer, and then the end, cannot leave; the stream is reset instead of
  // holding its connection open forever.
  const deaf = connect(t, idling).request({ ':method': 'POST', ':path': EXECUTE_STREAM, 'content-type': 'application/grpc', te: 'trailers' });
  deaf.on('error', () => {});
  deaf.write(call(1, { code: 'return "x".repeat(1_000_000)' }));
  await within(Promise.race([once(deaf, 'aborted'), once(deaf, 'close')]), 'the stream of a client that does not read was not reset');
  deaf.resume();
  if (!deaf.closed || !deaf.destroyed) await within(once(deaf, 'close'), 'the reset stream did not close');
  t.equal(deaf.rstCode, http2.constants.NGHTTP2_CANCEL, 'a client that does not read: RST_STREAM CANCEL once ended and stuck for the idle timeout');

  await stillServes(t, idling);
});

t.test('@grpc/grpc-js as a bidi client', async (t) => {
  const client = new grpc.Client(new URL(runner.url).host, grpc.credentials.createInsecure());
  t.teardown(() => client.close());
  const stream = client.makeBidiStreamRequest(
    EXECUTE_STREAM,
    (m: ExecuteStreamRequest) => Buffer.from(toBinary(ExecuteStreamRequestSchema, m)),
    (b: Buffer) => fromBinary(ExecuteStreamResponseSchema, b),
    new grpc.Metadata(),
    {},
  );
  const answers: ExecuteStreamResponse[] = [];
  stream.on('data', (a: ExecuteStreamResponse) => answers.push(a));
  stream.on('error', () => {}); // the status says it
  const status = new Promise<grpc.StatusObject>((resolve) => stream.on('status', resolve));
  stream.write(create(ExecuteStreamRequestSchema, { callId: 1, request: { code: 'await ld.wait(200); return "one"' } }));
  stream.write(create(ExecuteStreamRequestSchema, { callId: 2, request: { code: 'return data.input.x', input: { x: 'two' } } }));
  stream.write(create(ExecuteStreamRequestSchema, { callId: 3, request: { code: '' } }));
  stream.end();
  const end = await within(status, 'grpc-js saw no status');
  t.equal(end.code, grpc.status.OK, 'status OK');
  t.equal(answers.length, 3, 'three answers');
  t.equal(answers[2]?.callId, 1, 'the waiting call, written first, answered last');
  const byId = new Map(answers.map((a) => [a.callId, a]));
  t.equal(resultOf(byId.get(1)), 'one');
  t.equal(resultOf(byId.get(2)), 'two');
  t.same(statusOf(byId.get(3)), [Code.InvalidArgument, 'code is empty: send a JavaScript body that ends with `return`'], 'a refused call is an answer');
});
