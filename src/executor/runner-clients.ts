/**
 * The executor's side of `RunnerService.Execute`: one gRPC client (HTTP/2, grpc-unary-client.ts) per runner
 * of LDBOX_RUNNER_URLS, called in turn.
 *
 * Balancing: round robin over the runners not in their cool-down. A runner that answers UNAVAILABLE
 * (down, shutting down), RESOURCE_EXHAUSTED (its pool queue is full) or fails at the network level (a
 * refused connection, a TLS handshake that fails: untrusted certificate, client certificate refused) is
 * skipped for {@link COOL_DOWN_MS} and the call goes to the next one; only when every runner refused does
 * the call fail, with {@link RunnerUnavailableError}, which the executor treats as transient (the job is
 * retried later, and recorded as failed once its attempts are used up).
 *
 * A runner refusing the request itself (INVALID_ARGUMENT: e.g. input over the runner's limit) is not
 * retried anywhere: {@link RunnerRejectedError} is final for the node.
 */
import type http2 from 'node:http2';
import tls from 'node:tls';
import { Code, ConnectError } from '@connectrpc/connect';
import { create, type JsonObject, type JsonValue, type MessageInitShape, toBinary } from '@bufbuild/protobuf';
import { GrpcUnaryClient } from './grpc-unary-client.js';
import { ExecuteStreamClient, StreamUnsupportedError } from './execute-stream-client.js';
import { ExecuteRequestSchema, type ExecuteResponse, RunnerService } from '../gen/ldbox/runner/v1/runner_pb.js';
import type { RunnerClientTls } from './executor-config.js';
import { readExecuteResponseBytes, withStructBytes } from './runner-wire.js';

/** How long a runner that refused a call is passed over (unless every runner is). */
export const COOL_DOWN_MS = 1000;

/** Every runner refused or could not be reached: try again later. */
export class RunnerUnavailableError extends Error {
  override readonly name = 'RunnerUnavailableError';
}

/** The runner refused the request as such (INVALID_ARGUMENT, …): retrying will not help. */
export class RunnerRejectedError extends Error {
  override readonly name = 'RunnerRejectedError';
  constructor(
    message: string,
    readonly code: Code,
  ) {
    super(message);
  }
}

/** A call failed for a reason that may pass (deadline exceeded, internal error, unauthenticated, …). */
export class RunnerCallError extends Error {
  override readonly name = 'RunnerCallError';
  constructor(
    message: string,
    readonly code: Code,
  ) {
    super(message);
  }
}

export type ExecuteInit = MessageInitShape<typeof ExecuteRequestSchema>;

/** A runner's answer: the response and its `result` as JSON (every key kept, see runner-wire.ts). */
export interface RunnerAnswer {
  response: ExecuteResponse;
  result: JsonValue | undefined;
}

type ExecuteFn = (request: Uint8Array, opts: { timeoutMs: number; signal?: AbortSignal }) => Promise<Uint8Array>;

interface Runner {
  url: string;
  execute: ExecuteFn;
  coolUntil: number;
}

/** The method's path (gRPC: `/<package>.<Service>/<Method>`). */
const EXECUTE_PATH = `/${RunnerService.typeName}/${RunnerService.method.execute.name}`;

/** node:http2's TLS options for a runner: an extra trusted CA (added to Node's bundled ones), a client certificate. */
function secureOptions(t: RunnerClientTls | undefined): http2.SecureClientSessionOptions {
  const o: http2.SecureClientSessionOptions = {};
  if (t?.ca) o.ca = [...tls.rootCertificates, t.ca.toString('utf8')];
  if (t?.cert && t.key) {
    o.cert = t.cert;
    o.key = t.key;
  }
  return o;
}

/**
 * The Node/OpenSSL code of a failed TLS connection (the runner's certificate not trusted or not for its
 * name, a refused client certificate), which connect-node reports as INTERNAL. Like a refused
 * connection, it says nothing about the request: the next runner is tried.
 */
function tlsFailure(e: ConnectError): string | undefined {
  const code = (e.cause as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'string') return undefined;
  return /^(ERR_SSL_|ERR_TLS_|UNABLE_TO_|CERT_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH)/.test(code) ? code : undefined;
}

/** Codes after which the next runner is tried at once. */
const TRY_NEXT = new Set([Code.Unavailable, Code.ResourceExhausted, Code.Aborted]);
/** Codes that say the request itself is wrong. */
const FINAL = new Set([Code.InvalidArgument, Code.FailedPrecondition, Code.OutOfRange, Code.Unimplemented]);

