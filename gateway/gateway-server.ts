/**
 * The gateway: one node:http (HTTP/1.1) server that routes
 * - `/api/hooks/workflows/<id>` → the webhook route (webhook-handler.ts);
 * - `/console`, `/console/…` → the web console's static files, without a token (console-route.ts; the
 *   page's own control-plane calls carry the admin token);
 * - `/healthz`, `/readyz`, `/metrics` → the ops routes (src/http/ops-routes.ts); `/readyz` is 200 only when
 *   NATS is connected, the stream and buckets are set up and the workflow and workspace caches are loaded;
 * - everything else → connect-node (`WorkflowService`, `WorkspaceService`; control-plane.ts), whose
 *   unknown paths answer 404 `not_found`.
 *
 * It starts before NATS is up and rides out outages: the connection reconnects forever, the JOBS stream
 * and KV buckets are (re)ensured on every (re)connect (src/nats/keep-set-up.ts), the caches rebuild
 * themselves, and the webhook route answers 503 meanwhile (never 202 for a job that was not stored).
 *
 * Lifecycle (src/lifecycle/role-lifecycle.ts): `close()` stops taking requests, lets running ones finish,
 * then drains NATS; `destroy()` drops the connections at once.
 *
 * Access logs are one pino line per request, with the `secret` query parameter scrubbed from the URL;
 * headers and bodies are never logged.
 */
import { randomBytes, randomFillSync } from 'node:crypto';
import http from 'node:http';
import type { DescMessage } from '@bufbuild/protobuf';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import type { GatewayConfig } from './gateway-config.js';
import type { Logger } from '../src/logging/logger.js';
import { http1ServerOptions, limitHttp1Server } from '../src/http/connection-limits.js';
import { answerThenDiscard } from '../src/http/discard-body.js';
import { createOpsRoutes, type OpsRoutes } from '../src/http/ops-routes.js';
import { listenOrUndo } from '../src/http/server-helpers.js';
import type { StaticRoute } from '../src/http/static-files.js';
import { type Grace, RoleLifecycle, type RoleState } from '../src/lifecycle/role-lifecycle.js';
import { connectNats, type ConnectNatsOptions, type NatsClient } from '../src/nats/connect.js';
import { JobPublisher } from '../src/nats/job-publisher.js';
import { keepSetUp, type KeptSetUp } from '../src/nats/keep-set-up.js';
import { KvCache } from '../src/nats/kv-cache.js';
import { cancelSubject, checkMaxPayload, ensureJobsStream, ensureKvBucket, ensureKvBuckets, KV_BUCKETS, maxJobBytes } from '../src/nats/streams.js';
import { ExecutionRepository } from '../src/store/execution-repository.js';
import { WorkflowRepository } from '../src/store/workflow-repository.js';
import { decodeWorkflowForRouting } from '../src/store/workflow-codec.js';
import { ChargeLedger, ensureChargesStream } from '../src/store/charge-ledger.js';
import { ensureWorkspacesBucket, WORKSPACES_BUCKET, WorkspaceRepository, type WorkspaceRecord } from '../src/store/workspace-repository.js';
import type { RandomBytes } from '../src/workflows/webhook-secret.js';
import type { WorkflowRecord } from '../src/workflows/workflow-model.js';
import {
  adminAuth,
  adminTokenCheck,
  controlPlaneJsonOptions,
  type ControlPlaneStores,
  registerControlPlane,
  sendUnauthenticated,
  UNAUTHENTICATED_BODY_BYTES,
} from './control-plane.js';
import { createConsoleRoute } from './console-route.js';
import { createGatewayMetrics, type GatewayMetrics, type RouteLabel } from './gateway-metrics.js';
import { ClusterRateLimiter, RATE_LIMITS_BUCKET } from './cluster-rate-limiter.js';
import { keepProtoKeysInRequests, requestBytesContext } from './request-proto-keys.js';
import { nameEnumFieldInErrors, strictEnums } from './strict-enums.js';
import { WorkflowService, WorkspaceService } from '../src/gen/ldbox/workflows/v1/workflows_pb.js';
import { sendError, WebhookError } from './webhook-errors.js';
import { handleWebhook, splitTarget, WEBHOOK_PATH_PREFIX, type WebhookDeps, type WebhookOutcome } from './webhook-handler.js';
import { attemptTimeoutMs, PublishRetrier } from './publish-batch.js';
import { PublishBatcher } from '../src/nats/publish-batcher.js';
import { scrubUrl } from './webhook-payload.js';
import { SIGNATURES_BUCKET, signaturesTtlMs } from '../src/nats/signature-replay.js';

