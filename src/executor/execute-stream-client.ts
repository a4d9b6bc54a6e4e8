/**
 * The executor's side of `RunnerService.ExecuteStream` (runner.proto): its Execute calls to one runner
 * travel as messages on one long-lived gRPC stream instead of an HTTP/2 stream each, which cost the
 * executor's and the runner's main threads ~120 µs of CPU per call (runner/server/execute-stream.ts).
 *
 * The contract of a call is {@link GrpcUnaryClient.call}'s: it resolves with the ExecuteResponse's bytes or
 * rejects with a ConnectError — the call's own status (its answer), DEADLINE_EXCEEDED on the local timer,
 * CANCELED on the signal (both also tell the runner, which stops the call), UNAVAILABLE when the stream or
 * its connection fails (the calls on it fail together, as the calls of a dropped connection do).
 *
 * - One stream per runner, opened on the first call and again after it ends; it shares the runner's HTTP/2
 *   session (and its pings, idle timeout and TLS) with the unary client.
 * - A runner that does not serve ExecuteStream (an older version: UNIMPLEMENTED, or HTTP 404) is marked
 *   {@link unsupported}; the calls it refused reject with {@link StreamUnsupportedError}, and
 *   runner-clients.ts sends them, and every later call, as unary Execute.
 * - Call ids count up (wrapping at 2^32, skipping 0); messages written in one turn of the event loop leave
 *   in one write.
 * - A call's deadline runs from when it is sent to the runner: a call that waits here for room on the stream
 *   (see {@link OpenStream}) is not charged the wait. It counts as in flight on the connection meanwhile
 *   (pings, idle timeout), and its signal cancels it.
 * - The runner ends a stream with no call in flight once it is idle (LDBOX_IDLE_TIMEOUT_MS), with OK; it
 *   ends a stream OK only when it has no call of it in flight (runner.proto). A call still waiting for its
 *   answer when a stream ends OK was sent after the runner decided to end it, and was never started: it is
 *   sent again, once, on a new stream (not failed, which would cool the runner down and send the call
 *   elsewhere for nothing).
 */
import http2 from 'node:http2';
import { Code, ConnectError } from '@connectrpc/connect';
import { RunnerService } from '../gen/ldbox/runner/v1/runner_pb.js';
import { decodeStreamResponse, encodeStreamCall, encodeStreamCancel, GrpcMessageReader, StreamWireError } from '../protobuf/execute-stream-wire.js';
import { MAX_CALLS_HEADER } from '../protobuf/execute-stream-wire.js';
import { codeOf, fromSystemError, type GrpcUnaryClient, grpcStatusError } from './grpc-unary-client.js';

/** `/ldbox.runner.v1.RunnerService/ExecuteStream`. */
const EXECUTE_STREAM_PATH = `/${RunnerService.typeName}/${RunnerService.method.executeStream.name}`;

/** The runner does not serve ExecuteStream: send the call as unary Execute (it was not run). */
export class StreamUnsupportedError extends Error {
  override readonly name = 'StreamUnsupportedError';
}

interface PendingCall {
  resolve: (response: Uint8Array) => void;
  reject: (err: Error) => void;
  /** The serialized ExecuteRequest (the caller's own bytes, not a copy), kept until the call is answered. */
  readonly request: Uint8Array;
  /** Its id on {@link stream}. */
  callId: number;
  /** The stream the call is on (a new one when it is sent again). */
  stream: OpenStream;
  /** Sent to the runner on {@link stream} (else it waits there for room: see {@link OpenStream}). */
  sent: boolean;
  /** Sent again on a new stream already (it is not, twice). */
  resent: boolean;
  /** Called as the call is sent: starts its deadline (the first time); the `timeout_ms` the runner is given. */
  sending(): number;
}

/**
 * Calls in flight on a stream when the runner's SETTINGS set no SETTINGS_MAX_CONCURRENT_STREAMS (ldbox's
 * runners always do): RFC 9113's recommended least value.
 */
const IN_FLIGHT_UNLIMITED = 100;

