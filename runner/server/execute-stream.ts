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
 * - at most `maxCallsInFlight` calls at once per stream (the runner's LDBOX_RUNNER_MAX_INFLIGHT, stated in the
 *   response header {@link MAX_CALLS_HEADER}); beyond that a call is answered RESOURCE_EXHAUSTED
 *   (as a full pool queue is), so the client tries another runner;
 * - answers wait in memory only while the client reads them: above {@link WRITE_BUFFER_HIGH} bytes not yet
 *   taken by the client, the stream is paused (no new calls read) until they drain;
 * - a client that resets the stream or goes away cancels its calls in the pool.
 *
 * How long it lives: as long as it is used. Its request body never ends, so no timeout meant for a request
 * body applies to it (runner-server.ts exempts it from LDBOX_BODY_TIMEOUT_MS, src/http/connection-limits.ts):
 * that timer used to reset every ExecuteStream 30 s after it opened, and every call in flight on it failed
 * (and ran again elsewhere). Each call has its own deadline instead, and the stream ends itself, with OK
 * and "the stream was idle for N ms", once it has had no call in flight for `idleTimeoutMs`
 * (LDBOX_IDLE_TIMEOUT_MS): the timer starts when the last answer has been written (or when the stream
 * opens) and stops when a call arrives; a message begun but never finished does not hold it open either.
 * Ended so, the runner had no call of the stream in flight: a call the client sent meanwhile was never
 * started, and may be sent again on a new stream (src/executor/execute-stream-client.ts does). Once the
 * stream has ended, its HTTP/2 session idles out as any other (LDBOX_IDLE_TIMEOUT_MS again).
 *
 * Answers written in one turn of the event loop leave in one write. While the runner drains, new calls are
 * answered UNAVAILABLE, and the stream ends with UNAVAILABLE once its calls in flight are answered; a
 * client that half-closes gets OK once its calls are answered. A stream the runner ended whose client
 * does not take the end (it does not read) is reset after `idleTimeoutMs` more.
 * Tests: test/runner/execute-stream.test.ts, test/executor/execute-stream-client.test.ts.
 */
import http2 from 'node:http2';
import type { IncomingHttpHeaders } from 'node:http';
import { Code } from '@connectrpc/connect';
import {
  decodeStreamRequest,
  encodeStreamResponse,
  encodeStreamStatus,
  GrpcMessageReader,
  MAX_CALLS_HEADER,
  StreamWireError,
} from '../../src/protobuf/execute-stream-wire.js';
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
  /** A stream with no call in flight this long ends (OK); a stream ended and not gone this long later is reset. */
  idleTimeoutMs: number;
}

/** gRPC's OK, which connect's Code does not name. */
const OK = 0;

/** The message the runner gives for calls and streams it no longer takes while it drains. */
export const DRAINING_MESSAGE = 'the runner is shutting down: try another runner';

/** The grpc-message of a stream ended (OK) for having had no call in flight for `ms`. */
export function idleMessage(ms: number, partialBytes = 0): string {
  const text = `the stream was idle for ${ms} ms`;
  return partialBytes === 0 ? text : `${text}, with ${partialBytes} bytes of a message that never ended`;
}

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
  /** Runs while no call is in flight: at its end the stream ends (see the module's comment). */
  #idle: NodeJS.Timeout | undefined;

  constructor(
    private readonly stream: http2.ServerHttp2Stream,
    private readonly headers: IncomingHttpHeaders,
    private readonly options: ExecuteStreamOptions,
  ) {
    // Gone (ended, reset or its connection lost): every call still in flight is cancelled in the pool.
    this.closed = new Promise((resolve) =>
      stream.once('close', () => {
        this.#ended = true;
        clearTimeout(this.#idle);
        this.#abandonCalls();
        resolve();
      }),
    );
    stream.respond({ ':status': 200, 'content-type': 'application/grpc', [MAX_CALLS_HEADER]: String(options.maxCallsInFlight) }, { waitForTrailers: true });
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
    this.#armIdle();
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
    clearTimeout(this.#idle);
    this.#idle = undefined;
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

  /**
   * Once nothing is in flight: ends the stream if the client half-closed or the runner drains, else starts
   * the idle timer.
   */
  #endIfIdle(): void {
    if (this.#ended || this.#calls.size > 0 || this.#pending.length > 0) return;
    if (this.#clientDone) this.#end(OK, '');
    else if (this.#draining) this.#end(Code.Unavailable, DRAINING_MESSAGE);
    else this.#armIdle();
  }

  /** Starts the idle timer, unless it runs already (a message that starts no call does not restart it). */
  #armIdle(): void {
    if (this.#ended || this.#idle !== undefined) return;
    const ms = this.options.idleTimeoutMs;
    this.#idle = setTimeout(() => {
      this.#idle = undefined;
      // Answers still queued go out before the trailers (#end); a call in flight clears the timer.
      if (this.#calls.size === 0) this.#end(OK, idleMessage(ms, this.#reader.partial));
    }, ms);
    this.#idle.unref();
  }

  /** Ends the stream with `code`: answers already queued go first, calls still in flight are cancelled. */
  #end(code: Code | typeof OK, message: string): void {
    if (this.#ended) return;
    this.#ended = true;
    clearTimeout(this.#idle);
    const stream = this.stream;
    const pending = this.#pending;
    this.#pending = [];
    this.#abandonCalls();
    if (stream.destroyed || stream.closed) return;
    stream.pause();
    // A client that does not read (its flow-control window stays shut) would keep the stream, and with it
    // its session, open forever: it is reset once it has had as long again as an idle stream.
    const stuck = setTimeout(() => {
      if (!stream.destroyed && !stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL);
    }, this.options.idleTimeoutMs);
    stuck.unref();
    stream.once('close', () => clearTimeout(stuck));
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