const MiB = 1024 * 1024;

/** The largest control-plane request message, decompressed. */
const CONTROL_PLANE_MAX_BYTES = 64 * MiB;

/** The request message of each control-plane path (`/<service>/<method>`). */
const CONTROL_PLANE_INPUTS = new Map<string, DescMessage>(
  [WorkflowService, WorkspaceService].flatMap((s) => s.methods.map((m) => [`/${s.typeName}/${m.name}`, m.input] as const)),
);

export interface Gateway {
  /** The bound port (useful when the config asked for port 0). */
  readonly port: number;
  /** Where the gateway is in its lifecycle (src/lifecycle/role-lifecycle.ts). */
  readonly state: RoleState;
  /** What `/readyz` answers. */
  ready(): boolean;
  /** Stops taking requests, lets running ones finish (up to `timeoutMs`), then drains NATS. Idempotent. */
  close(timeoutMs?: number): Promise<void>;
  /** Stops at once: open connections are dropped, NATS is closed without draining. Idempotent. */
  destroy(): Promise<void>;
}

export interface StartGatewayOptions {
  /** NATS reconnect tuning (tests reconnect fast). */
  nats?: Pick<ConnectNatsOptions, 'reconnectTimeWaitMs' | 'reconnectJitterMs' | 'connectTimeoutMs'>;
}

interface Stores extends ControlPlaneStores {
  idempotency: KV;
  /** Accepted timestamped signatures, to refuse replays (src/nats/signature-replay.ts). */
  signatures: KV;
  /** The shared per-workflow rate schedules (cluster-rate-limiter.ts). */
  rateLimits: KV;
}

/** Starts the gateway and resolves once it listens (NATS may still be connecting: see `ready()`). */
export async function startGateway(config: GatewayConfig, log: Logger, options: StartGatewayOptions = {}): Promise<Gateway> {
  const gateway = new GatewayRole(config, log, options);
  await gateway.listen();
  return gateway;
}

/** The gateway's parts, wired in the constructor; {@link RoleLifecycle} holds its state. */
class GatewayRole extends RoleLifecycle implements Gateway {
  readonly #config: GatewayConfig;
  readonly #log: Logger;
  readonly #metrics: GatewayMetrics;
  readonly #client: NatsClient;
  readonly #publisher: JobPublisher;
  readonly #workflowCache: KvCache<WorkflowRecord>;
  readonly #workspaceCache: KvCache<WorkspaceRecord>;
  readonly #setUp: KeptSetUp;
  readonly #server: http.Server;
  #stores: Stores | undefined;
  #port: number | undefined;