export interface ExecuteStreamClientOptions {
  /** Headers of the stream (authorization). */
  headers: Record<string, string>;
  /** The largest response accepted; a larger answer fails the stream. */
  readMaxBytes: number;
}

export class ExecuteStreamClient {
  #stream: OpenStream | undefined;
  #nextId = 1;
  #unsupported = false;

  constructor(
    private readonly connection: GrpcUnaryClient,
    private readonly opts: ExecuteStreamClientOptions,
  ) {
    // An idle connection closes; its stream must end first, or the session would wait for it.
    connection.onIdle(() => this.#stream?.endIfIdle());
  }

  /** The runner answered that it does not serve ExecuteStream: use unary Execute. */
  get unsupported(): boolean {
    return this.#unsupported;
  }

  /** Calls Execute with the serialized request on the stream; resolves with the serialized response. */
  call(request: Uint8Array, opts: { timeoutMs: number; signal?: AbortSignal }): Promise<Uint8Array> {
    if (opts.signal?.aborted) return Promise.reject(new ConnectError('the call was cancelled', Code.Canceled));
    let stream: OpenStream;
    try {
      stream = this.#open();
    } catch (err) {
      return Promise.reject(fromSystemError(err as Error));
    }
    return new Promise<Uint8Array>((resolve, reject) => {
      // The deadline starts when the call is sent (sending()); a cancel counts from now.
      const tracked = this.connection.track(
        opts,
        (err) => {
          if (!tracked.settle()) return;
          call.stream.giveUp(call.callId);
          reject(err);
        },
        'later',
      );
      let sentAt: number | undefined;
      const call: PendingCall = {
        resolve: (response) => {
          if (tracked.settle()) resolve(response);
        },
        reject: (err) => {
          if (tracked.settle()) reject(err);
        },
        request,
        callId: 0,
        stream,
        sent: false,
        resent: false,
        sending: () => {
          tracked.startDeadline();
          sentAt ??= performance.now();
          // The runner's deadline is the local one rounded up, so the local timer speaks first.
          return Math.max(1, Math.ceil(opts.timeoutMs - (performance.now() - sentAt)));
        },
      };
      this.#start(stream, call);
    });
  }

  /** Puts `call` on `stream` under an id of its own there. */
  #start(stream: OpenStream, call: PendingCall): void {
    call.stream = stream;
    call.callId = this.#takeId(stream);
    call.sent = false;
    stream.start(call);
  }

  /**
   * Calls a stream that ended OK left unanswered: the runner never started them (it ends a stream OK only with
   * none in flight), so each is sent again on a new stream — once; a call it happens to a second time fails.
   */
  #restart(calls: PendingCall[], err: ConnectError): void {
    for (const call of calls) {
      if (call.resent) {
        call.reject(err);
        continue;
      }
      call.resent = true;
      let stream: OpenStream;
      try {
        stream = this.#open();
      } catch (e) {
        call.reject(fromSystemError(e as Error));
        continue;
      }
      this.#start(stream, call);
    }
  }

  /** Ends the stream (calls in flight fail UNAVAILABLE). */
  close(): void {
    this.#stream?.fail(new ConnectError('the executor closed its runner connections', Code.Unavailable));
  }

  #open(): OpenStream {
    if (this.#stream && !this.#stream.ended) return this.#stream;
    const session = this.connection.session();
    const stream = new OpenStream(session, this.opts, (err, unstarted) => {
      if (this.#stream === stream) this.#stream = undefined;
      if (err instanceof StreamUnsupportedError) this.#unsupported = true;
      if (unstarted.length > 0) this.#restart(unstarted, err as ConnectError);
    });
    this.#stream = stream;
    return stream;
  }

  /** The next call id not in flight on `stream` (ids wrap at 2^32 and skip 0). */
  #takeId(stream: OpenStream): number {
    let id = this.#nextId;
    while (stream.has(id)) id = id === 0xffff_ffff ? 1 : id + 1;
    this.#nextId = id === 0xffff_ffff ? 1 : id + 1;
    return id;
  }
}

