/**
 * `RunnerService.ExecuteStream` in binary gRPC on a bare node:http2 stream: many Execute calls on one
 * long-lived stream (runner.proto). Each call is served by the same route as a unary Execute
 * (execute-route.ts: token, deadline, pool, metrics, one status per failure) through a {@link UnaryCall}
 * of its own, so a call behaves as it would on Execute; only its bytes travel differently.
 *
 * Why: a unary call over HTTP/2 costs a stream (HEADERS both ways, trailers, stream objects, timers) —
 * ~120 µs of CPU per call between a node:http2 client and server on this project's 2-core machine, against
 * ~10 µs for a message each way on a stream that stays open (bench/webhook.ts part 2 is CPU-bound, and the
 * executor makes one call per workflow node).
 *
 * Limits, since one stream can carry any number of calls:
 * - the token is checked when the stream opens (UNAUTHENTICATED ends it at once, nothing is read), and
 *   again by the route for every call;
 * - a message over the request limit ends the stream (RESOURCE_EXHAUSTED) before it is read; a message
 *   that cannot be read, a call id of 0 or one still in flight ends it with INVALID_ARGUMENT: the client
 *   does not follow the protocol, and its calls in flight are cancelled;
 * - at most `maxCallsInFlight` calls at once per stream; beyond that a call is answered RESOURCE_EXHAUSTED
 *   (as a full pool queue is), so the client tries another runner;
 * - answers wait in memory only while the client reads them: above {@link WRITE_BUFFER_HIGH} bytes not yet
 *   taken by the client, the stream is paused (no new calls read) until they drain;
 * - a client that resets the stream or goes away cancels its calls in the pool.
 *
 * Answers written in one turn of the event loop leave in one write. While the runner drains, new calls are
 * answered UNAVAILABLE, and the stream ends with UNAVAILABLE once its calls in flight are answered; a
 * client that half-closes gets OK once its calls are answered.
 * Tests: test/runner/execute-stream.test.ts.
 */
import http2 from 'node:http2';
import type { IncomingHttpHeaders } from 'node:http';
import { Code } from '@connectrpc/connect';
import { decodeStreamRequest, encodeStreamResponse, encodeStreamStatus, GrpcMessageReader, StreamWireError } from '../../src/protobuf/execute-stream-wire.js';
import { UNAUTHENTICATED_MESSAGE, type TokenCheck } from './bearer-auth.js';
import { MAX_TIMER_MS } from './call-deadline.js';
import type { ExecuteWireForm } from './execute-route.js';
import { encodeGrpcMessage } from './grpc-message-encoding.js';
import { GrpcUnaryCall } from './grpc-unary-call.js';
import type { CallRefusal, UnaryCall } from './unary-call.js';

/** Answers not yet taken by the client, in bytes, above which no new calls are read. */
export const WRITE_BUFFER_HIGH = 16 * 1024 * 1024;

export interface ExecuteStreamOptions {
  /** Serves one call (createExecuteRoute). */
  route: (call: UnaryCall, headers: IncomingHttpHeaders, form: ExecuteWireForm) => void;
  tokenCheck: TokenCheck | undefined;
  /** The largest ExecuteRequest (the route's limit); the envelope may add a few bytes. */
  maxRequestBytes: number;
  maxCallsInFlight: number;
}

/** gRPC's OK, which connect's Code does not name. */
const OK = 0;

/** The message the runner gives for calls and streams it no longer takes while it drains. */
export const DRAINING_MESSAGE = 'the runner is shutting down: try another runner';

/** One open ExecuteStream; {@link drain} is called when the runner starts shutting down. */
export interface OpenExecuteStream {
  drain(): void;
  /** Resolves once the stream is gone (its last answers and status written, or it was reset). */
  readonly closed: Promise<void>;
}

/**
 * Serves `stream` (its headers already checked by isPlainGrpcExecuteStream). Returns the stream's handle,
 * or undefined when it was refused on its headers. `onClosed` runs once the stream is gone.
 */