  constructor(configIn: GatewayConfig, log: Logger, options: StartGatewayOptions) {
    super();
    // A copy: `baseUrl` is filled in once the port is known.
    const config = (this.#config = { ...configIn });
    this.#log = log;
    this.#metrics = createGatewayMetrics();
    const client = (this.#client = connectNats(config.nats, { name: 'ldbox-gateway', logger: log, ...options.nats }));
    this.#publisher = new JobPublisher(client, { timeoutMs: attemptTimeoutMs(config.publishTimeoutMs) });
    // Node `auth` values are opened here too (the cache is compared with what the control plane wrote). A
    // workflow whose `auth` cannot be opened still routes its webhooks (with a warning naming the key id): the
    // executor refuses its executions with that message, a clearer answer than a 404.
    this.#workflowCache = new KvCache<WorkflowRecord>({
      client,
      bucket: KV_BUCKETS.workflows,
      logger: log,
      decode: (v) =>
        decodeWorkflowForRouting(v, config.dataKeys, (err) => log.warn({ keyId: err.keyId, err: err.message }, 'a stored node auth cannot be opened')),
    });
    this.#workspaceCache = new KvCache<WorkspaceRecord>({ client, bucket: WORKSPACES_BUCKET, logger: log });
    const limiter = new ClusterRateLimiter({ kv: () => this.#stores?.rateLimits, maxDelayMs: config.throttleMaxDelayMs, log });
    this.#workflowCache.onChange((id, value) => {
      if (value === undefined) limiter.forget(id);
    });

    client.onState((s) => this.#metrics.setNatsConnected(s === 'connected'));
    // NATS may have come back without its data: the stream and buckets are ensured on every (re)connect.
    this.#setUp = keepSetUp(client, {
      setup: (nc) => this.#setUpStreams(nc),
      onError: (err) => log.warn({ err: (err as Error).message }, 'setting up the JOBS stream and KV buckets failed, retrying'),
    });