/**
 * One ExecuteStream on the wire and the calls waiting for their answers on it. At most as many calls are in
 * flight as the runner takes on one stream — its SETTINGS_MAX_CONCURRENT_STREAMS, the number of unary calls
 * the connection would carry — and the rest wait here in order, as unary calls wait for a free HTTP/2
 * stream; beyond it the runner would answer RESOURCE_EXHAUSTED.
 */
class OpenStream {
  readonly #calls = new Map<number, PendingCall>();
  #waiting: number[] = [];
  #waitingHead = 0;
  readonly #stream: http2.ClientHttp2Stream;
  #inFlight = 0;
  #limit: number;
  /** The runner's own statement of the calls a stream takes at once (MAX_CALLS_HEADER), once its headers came. */
  #stated: number | undefined;
  #pending: Buffer[] = [];
  #flushScheduled = false;
  ended = false;

  constructor(
    session: http2.ClientHttp2Session,
    opts: ExecuteStreamClientOptions,
    /** The stream is done; `unstarted`: calls still waiting that the runner never started (an OK end), to send again. */
    private readonly onEnded: (err: Error, unstarted: PendingCall[]) => void,
  ) {
    this.#limit = inFlightLimit(session.remoteSettings);
    session.on('remoteSettings', this.#onSettings);
    const stream = (this.#stream = session.request({
      ':method': 'POST',
      ':path': EXECUTE_STREAM_PATH,
      'content-type': 'application/grpc+proto',
      te: 'trailers',
      ...opts.headers,
    }));
    stream.once('close', () => session.off('remoteSettings', this.#onSettings));
    let headers: http2.IncomingHttpHeaders | undefined;
    let trailers: http2.IncomingHttpHeaders | undefined;
    const reader = new GrpcMessageReader(
      opts.readMaxBytes + 32,
      (body) => this.#onAnswer(body),
      (_kind, text) => this.#abort(new ConnectError(`the runner's answer cannot be read: ${text}`, Code.ResourceExhausted)),
    );
    stream.on('response', (h) => {
      headers = h;
      const stated = Number(h[MAX_CALLS_HEADER]);
      if (Number.isSafeInteger(stated) && stated > 0) {
        this.#stated = stated;
        this.#limit = stated;
        this.#pump();
      }
    });
    stream.on('trailers', (h) => {
      trailers = h;
    });
    stream.on('data', (chunk: Buffer) => reader.push(chunk));
    stream.on('error', (err: Error & { code?: string }) => this.fail(fromSystemError(err)));
    stream.on('close', () => {
      if (this.ended) return;
      if (headers === undefined) {
        this.fail(new ConnectError(`the stream closed without an answer (HTTP/2 code ${stream.rstCode})`, Code.Unavailable));
        return;
      }
      const status = grpcStatusError(headers, trailers);
      if (status === undefined) {
        // OK: the runner had no call of this stream in flight (the stream was idle): those still waiting
        // here were sent after it decided to end the stream, and were never started.
        this.#end(new ConnectError('the runner ended the stream (OK) before it read the call', Code.Unavailable));
        return;
      }
      if (status.code === Code.Unimplemented) {
        this.fail(new StreamUnsupportedError(`the runner does not serve ExecuteStream: ${status.rawMessage}`));
        return;
      }
      // Calls still waiting when the stream ends with an error were not answered: as a dropped connection.
      const why = `the runner ended the stream (${Code[status.code]}): ${status.rawMessage}`;
      this.fail(new ConnectError(why, status.code === Code.Unauthenticated ? Code.Unauthenticated : Code.Unavailable));
    });
  }

  has(callId: number): boolean {
    return this.#calls.has(callId);
  }

  /** Starts a call: sent now if the runner has room for it, else once an earlier call is answered. */
  start(call: PendingCall): void {
    this.#calls.set(call.callId, call);
    this.#waiting.push(call.callId);
    this.#pump();
  }

  /** Forgets a call given up here; the runner is told to stop it if it has it. */
  giveUp(callId: number): void {
    const call = this.#calls.get(callId);
    if (call === undefined) return;
    this.#calls.delete(callId);
    if (!call.sent) return; // still waiting here: #pump skips it
    this.#send(encodeStreamCancel(callId));
    this.#inFlight--;
    this.#pump();
  }

  readonly #onSettings = (settings: http2.Settings): void => {
    if (this.#stated !== undefined) return;
    this.#limit = inFlightLimit(settings);
    this.#pump();
  };

  /** Sends waiting calls while the runner has room. */
  #pump(): void {
    while (this.#inFlight < this.#limit && this.#waitingHead < this.#waiting.length) {
      const callId = this.#waiting[this.#waitingHead++]!;
      if (this.#waitingHead === this.#waiting.length) {
        this.#waiting = [];
        this.#waitingHead = 0;
      } else if (this.#waitingHead > 1024 && this.#waitingHead * 2 > this.#waiting.length) {
        this.#waiting = this.#waiting.slice(this.#waitingHead);
        this.#waitingHead = 0;
      }
      const call = this.#calls.get(callId);
      if (call === undefined || call.sent) continue;
      call.sent = true;
      this.#inFlight++;
      this.#send(encodeStreamCall(callId, call.request, call.sending()));
    }
  }