export function serveExecuteStream(
  stream: http2.ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  options: ExecuteStreamOptions,
  onClosed: (s: OpenExecuteStream) => void,
): OpenExecuteStream | undefined {
  if (options.tokenCheck && !options.tokenCheck(headers.authorization)) {
    // Answered as a unary call would be: Trailers-Only, nothing read.
    new GrpcUnaryCall(stream).fail(Code.Unauthenticated, UNAUTHENTICATED_MESSAGE);
    return undefined;
  }
  // A stream error (a reset with an error code) is an 'error' event: unhandled, it would end the process.
  stream.on('error', () => {});
  const served = new ExecuteStream(stream, headers, options);
  void served.closed.then(() => onClosed(served));
  return served;
}

class ExecuteStream implements OpenExecuteStream {
  readonly closed: Promise<void>;
  readonly #calls = new Map<number, StreamCall>();
  readonly #reader: GrpcMessageReader;
  #pending: Buffer[] = [];
  #flushScheduled = false;
  #draining = false;
  #clientDone = false;
  #ended = false;

  constructor(
    private readonly stream: http2.ServerHttp2Stream,
    private readonly headers: IncomingHttpHeaders,
    private readonly options: ExecuteStreamOptions,
  ) {
    // Gone (ended, reset or its connection lost): every call still in flight is cancelled in the pool.
    this.closed = new Promise((resolve) =>
      stream.once('close', () => {
        this.#ended = true;
        this.#abandonCalls();
        resolve();
      }),
    );
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    // The envelope around a request: a call id, a timeout, tags and lengths (runner.proto).
    this.#reader = new GrpcMessageReader(
      options.maxRequestBytes + 32,
      (body) => this.#onMessage(body),
      (kind, text) => this.#end(kind === 'too-large' ? Code.ResourceExhausted : Code.Internal, text),
    );
    stream.on('data', (chunk: Buffer) => {
      if (!this.#ended) this.#reader.push(chunk);
    });
    stream.once('end', () => {
      this.#clientDone = true;
      const partial = this.#reader.partial;
      if (partial > 0) return this.#end(Code.InvalidArgument, `protocol error: the stream ended inside a message (${partial} bytes of it)`);
      this.#endIfIdle();
    });
    stream.on('drain', () => {
      if (!this.#ended && this.stream.isPaused()) this.stream.resume();
    });
  }

  drain(): void {
    this.#draining = true;
    this.#endIfIdle();
  }

  /** Every call still in flight will not be answered: the route cancels each in the pool. */
  #abandonCalls(): void {
    const calls = [...this.#calls.values()];
    this.#calls.clear();
    for (const call of calls) call.abandon();
  }

  #onMessage(body: Uint8Array): void {
    if (this.#ended) return;
    let m;
    try {
      m = decodeStreamRequest(body);
    } catch (err) {
      if (!(err instanceof StreamWireError)) throw err;
      return this.#end(Code.InvalidArgument, `protocol error: a message cannot be read: ${err.message}`);
    }
    if (m.callId === 0) return this.#end(Code.InvalidArgument, 'protocol error: a message has no call_id (or 0)');
    if (m.cancel) {
      const call = this.#calls.get(m.callId);
      if (call) {
        this.#calls.delete(m.callId);
        call.cancelledByClient();
      }
      return;
    }
    if (this.#calls.has(m.callId)) return this.#end(Code.InvalidArgument, `protocol error: call_id ${m.callId} is already in flight on this stream`);
    if (m.request === undefined) return this.answer(m.callId, encodeStreamStatus(m.callId, Code.InvalidArgument, 'the message has no request'));
    if (this.#draining) return this.answer(m.callId, encodeStreamStatus(m.callId, Code.Unavailable, DRAINING_MESSAGE));
    if (this.#calls.size >= this.options.maxCallsInFlight) {
      const text = `this stream has ${this.#calls.size} calls in flight, the most a stream may have: try another runner, or another stream`;
      return this.answer(m.callId, encodeStreamStatus(m.callId, Code.ResourceExhausted, text));
    }
    const call = new StreamCall(this, m.callId, m.request);
    this.#calls.set(m.callId, call);
    const ms = m.timeoutMs === 0 || m.timeoutMs > MAX_TIMER_MS ? undefined : m.timeoutMs;
    this.options.route(call, this.headers, { encoding: 'proto', grpcFramed: false, timeout: { ok: true, ms } });
  }

  /** Sends a call's answer (with the others of this turn) and forgets the call. */
  answer(callId: number, framedAnswer: Buffer, call?: StreamCall): void {
    if (call !== undefined && this.#calls.get(callId) === call) this.#calls.delete(callId);
    if (this.#ended) return;
    this.#pending.push(framedAnswer);
    if (!this.#flushScheduled) {
      this.#flushScheduled = true;
      setImmediate(this.#flush);
    }
  }

  readonly #flush = (): void => {
    this.#flushScheduled = false;
    const pending = this.#pending;
    this.#pending = [];
    if (pending.length === 0 || this.stream.destroyed || this.stream.closed) return;
    this.stream.write(pending.length === 1 ? pending[0]! : Buffer.concat(pending));
    if (this.stream.writableLength > WRITE_BUFFER_HIGH) this.stream.pause();
    this.#endIfIdle();
  };

  /** Ends the stream once nothing is in flight and either the client half-closed or the runner drains. */
  #endIfIdle(): void {
    if (this.#ended || this.#calls.size > 0 || this.#pending.length > 0) return;
    if (this.#clientDone) this.#end(OK, '');
    else if (this.#draining) this.#end(Code.Unavailable, DRAINING_MESSAGE);
  }

  /** Ends the stream with `code`: answers already queued go first, calls still in flight are cancelled. */
  #end(code: Code | typeof OK, message: string): void {
    if (this.#ended) return;
    this.#ended = true;
    const stream = this.stream;
    const pending = this.#pending;
    this.#pending = [];
    this.#abandonCalls();
    if (stream.destroyed || stream.closed) return;
    stream.pause();
    const trailers: http2.OutgoingHttpHeaders = { 'grpc-status': String(code) };
    if (message) trailers['grpc-message'] = encodeGrpcMessage(message);
    // The client may still be sending: it is told to stop (RFC 9113 §8.1) once the answer is out, trailers
    // included. Not on 'finish': it comes before nghttp2 asks for the trailers, and a RST_STREAM submitted
    // then drops them (the client saw the stream reset with no grpc-status). Nor inside 'wantTrailers',
    // which runs within nghttp2's send loop, where the RST_STREAM would still go out ahead of the
    // trailers: on the next turn, once they are out.
    const resetAfter = !this.#clientDone;
    stream.once('wantTrailers', () => {
      stream.sendTrailers(trailers);
      if (resetAfter) setImmediate(() => stream.close(http2.constants.NGHTTP2_NO_ERROR));
    });
    stream.end(pending.length === 0 ? undefined : Buffer.concat(pending));
  }
}

/** One call of an ExecuteStream, as the Execute route sees it. */
class StreamCall implements UnaryCall {
  answered = false;
  #onAbandoned: (() => void) | undefined;

  constructor(
    private readonly owner: ExecuteStream,
    private readonly callId: number,
    private readonly request: Uint8Array,
  ) {}

  read(maxBytes: number, onMessage: (message: Uint8Array) => void, onRefused: (refusal: CallRefusal) => void): void {
    if (this.request.byteLength > maxBytes) {
      onRefused({ code: Code.ResourceExhausted, message: `the request message is ${this.request.byteLength} bytes, over the limit of ${maxBytes} bytes` });
      return;
    }
    // A view into the message's own buffer, which holds nothing else of use: it may be transferred to a worker.
    onMessage(this.request);
  }

  reply(body: Uint8Array): void {
    if (this.answered) return;
    this.answered = true;
    this.owner.answer(this.callId, encodeStreamResponse(this.callId, body), this);
  }

  fail(code: Code, message: string): boolean {
    if (this.answered) return false;
    this.answered = true;
    this.owner.answer(this.callId, encodeStreamStatus(this.callId, code, message), this);
    return true;
  }

  onAbandoned(listener: () => void): void {
    this.#onAbandoned = listener;
  }

  /** The client cancelled the call: the pool call stops, the client gets CANCELLED. */
  cancelledByClient(): void {
    if (this.answered) return;
    this.abandon();
    this.owner.answer(this.callId, encodeStreamStatus(this.callId, Code.Canceled, 'the call was cancelled by the client'));
  }

  /** The call will not be answered (the stream is gone or ended): the route cancels it in the pool. */
  abandon(): void {
    if (this.answered) return;
    this.answered = true;
    this.#onAbandoned?.();
  }
}
