/**
 * A unary gRPC call over node:http2, without connect-es's streaming machinery: the executor makes one
 * `Execute` per node, and connect-node's generic client (async iterables, an AbortController, header
 * objects converted both ways and a ConnectError and DOMException built on every successful call) took a
 * quarter of the executor's CPU per execution (bench/webhook.ts part 2, `--cpu-prof`).
 *
 * What it keeps of connect-node's client: one HTTP/2 session per runner, reused and re-opened when it
 * closes, errs or idles out (`idleTimeoutMs`); a ping every `pingIntervalMs` while calls are in flight, so a
 * dead connection is found; `grpc-timeout` and a local deadline (DEADLINE_EXCEEDED); cancellation by
 * AbortSignal (CANCELED, RST_STREAM CANCEL); the gRPC status and message from the trailers (or a
 * trailers-only answer); HTTP statuses and connection failures mapped as the gRPC spec maps them
 * (refused or reset connections are UNAVAILABLE, with the system error as `cause`); `readMaxBytes`.
 * Errors are ConnectErrors, so runner-clients.ts treats them as before.
 */
import http2 from 'node:http2';
import { Code, ConnectError } from '@connectrpc/connect';

export interface GrpcUnaryClientOptions {
  /** Headers sent with every call (authorization). */
  headers?: Record<string, string>;
  readMaxBytes: number;
  pingIntervalMs: number;
  idleTimeoutMs: number;
  /** node:http2 options of a `https://` base URL (CA, client certificate). */
  tls?: http2.SecureClientSessionOptions;
}

const { NGHTTP2_CANCEL } = http2.constants;

/** The gRPC code of an HTTP status without a gRPC status (the gRPC spec's table). */
function codeOfHttpStatus(status: number): Code {
  switch (status) {
    case 400:
      return Code.Internal;
    case 401:
      return Code.Unauthenticated;
    case 403:
      return Code.PermissionDenied;
    case 404:
      return Code.Unimplemented;
    case 429:
    case 502:
    case 503:
    case 504:
      return Code.Unavailable;
    default:
      return Code.Unknown;
  }
}

/** Connection-level failures: the runner could not be reached or went away (try another). */
const UNREACHABLE =
  /^(ECONNREFUSED|ECONNRESET|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EPIPE|ERR_HTTP2_GOAWAY_SESSION|ERR_HTTP2_SESSION_ERROR|ERR_HTTP2_STREAM_CANCEL|ERR_HTTP2_INVALID_SESSION|ERR_HTTP2_STREAM_ERROR|ERR_HTTP2_ERROR)$/;

export function fromSystemError(err: Error & { code?: string }): ConnectError {
  // A stream pending on a session that failed (refused, TLS handshake) says "The pending stream has been
  // canceled" with the session's error as its cause: that cause is the reason to report.
  if (err.code === 'ERR_HTTP2_STREAM_CANCEL' && err.cause instanceof Error) return fromSystemError(err.cause as Error & { code?: string });
  const code = typeof err.code === 'string' && UNREACHABLE.test(err.code) ? Code.Unavailable : Code.Internal;
  return new ConnectError(err.message, code, undefined, undefined, err);
}

/**
 * The error a call's gRPC status says (from the trailers, or a trailers-only answer's headers); undefined
 * for OK. An HTTP status without a gRPC status is mapped as the gRPC spec maps it.
 */
export function grpcStatusError(headers: http2.IncomingHttpHeaders, trailers: http2.IncomingHttpHeaders | undefined): ConnectError | undefined {
  const meta = trailers ?? headers;
  const status = meta['grpc-status'];
  if (status === undefined) {
    const http = Number(headers[':status']);
    return new ConnectError(`HTTP ${http} without a gRPC status`, http === 200 ? Code.Internal : codeOfHttpStatus(http));
  }
  const code = Number(status);
  if (code === 0) return undefined;
  const raw = meta['grpc-message'];
  let message = typeof raw === 'string' ? raw : '';
  try {
    message = decodeURIComponent(message);
  } catch {
    /* keep it as sent */
  }
  return new ConnectError(message, codeOf(code));
}