  /** Queues a framed message; the messages of one turn of the event loop leave in one write. */
  #send(message: Buffer): void {
    if (this.ended) return;
    this.#pending.push(message);
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    setImmediate(() => {
      this.#flushScheduled = false;
      const pending = this.#pending;
      this.#pending = [];
      if (this.ended || this.#stream.destroyed || this.#stream.closed) return;
      this.#stream.write(pending.length === 1 ? pending[0]! : Buffer.concat(pending));
    });
  }

  /** Half-closes the stream if no call waits on it (the connection idles out). */
  endIfIdle(): void {
    if (this.ended || this.#calls.size > 0) return;
    this.ended = true;
    this.onEnded(new ConnectError('the connection idled out', Code.Unavailable), []);
    this.#stream.end();
  }

  /** Every call waiting fails with `err`; the stream is done. */
  fail(err: Error): void {
    if (this.ended && this.#calls.size === 0) return;
    this.ended = true;
    this.onEnded(err, []);
    const calls = [...this.#calls.values()];
    this.#calls.clear();
    for (const call of calls) call.reject(err);
  }

  /** The stream is done, and the runner started none of the calls still waiting: they go back to the client. */
  #end(err: ConnectError): void {
    this.ended = true;
    const calls = [...this.#calls.values()];
    this.#calls.clear();
    this.onEnded(err, calls);
  }

  /** Fails every call and resets the stream (an answer that cannot be read: the rest cannot be trusted). */
  #abort(err: ConnectError): void {
    this.fail(err);
    if (!this.#stream.closed) this.#stream.close(http2.constants.NGHTTP2_CANCEL);
  }

  #onAnswer(body: Uint8Array): void {
    let m;
    try {
      m = decodeStreamResponse(body);
    } catch (err) {
      if (!(err instanceof StreamWireError)) throw err;
      return this.#abort(new ConnectError(`the runner's answer cannot be read: ${err.message}`, Code.Internal));
    }
    const call = this.#calls.get(m.callId);
    if (call === undefined || !call.sent) return; // given up here (deadline, cancel): its answer is not wanted
    this.#calls.delete(m.callId);
    this.#inFlight--;
    this.#pump();
    if (m.response !== undefined) call.resolve(m.response);
    else if (m.status !== undefined && m.status.code !== 0) call.reject(new ConnectError(m.status.message, codeOf(m.status.code)));
    else call.reject(new ConnectError('the runner answered the call with neither a response nor a status', Code.Internal));
  }
}

/**
 * The calls a stream may have in flight by the runner's settings, until the stream's response headers state
 * the runner's own number (MAX_CALLS_HEADER; an older runner does not): none until the settings arrive (with
 * the runner's first frame, right after the connection opens), so that a first burst of calls is not refused.
 */
function inFlightLimit(settings: http2.Settings): number {
  const advertised = settings.maxConcurrentStreams;
  if (advertised === undefined) return 0;
  return advertised >= 0xffff_ffff ? IN_FLIGHT_UNLIMITED : advertised;
}