export class RunnerClients {
  readonly #runners: Runner[];
  readonly #clients: GrpcUnaryClient[] = [];
  readonly #streams: ExecuteStreamClient[] = [];
  #next = 0;

  /**
   * `opts.tls` applies to `https://` runners: `ca` is trusted besides Node's bundled CAs, `cert`/`key`
   * are shown when a runner asks for a client certificate (node:http2's own TLS does the rest).
   */
  constructor(urls: readonly string[], token: string | undefined, opts: { readMaxBytes?: number; tls?: RunnerClientTls; unaryOnly?: boolean } = {}) {
    if (urls.length === 0) throw new Error('RunnerClients needs at least one runner URL');
    const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
    // A response holds the result plus logs: 8 MiB + 2 MiB by the runner's defaults.
    const readMaxBytes = opts.readMaxBytes ?? 64 * 1024 * 1024;
    this.#runners = urls.map((url) => {
      const client = new GrpcUnaryClient(url, {
        headers,
        readMaxBytes,
        pingIntervalMs: 10_000,
        idleTimeoutMs: 60_000,
        ...(url.startsWith('https:') ? { tls: secureOptions(opts.tls) } : {}),
      });
      this.#clients.push(client);
      const stream = new ExecuteStreamClient(client, { headers, readMaxBytes });
      this.#streams.push(stream);
      const unary: ExecuteFn = (request, o) => client.call(EXECUTE_PATH, request, o);
      // ExecuteStream while the runner serves it; a runner that does not (an older version) gets unary calls.
      const execute: ExecuteFn = (request, o) => {
        if (stream.unsupported || opts.unaryOnly) return unary(request, o);
        return stream.call(request, o).catch((err: unknown) => {
          if (err instanceof StreamUnsupportedError) return unary(request, o);
          throw err;
        });
      };
      return { url, coolUntil: 0, execute };
    });
  }

  /** Closes the connections to the runners (calls in flight fail). */
  close(): void {
    for (const s of this.#streams) s.close();
    for (const c of this.#clients) c.close();
  }

  get urls(): string[] {
    return this.#runners.map((r) => r.url);
  }

  /**
   * Runs one call on some runner. Resolves with the runner's response (a user-code error is a response,
   * not a rejection); rejects with {@link RunnerUnavailableError}, {@link RunnerRejectedError},
   * {@link RunnerCallError} or (an answer that cannot be read) UndeliverableResultError.
   */
  async execute(init: ExecuteInit, opts: { timeoutMs: number; signal?: AbortSignal }): Promise<RunnerAnswer> {
    const { input, auth, ...rest } = init;
    const req = withStructBytes(create(ExecuteRequestSchema, rest), { input: (input ?? {}) as JsonObject, auth: auth as JsonObject | undefined });
    const request = toBinary(ExecuteRequestSchema, req);
    const order = this.#order();
    const refusals: string[] = [];
    for (const runner of order) {
      let answer: Uint8Array;
      try {
        answer = await runner.execute(request, { timeoutMs: opts.timeoutMs, signal: opts.signal });
      } catch (err) {
        const e = ConnectError.from(err);
        if (opts.signal?.aborted) throw new RunnerCallError(`the call was cancelled: ${e.rawMessage}`, Code.Canceled);
        const tlsCode = tlsFailure(e);
        if (TRY_NEXT.has(e.code) || tlsCode !== undefined) {
          runner.coolUntil = Date.now() + COOL_DOWN_MS;
          refusals.push(`${runner.url}: ${tlsCode === undefined ? Code[e.code] : `TLS ${tlsCode}`} ${e.rawMessage}`);
          continue;
        }
        if (FINAL.has(e.code)) throw new RunnerRejectedError(`the runner refused the call: ${e.rawMessage}`, e.code);
        throw new RunnerCallError(`the runner call failed (${Code[e.code]}): ${e.rawMessage}`, e.code);
      }
      return readExecuteResponseBytes(answer);
    }
    throw new RunnerUnavailableError(`no runner took the call: ${refusals.join('; ')}`);
  }

  /** Every runner once, starting at the next in turn, those in cool-down last. */
  #order(): Runner[] {
    const n = this.#runners.length;
    const start = this.#next;
    this.#next = (this.#next + 1) % n;
    const now = Date.now();
    const rotated = Array.from({ length: n }, (_, i) => this.#runners[(start + i) % n]!);
    return [...rotated.filter((r) => r.coolUntil <= now), ...rotated.filter((r) => r.coolUntil > now)];
  }
}