/** A gRPC status code as connect's Code (an unknown one is UNKNOWN). */
export function codeOf(code: number): Code {
  return Number.isInteger(code) && code > 0 && code <= 16 ? (code as Code) : Code.Unknown;
}

/** The `grpc-timeout` header: at most 8 digits and a unit (milliseconds, else seconds). */
function grpcTimeout(ms: number): string {
  const whole = Math.max(1, Math.ceil(ms));
  return whole <= 99_999_999 ? `${whole}m` : `${Math.min(99_999_999, Math.ceil(whole / 1000))}S`;
}

/** A call as {@link GrpcUnaryClient.track} follows it. */
export interface TrackedCall {
  readonly settled: boolean;
  /** Ends the bookkeeping; false when the call was already settled. */
  settle(): boolean;
  /** Starts the deadline of a call tracked with `deadline: 'later'`, the first time only (no-op once settled). */
  startDeadline(): void;
}

export class GrpcUnaryClient {
  #session: http2.ClientHttp2Session | undefined;
  #active = 0;
  #ping: NodeJS.Timeout | undefined;
  readonly #idleListeners: (() => void)[] = [];

  constructor(
    private readonly baseUrl: string,
    private readonly opts: GrpcUnaryClientOptions,
  ) {}

  /** Calls `path` with the serialized request; resolves with the serialized response. Throws ConnectError. */
  call(path: string, request: Uint8Array, opts: { timeoutMs: number; signal?: AbortSignal }): Promise<Uint8Array> {
    if (opts.signal?.aborted) return Promise.reject(new ConnectError('the call was cancelled', Code.Canceled));
    let session: http2.ClientHttp2Session;
    try {
      session = this.session();
    } catch (err) {
      return Promise.reject(fromSystemError(err as Error));
    }
    return new Promise<Uint8Array>((resolve, reject) => {
      let stream: http2.ClientHttp2Stream;
      const finish = (err: ConnectError | undefined, value?: Uint8Array) => {
        if (!tracked.settle()) return;
        if (err) reject(err);
        else resolve(value!);
      };
      const cancel = (err: ConnectError) => {
        if (!stream.closed) stream.close(NGHTTP2_CANCEL);
        finish(err);
      };
      const tracked = this.track(opts, cancel);
      try {
        stream = session.request({
          ':method': 'POST',
          ':path': path,
          'content-type': 'application/grpc+proto',
          te: 'trailers',
          'grpc-timeout': grpcTimeout(opts.timeoutMs),
          ...this.opts.headers,
        });
      } catch (err) {
        this.#drop(session);
        finish(fromSystemError(err as Error));
        return;
      }
      const frame = Buffer.allocUnsafe(5 + request.length);
      frame[0] = 0;
      frame.writeUInt32BE(request.length, 1);
      frame.set(request, 5);
      stream.end(frame);

      let headers: http2.IncomingHttpHeaders | undefined;
      let trailers: http2.IncomingHttpHeaders | undefined;
      const chunks: Buffer[] = [];
      let received = 0;
      stream.on('response', (h) => {
        headers = h;
      });
      stream.on('trailers', (h) => {
        trailers = h;
      });
      stream.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received > this.opts.readMaxBytes + 5) {
          cancel(new ConnectError(`the response exceeds the limit of ${this.opts.readMaxBytes} bytes`, Code.ResourceExhausted));
          return;
        }
        chunks.push(chunk);
      });
      stream.on('error', (err: Error & { code?: string }) => finish(fromSystemError(err)));
      stream.on('close', () => {
        if (tracked.settled) return;
        if (headers === undefined) {
          finish(new ConnectError(`the stream closed without an answer (HTTP/2 code ${stream.rstCode})`, Code.Unavailable));
          return;
        }
        const failed = grpcStatusError(headers, trailers);
        if (failed) {
          finish(failed);
          return;
        }
        const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
        if (body.length < 5) {
          finish(new ConnectError('the answer holds no message', Code.Internal));
          return;
        }
        if (body[0] !== 0) {
          finish(new ConnectError('the answer is compressed, which this client does not ask for', Code.Internal));
          return;
        }
        const length = body.readUInt32BE(1);
        if (body.length !== 5 + length) {
          finish(new ConnectError('the answer is not one whole message', Code.Internal));
          return;
        }
        finish(undefined, body.subarray(5));
      });
    });
  }

  /** Closes the session (calls in flight fail). */
  close(): void {
    this.#stopPing();
    const s = this.#session;
    this.#session = undefined;
    s?.destroy();
  }

  /**
   * The bookkeeping of one call on {@link session}, whoever makes it (here, and execute-stream-client.ts): the
   * call counts as in flight until settled (pings run, the session does not idle out); after `timeoutMs`
   * `giveUp` gets DEADLINE_EXCEEDED, when `signal` aborts CANCELED (it stops the call on the wire and
   * settles). `settle()` is true the first time only. The deadline runs from now, or with `deadline: 'later'`
   * from `startDeadline()`: a call that waits here before it is sent (execute-stream-client.ts) has its
   * whole time once the runner has it.
   */
  track(opts: { timeoutMs: number; signal?: AbortSignal }, giveUp: (err: ConnectError) => void, deadline: 'now' | 'later' = 'now'): TrackedCall {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const onAbort = () => giveUp(new ConnectError('the call was cancelled', Code.Canceled));
    const startDeadline = (): void => {
      if (settled || timer !== undefined) return;
      timer = setTimeout(() => giveUp(new ConnectError(`the call did not finish within ${opts.timeoutMs} ms`, Code.DeadlineExceeded)), opts.timeoutMs);
    };
    if (deadline === 'now') startDeadline();
    this.#active++;
    this.#startPing();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    return {
      get settled() {
        return settled;
      },
      settle: () => {
        if (settled) return false;
        settled = true;
        clearTimeout(timer);
        opts.signal?.removeEventListener('abort', onAbort);
        if (--this.#active === 0) this.#stopPing();
        return true;
      },
      startDeadline,
    };
  }

  /** `listener` runs when the session idles out with no call in flight (a long-lived stream then ends). */
  onIdle(listener: () => void): void {
    this.#idleListeners.push(listener);
  }

  /** The session to the runner: the open one, or a new one. Throws if it cannot be opened. */
  session(): http2.ClientHttp2Session {
    const have = this.#session;
    if (have && !have.closed && !have.destroyed) return have;
    const session = http2.connect(this.baseUrl, this.opts.tls ?? {});
    // Each stream reports an error too. After a GOAWAY (a runner draining) the calls in flight finish on
    // the old session; new ones open another.
    session.on('error', () => this.#forget(session));
    session.on('goaway', () => this.#forget(session));
    session.on('close', () => this.#forget(session));
    session.setTimeout(this.opts.idleTimeoutMs, () => {
      if (this.#active !== 0) return;
      for (const listener of this.#idleListeners) listener();
      session.close();
    });
    session.unref(); // the executor's other handles keep the process alive; an idle session must not
    this.#session = session;
    return session;
  }

  #forget(session: http2.ClientHttp2Session): void {
    if (this.#session === session) this.#session = undefined;
  }

  #drop(session: http2.ClientHttp2Session): void {
    this.#forget(session);
    if (!session.destroyed) session.destroy();
  }

  #startPing(): void {
    if (this.#ping) return;
    this.#ping = setInterval(() => {
      const s = this.#session;
      if (!s || s.destroyed) return;
      const ok = s.ping((err) => {
        if (err) this.#drop(s);
      });
      if (!ok) this.#drop(s);
    }, this.opts.pingIntervalMs);
    this.#ping.unref();
  }

  #stopPing(): void {
    clearInterval(this.#ping);
    this.#ping = undefined;
  }
}
