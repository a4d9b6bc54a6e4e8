import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import type { Registry } from 'prom-client';
import type { RunnerConfig } from '../config/index.js';
import { file_ldbox_runner_v1_runner, RunnerService } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import { Health } from '../../src/gen/grpc/health/v1/health_pb.js';
import type { Logger } from '../../src/logging/logger.js';
import { createRunnerPool, type RunnerPool } from '../pool/index.js';
import { bearerAuth, createTokenCheck } from './bearer-auth.js';
import { type Grace, RoleLifecycle, type RoleState } from '../../src/lifecycle/role-lifecycle.js';
import { dropUnreachableDeadlines, parseConnectTimeout, parseGrpcTimeout } from './call-deadline.js';
import { ConnectUnaryCall } from './connect-unary-call.js';
import { http1ServerOptions, http2ServerSettings, limitHttp2Server } from '../../src/http/connection-limits.js';
import { createOpsRoutes } from '../../src/http/ops-routes.js';
import { createDualProtocolListener, type DualProtocolListener } from './dual-protocol-listener.js';
import { connectUnaryEncoding, isPlainGrpcExecute, isPlainGrpcExecuteStream } from './execute-paths.js';
import { createExecuteRoute, maxExecuteRequestBytes } from './execute-route.js';
import { type OpenExecuteStream, serveExecuteStream } from './execute-stream.js';
import { GrpcUnaryCall } from './grpc-unary-call.js';
import { claimStreamsFirst } from './stream-router.js';
import { withSpecGrpcMessage } from './grpc-message-encoding.js';
import { createHealthStatus, registerHealthService, type HealthStatus } from './health-service.js';
import { registerReflectionService } from './reflection-service.js';
import { createRunnerMetrics } from './runner-metrics.js';
import { registerRunnerService } from './runner-service.js';
import { warmUp, warmUpInFlight } from './warm-up.js';

export interface RunnerServer {
  /** The bound port (useful when the config asked for port 0). */
  readonly port: number;
  readonly pool: RunnerPool;
  readonly health: HealthStatus;
  /** The Prometheus registry `/metrics` serves (an in-process `ldbox dev` may serve or merge it). */
  readonly metrics: Registry;
  /** Where the runner is in its lifecycle (src/lifecycle/role-lifecycle.ts). */
  readonly state: RoleState;
  /**
   * Stops taking calls, lets running ones finish (up to `timeoutMs`), then closes connections and workers.
   * While it drains the port still accepts connections, so that probes read `/readyz` 503 and gRPC
   * health NOT_SERVING rather than a refused connection; new calls get UNAVAILABLE. Idempotent.
   */
  close(timeoutMs?: number): Promise<void>;
  /** Stops at once: running calls are cancelled, connections dropped. Idempotent; cuts a running `close()` short. */
  destroy(): Promise<void>;
}

/** Settings for tests; production takes the defaults. */
export interface StartRunnerOptions {
  /** How long a new connection may stay silent before its protocol is known (dual-protocol-listener.ts). */
  sniffTimeoutMs?: number;
}

/**
 * Starts the runner: RunnerService, grpc.health.v1 and server reflection, speaking gRPC, gRPC-Web and
 * Connect, plus `/healthz`, `/readyz` and `/metrics` (src/http/ops-routes.ts), all on one port that takes both
 * cleartext HTTP/2 (gRPC clients) and HTTP/1.1 (Prometheus, curl, Connect JSON) — or, with
 * LDBOX_RUNNER_TLS_CERT/_KEY, both over TLS only, chosen by ALPN (test/runner/runner-tls.test.ts).
 *
 * Execute in binary gRPC (by stream, before node's compatibility API) and in uncompressed Connect unary
 * is read by the runner itself (execute-route.ts): connect-node's server costs ~250 µs of CPU per unary
 * call on this project's machine, a bare stream ~30 µs (README, Performance). Everything else (gRPC-Web,
 * gRPC+JSON, compressed calls, GetPoolStatus, health, reflection) goes to connect-node.
 */
export async function startRunnerServer(config: RunnerConfig, log: Logger, options: StartRunnerOptions = {}): Promise<RunnerServer> {
  const runner = new RunnerRole(config, log, options);
  await runner.listen();
  return runner;
}

/** The runner's parts, wired in the constructor; {@link RoleLifecycle} holds its state. */
class RunnerRole extends RoleLifecycle implements RunnerServer {
  readonly pool: RunnerPool;
  readonly health: HealthStatus;
  readonly metrics: Registry;
  readonly #config: RunnerConfig;
  readonly #log: Logger;
  readonly #h1server: http.Server;
  readonly #listener: DualProtocolListener;
  readonly #sessions = new Set<http2.ServerHttp2Session>();
  readonly #http1Responses = new Set<http.ServerResponse>();
  readonly #executeStreams = new Set<OpenExecuteStream>();
  #poolClosed: Promise<void> | undefined;
  #port: number | undefined;