    const webhookDeps: WebhookDeps = {
      config,
      workflows: this.#workflowCache,
      workspaces: this.#workspaceCache,
      // One socket write per event-loop turn for the jobs (and queued records) of all requests in it.
      // An unavailable stream (a leader election, a reconnect) is waited out within the publish timeout.
      publisher: new PublishRetrier(new PublishBatcher(this.#publisher), {
        timeoutMs: config.publishTimeoutMs,
        attemptTimeoutMs: attemptTimeoutMs(config.publishTimeoutMs),
        onRetry: (attempt, failure) => {
          this.#metrics.publishRetry();
          if (attempt === 1) log.info({ reason: failure.ok ? undefined : failure.message }, 'job not stored yet, publishing again');
        },
      }),
      stores: () => this.#stores,
      limiter,
      random: pooledRandom(),
      log,
      observeEnqueue: (s: number, outcome: string) => this.#metrics.enqueue(s, outcome),
    };
    const ops = createOpsRoutes({ ready: () => this.ready(), readyDetails: () => this.#readyDetails(), registry: this.#metrics.registry, log });
    const consoleFiles = createConsoleRoute();
    if (consoleFiles.names.length === 0) log.warn('the web console has no files (the console/ folder is missing): /console answers 404');
    const route = this.#router(webhookDeps, ops, consoleFiles.route);
    this.#server = http.createServer(http1ServerOptions(config.http), route);
    limitHttp1Server(this.#server, config.http);
  }

  get port(): number {
    return this.#port ?? 0;
  }

  ready(): boolean {
    return this.state === 'ready' && this.#client.isConnected && this.#stores !== undefined && this.#workflowCache.ready && this.#workspaceCache.ready;
  }

  /** Binds the port; when it cannot, what the constructor started is stopped and the error rethrown. */
  async listen(): Promise<void> {
    const config = this.#config;
    this.#port = await listenOrUndo(this.#server, config.port, config.host, () => this.destroy());
    if (!config.baseUrlSet) config.baseUrl = `http://127.0.0.1:${this.#port}`;
    this.started();
    this.#log.info(
      {
        host: config.host,
        port: this.#port,
        nats: config.nats.shown,
        baseUrl: config.baseUrl,
        maxBodyBytes: config.maxBodyBytes,
        webhookRate: config.webhookRate,
      },
      'gateway listening',
    );
  }

  protected async drain(grace: Grace): Promise<void> {
    this.#setUp.close();
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#server.closeIdleConnections();
    await grace.within(closed);
    this.#server.closeAllConnections();
    await closed;
  }

  protected async release(): Promise<void> {
    this.#publisher.close();
    await Promise.all([this.#workflowCache.close(), this.#workspaceCache.close()]);
    await this.#client.close(this.destroyed ? 0 : undefined);
    if (this.#port !== undefined) this.#log.info('gateway stopped');
  }

  async #setUpStreams(nc: NatsConnection): Promise<void> {
    const config = this.#config;
    const jsm = await jetstreamManager(nc, { timeout: 3000 });
    const maxJob = maxJobBytes(config.maxBodyBytes);
    await ensureJobsStream(jsm, { ...config.stream, maxMsgSize: maxJob });
    const buckets = await ensureKvBuckets(nc, jsm, {
      idempotencyTtlMs: config.idempotencyTtlMs,
      executionsTtlMs: config.executionRetentionMs,
      replicas: config.stream.replicas,
      timeoutMs: 3000,
      log: this.#log,
    });
    const workspaces = await ensureWorkspacesBucket(nc, jsm, { replicas: config.stream.replicas });
    // Kept past the furthest throttled slot, so that a schedule never expires while calls wait on it.
    const rateLimits = await ensureKvBucket(nc, jsm, RATE_LIMITS_BUCKET, {
      ttlMs: config.throttleMaxDelayMs + 3_600_000,
      replicas: config.stream.replicas,
      timeoutMs: 2000,
      log: this.#log,
    });
    const signatures = await ensureKvBucket(nc, jsm, SIGNATURES_BUCKET, {
      ttlMs: signaturesTtlMs(config.signatureToleranceMs),
      replicas: config.stream.replicas,
      timeoutMs: 2000,
      log: this.#log,
    });
    // Charges are kept as long as the records whose redelivery could send them again (charge-ledger.ts).
    await ensureChargesStream(jsm, { maxAgeMs: config.executionRetentionMs, replicas: config.stream.replicas });
    const problem = checkMaxPayload(nc, maxJob);
    if (problem) this.#log.error({ maxBodyBytes: config.maxBodyBytes }, `${problem}; larger webhooks are answered 413`);
    this.#stores = {
      idempotency: buckets.idempotency,
      signatures,
      rateLimits,
      workflows: new WorkflowRepository(buckets.workflows, buckets.webhooks, jsm, config.dataKeys),
      executions: new ExecutionRepository(buckets.executions, jsm),
      workspaces: new WorkspaceRepository(workspaces, new ChargeLedger(jetstream(nc, { timeout: 3000 }), jsm, workspaces)),
      maxPayload: nc.info?.max_payload,
      announceCancel: (executionId) => nc.publish(cancelSubject(executionId)),
    };
  }

  #readyDetails(): Record<string, unknown> {
    return {
      nats: this.#client.state,
      streamReady: this.#stores !== undefined,
      workflowsLoaded: this.#workflowCache.ready,
      workspacesLoaded: this.#workspaceCache.ready,
    };
  }

  /** The request handler: webhooks, the ops routes, the console's files, then the control plane (token checked on the head). */
  #router(webhookDeps: WebhookDeps, ops: OpsRoutes, consoleFiles: StaticRoute): http.RequestListener {
    const config = this.#config;
    const connectHandler = connectNodeAdapter({
      connect: true,
      grpcWeb: true,
      // gRPC needs HTTP/2; this port is HTTP/1.1 (see control-plane.ts).
      grpc: false,
      readMaxBytes: CONTROL_PLANE_MAX_BYTES,
      jsonOptions: controlPlaneJsonOptions(),
      // Requests that can hold a Struct are tapped, so own `__proto__` keys survive decoding (request-proto-keys.ts).
      contextValues: (req) => requestBytesContext(req, CONTROL_PLANE_INPUTS.get(splitTarget(req.url ?? '/').pathname), CONTROL_PLANE_MAX_BYTES),
      interceptors: [adminAuth(config.adminToken), strictEnums(), keepProtoKeysInRequests()],
      routes: (router) =>
        registerControlPlane(router, {
          config,
          stores: () => this.#stores,
          workflowCache: this.#workflowCache,
          publisher: webhookDeps.publisher,
          log: this.#log,
        }),
      fallback: (_req, res) => sendError(res as http.ServerResponse, new WebhookError('not_found', 'no such route')),
    });
    const isAdmin = adminTokenCheck(config.adminToken);
    return (req, res) => {
      const seen: Seen = { route: 'other', started: performance.now() };
      res.once('finish', () => this.#accessLog(req, res, seen));
      const target = splitTarget(req.url ?? '/');
      if (target.pathname.startsWith(WEBHOOK_PATH_PREFIX)) {
        seen.route = 'webhook';
        void handleWebhook(req, res, target, webhookDeps).then((o) => (seen.outcome = o));
        return;
      }
      const opsRoute = ops(req, res);
      if (opsRoute !== undefined) {
        seen.route = opsRoute;
        return;
      }
      if (consoleFiles(req, res, target.pathname)) {
        seen.route = 'console';
        return;
      }
      const input = CONTROL_PLANE_INPUTS.get(target.pathname);
      if (input === undefined) {
        answerThenDiscard(req, res, UNAUTHENTICATED_BODY_BYTES, () => sendError(res, new WebhookError('not_found', 'no such route')));
        return;
      }
      seen.route = 'control_plane';
      // The admin token is checked on the request head, before connect-node reads (and decompresses) a
      // body: 20 unauthenticated 340 KiB gzip bodies of 60 MiB JSON each took the gateway to 2 GB.
      if (!isAdmin(req.headers.authorization)) {
        answerThenDiscard(req, res, UNAUTHENTICATED_BODY_BYTES, () => sendUnauthenticated(req, res));
        return;
      }
      if ((req.headers['content-type'] ?? '').startsWith('application/json')) nameEnumFieldInErrors(res, input);
      connectHandler(req, res);
    };
  }

  /** One access-log line and one metrics count per finished request. */
  #accessLog(req: http.IncomingMessage, res: http.ServerResponse, seen: Seen): void {
    const { route, outcome } = seen;
    this.#metrics.request(route, res.statusCode);
    const fields = {
      route,
      method: req.method,
      url: scrubUrl(req.url ?? ''),
      status: res.statusCode,
      ms: Math.round((performance.now() - seen.started) * 10) / 10,
    };
    if (route === 'webhook') {
      // An accepted webhook is logged at debug: its execution record keeps it, the executor logs at info every
      // execution that does not succeed, and ldbox_gateway_requests_total counts the 202s; a line per accepted
      // call cost ~10 % of the gateway's CPU (bench/webhook). Refused calls (4xx/5xx) stay at info.
      const line = { ...fields, workflowId: outcome?.workflowId, executionId: outcome?.executionId, code: outcome?.code };
      if (res.statusCode === 202) this.#log.debug(line, 'webhook');
      else this.#log.info(line, 'webhook');
    } else if (route === 'control_plane' || route === 'other') this.#log.info(fields, 'request');
    else this.#log.debug(fields, 'request');
  }
}

/** What the access log learns of a request while it is handled. */
interface Seen {
  route: RouteLabel;
  started: number;
  outcome?: WebhookOutcome;
}

/**
 * CSPRNG bytes (for execution ids) taken from a 4 KiB pool refilled with `randomFillSync`: one OpenSSL call
 * per ~250 ids instead of one per id. Every byte is handed out once; each call gets its own copy.
 */
function pooledRandom(): RandomBytes {
  const pool = Buffer.alloc(4096);
  let pos = pool.length;
  return (size) => {
    if (size > pool.length) return randomBytes(size);
    if (pos + size > pool.length) {
      randomFillSync(pool);
      pos = 0;
    }
    const out = Buffer.from(pool.subarray(pos, pos + size));
    pos += size;
    return out;
  };
}