  constructor(config: RunnerConfig, log: Logger, options: StartRunnerOptions) {
    super();
    this.#config = config;
    this.#log = log;
    const pool = (this.pool = createRunnerPool(config.pool, {
      maxCodeBytes: config.maxCodeBytes,
      maxInputBytes: config.maxInputBytes,
      preloadLibraries: config.warmUpCalls > 0,
    }));
    const health = (this.health = createHealthStatus());
    const metrics = createRunnerMetrics(pool);
    this.metrics = metrics.registry;
    const open = new Set([Health.typeName]);
    // The largest response: a maximal result and logs (both can double when encoded), plus the rest.
    const maxResponseBytes = config.pool.maxResultBytes * 2 + config.pool.maxLogChars * 2 + 64 * 1024;
    const handler = connectNodeAdapter({
      grpc: true,
      grpcWeb: true,
      connect: true,
      // A request holds code + input + auth; a response the result plus logs.
      readMaxBytes: maxExecuteRequestBytes(config),
      writeMaxBytes: maxResponseBytes,
      // Metrics first: calls the token check refuses are counted as `rejected`.
      interceptors: [metrics.interceptor, ...(config.token ? [bearerAuth(config.token, open)] : [])],
      routes: (router) => {
        registerRunnerService(router, pool, config, log);
        registerHealthService(router, health);
        registerReflectionService(router, [file_ldbox_runner_v1_runner]);
      },
    });
    const ops = createOpsRoutes({ ready: () => health.get(RunnerService.typeName) === 'SERVING', registry: metrics.registry, log });
    const tokenCheck = config.token === undefined ? undefined : createTokenCheck(config.token);
    const execute = createExecuteRoute({ pool, config, metrics, log, tokenCheck });
    const streamOptions = {
      route: execute,
      tokenCheck,
      maxRequestBytes: maxExecuteRequestBytes(config),
      // As many calls as the pool runs at once (waiting calls park), and never fewer than the connection could
      // carry as unary Execute streams (SETTINGS_MAX_CONCURRENT_STREAMS).
      maxCallsInFlight: Math.max(config.http.maxStreamsPerConnection, config.pool.maxInflight),
      // A stream with no call in flight ends (OK) after this long, as an idle connection would close.
      idleTimeoutMs: config.http.idleTimeoutMs,
    };
    // Connect unary Execute (JSON or binary, uncompressed), over HTTP/1.1 or HTTP/2: read by the runner.
    const connectExecute = (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse): boolean => {
      const encoding = connectUnaryEncoding(req.method, req.url, req.headers);
      if (encoding === undefined) return false;
      const call = new ConnectUnaryCall(req, res, encoding === 'json' ? 'application/json' : 'application/proto');
      execute(call, req.headers, { encoding, grpcFramed: false, timeout: parseConnectTimeout(req.headers['connect-timeout-ms']) });
      return true;
    };

    const rpc = withSpecGrpcMessage(handler);
    // Node refuses new streams of a session with ENHANCE_YOUR_CALM (clients see RESOURCE_EXHAUSTED) once the
    // data it holds for that session passes maxSessionMemory (default 10 MB). One maximal result (~11 MB
    // as protobuf for 1M numbers) crossed it, so every other call sharing the connection — other tenants'
    // calls from the same executor — failed while it was being sent. Room for a few maximal responses:
    const maxResponseMb = Math.ceil(maxResponseBytes / 1_000_000);
    // SETTINGS_MAX_CONCURRENT_STREAMS: without it a few connections held 120k half-open Execute streams
    // (each answered UNAUTHENTICATED, but never ended by the client) and ran the process out of heap.
    const h2server = http2.createServer({ maxSessionMemory: Math.max(10, 4 * maxResponseMb), settings: http2ServerSettings(config.http) }, (req, res) => {
      if (ops(req, res) || connectExecute(req, res)) return;
      dropUnreachableDeadlines(req.headers);
      rpc(req, res);
    });
    // The hot path: binary gRPC Execute on the bare stream, before the compatibility API sees it.
    claimStreamsFirst(h2server, (stream, headers) => {
      if (isPlainGrpcExecute(headers)) {
        execute(new GrpcUnaryCall(stream), headers, { encoding: 'proto', grpcFramed: true, timeout: parseGrpcTimeout(headers['grpc-timeout']) });
        return true;
      }
      if (!isPlainGrpcExecuteStream(headers)) return false;
      const served = serveExecuteStream(stream, headers, streamOptions, (s) => this.#executeStreams.delete(s));
      if (served === undefined) return true;
      // A stream opened while the runner drains ends once it has answered (UNAVAILABLE to each call).
      if (this.stopping) served.drain();
      this.#executeStreams.add(served);
      return true;
    });
    // An ExecuteStream's request body never ends: LDBOX_BODY_TIMEOUT_MS would reset it, and every call on it,
    // after 30 s. It bounds its own life instead (LDBOX_IDLE_TIMEOUT_MS without a call in flight: execute-stream.ts).
    limitHttp2Server(h2server, config.http, { longLived: isPlainGrpcExecuteStream });
    h2server.on('session', (s) => {
      this.#sessions.add(s);
      s.on('close', () => this.#sessions.delete(s));
    });

    this.#h1server = http.createServer(http1ServerOptions(config.http), (req, res) => {
      // While draining, each response ends its connection, so that keep-alive clients leave.
      if (this.stopping) res.setHeader('connection', 'close');
      this.#http1Responses.add(res);
      res.once('close', () => this.#http1Responses.delete(res));
      if (ops(req, res) || connectExecute(req, res)) return;
      dropUnreachableDeadlines(req.headers);
      handler(req, res);
    });
    // node:http starts tracking its connections (headersTimeout, requestTimeout, closeIdleConnections,
    // closeAllConnections) on its own 'listening' event; this server never listens itself.
    this.#h1server.emit('listening');

    this.#listener = createDualProtocolListener({
      http1: this.#h1server,
      http2: h2server,
      ...(config.tls === undefined
        ? {}
        : {
            tls: {
              cert: config.tls.cert,
              key: config.tls.key,
              ...(config.tls.clientCa === undefined ? {} : { ca: config.tls.clientCa, requestCert: true, rejectUnauthorized: true }),
            },
          }),
      sniffTimeoutMs: options.sniffTimeoutMs ?? config.http.headersTimeoutMs,
      maxConnections: config.http.maxConnections,
    });
  }

  get port(): number {
    return this.#port ?? 0;
  }

  /** Binds the port and marks every service SERVING; when it cannot bind, the workers are stopped and the error rethrown. */
  async listen(): Promise<void> {
    const config = this.#config;
    const server = this.#listener.server;
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(config.port, config.host, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } catch (err) {
      await this.destroy();
      throw err;
    }
    // Accept failures (EMFILE and the like) come as 'error' events; logged, they must not end the process.
    server.on('error', (err) => this.#log.error({ err: err.message }, 'runner listener error'));
    const bound = server.address() as AddressInfo;
    this.#port = bound.port;
    if (config.warmUpCalls > 0) await this.#warmUp(bound.address);
    this.health.set('', 'SERVING');
    this.health.set(RunnerService.typeName, 'SERVING');
    this.started();
    this.#log.info(
      {
        host: config.host,
        port: this.#port,
        workers: config.pool.size,
        tokenRequired: config.token !== undefined,
        tls: config.tls !== undefined,
        clientCertRequired: config.tls?.clientCa !== undefined,
      },
      'runner listening',
    );
  }

  /** Runs the warm-up (warm-up.ts) while health says NOT_SERVING; a failed one is logged, never fatal. */
  async #warmUp(boundAddress: string): Promise<void> {
    const config = this.#config;
    if (config.tls?.clientCa !== undefined) {
      this.#log.info('runner warm-up skipped: the port asks for client certificates, and the runner has none of its own');
      return;
    }
    this.health.set('', 'NOT_SERVING');
    this.health.set(RunnerService.typeName, 'NOT_SERVING');
    try {
      const target = { host: boundAddress, port: this.port, token: config.token, tlsCert: config.tls?.cert };
      const r = await warmUp(target, config.warmUpCalls, warmUpInFlight(config.pool, config.http.maxStreamsPerConnection));
      const level = r.failed > 0 ? 'warn' : 'info';
      this.#log[level]({ calls: r.answered, failed: r.failed, ms: Math.round(r.ms) }, 'runner warmed up');
    } catch (err) {
      this.#log.warn({ err: err instanceof Error ? err.message : String(err) }, 'runner warm-up failed; ready without it');
    }
  }

  protected async drain(grace: Grace): Promise<void> {
    this.health.set('', 'NOT_SERVING');
    this.health.set(RunnerService.typeName, 'NOT_SERVING');
    // GOAWAY: clients open their next calls elsewhere; streams already running finish. An ExecuteStream
    // answers its calls in flight, new ones UNAVAILABLE, and then ends (UNAVAILABLE).
    for (const s of this.#sessions) s.close();
    for (const s of this.#executeStreams) s.drain();
    this.#h1server.closeIdleConnections();
    for (const res of this.#http1Responses) if (!res.headersSent) res.setHeader('connection', 'close');
    // The pool keeps its own drain timer (grace.timeoutMs); destroy() during it moves on to dropping the
    // connections, which cancels the calls still running (their signals abort).
    this.#poolClosed = this.pool.close(grace.timeoutMs);
    await Promise.race([this.#poolClosed, aborted(grace.signal)]);
    // The last answers of an ExecuteStream leave a turn after their calls end, then its status: wait for them
    // before release() destroys the connections.
    await Promise.race([Promise.all([...this.#executeStreams].map((s) => s.closed)), aborted(grace.signal)]);
  }

  protected async release(): Promise<void> {
    const closed = this.#listener.close();
    for (const s of this.#sessions) s.destroy();
    this.#h1server.closeAllConnections();
    // Stops node:http's connection-checking timer; the error (it never listened) says nothing new.
    this.#h1server.close(() => {});
    await closed;
    await (this.#poolClosed ?? this.pool.close(0));
  }
}

/** Resolves when `signal` aborts (never, if it does not). */
function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}
