/**
 * The gateway: one node:http (HTTP/1.1) server that routes
 * - `/api/hooks/workflows/<id>` → the webhook route (webhook-handler.ts);
 * - `/healthz` → 200 while the process runs; `/readyz` → 200 only when NATS is connected, the stream and
 *   buckets are set up and the workflow and workspace caches are loaded, else 503; `/metrics` → Prometheus;
 * - everything else → connect-node (`WorkflowService`, `WorkspaceService`; control-plane.ts), whose
 *   unknown paths answer 404 `not_found`.
 *
 * It starts before NATS is up and rides out outages: the connection reconnects forever, the JOBS stream
 * and KV buckets are (re)ensured on every (re)connect, the caches rebuild themselves, and the webhook
 * route answers 503 meanwhile (never 202 for a job that was not stored).
 *
 * Access logs are one pino line per request, with the `secret` query parameter scrubbed from the URL;
 * headers and bodies are never logged.
 */
import { randomBytes, randomFillSync } from 'node:crypto';
import http from 'node:http';
import type { DescMessage } from '@bufbuild/protobuf';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { jetstreamManager } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import type { GatewayConfig } from '../src/config/gateway-config.js';
import type { Logger } from '../src/logging/logger.js';
import { http1ServerOptions, limitHttp1Server } from '../src/http/connection-limits.js';
import { answerThenDiscard } from '../src/http/discard-body.js';
import { listenOrUndo, sendMetrics } from '../src/http/server-helpers.js';
import { connectNats, type ConnectNatsOptions } from '../src/nats/connect.js';
import { JobPublisher } from '../src/nats/job-publisher.js';
import { KvCache } from '../src/nats/kv-cache.js';
import { checkMaxPayload, ensureJobsStream, ensureKvBuckets, KV_BUCKETS, maxJobBytes } from '../src/nats/streams.js';
import { ExecutionRepository } from '../src/store/execution-repository.js';
import { WorkflowRepository } from '../src/store/workflow-repository.js';
import { decodeWorkflowForRouting } from '../src/store/workflow-codec.js';
import { ensureWorkspacesBucket, WORKSPACES_BUCKET, WorkspaceRepository, type WorkspaceRecord } from '../src/store/workspace-repository.js';
import type { RandomBytes } from '../src/workflows/webhook-secret.js';
import type { WorkflowRecord } from '../src/workflows/workflow-model.js';
import { adminAuth, adminTokenCheck, controlPlaneJsonOptions, type ControlPlaneStores, registerControlPlane, sendUnauthenticated, UNAUTHENTICATED_BODY_BYTES } from './control-plane.js';
import { createGatewayMetrics, type RouteLabel } from './gateway-metrics.js';
import { RateLimiter } from './rate-limiter.js';
import { nameEnumFieldInErrors, strictEnums } from './strict-enums.js';
import { WorkflowService, WorkspaceService } from '../src/gen/ldbox/workflows/v1/workflows_pb.js';
import { sendError, sendJson, WebhookError } from './webhook-errors.js';
import { handleWebhook, splitTarget, WEBHOOK_PATH_PREFIX, type WebhookOutcome } from './webhook-handler.js';
import { PublishBatcher } from './publish-batch.js';
import { scrubUrl } from './webhook-payload.js';

const MiB = 1024 * 1024;

/** The request message of each control-plane path (`/<service>/<method>`). */
const CONTROL_PLANE_INPUTS = new Map<string, DescMessage>([WorkflowService, WorkspaceService].flatMap((s) => s.methods.map((m) => [`/${s.typeName}/${m.name}`, m.input] as const)));

export interface Gateway {
  /** The bound port (useful when the config asked for port 0). */
  readonly port: number;
  /** What `/readyz` answers. */
  ready(): boolean;
  /** Stops taking requests, lets running ones finish (up to `timeoutMs`), then drains NATS. */
  close(timeoutMs?: number): Promise<void>;
}

export interface StartGatewayOptions {
  /** NATS reconnect tuning (tests reconnect fast). */
  nats?: Pick<ConnectNatsOptions, 'reconnectTimeWaitMs' | 'reconnectJitterMs' | 'connectTimeoutMs'>;
}

interface Stores extends ControlPlaneStores {
  idempotency: KV;
}

/** Starts the gateway and resolves once it listens (NATS may still be connecting: see `ready()`). */
export async function startGateway(configIn: GatewayConfig, log: Logger, options: StartGatewayOptions = {}): Promise<Gateway> {
  const config = { ...configIn };
  const metrics = createGatewayMetrics();
  const client = connectNats(config.nats, { name: 'ldbox-gateway', logger: log, ...options.nats });
  const publisher = new JobPublisher(client, { timeoutMs: config.publishTimeoutMs });
  // Node `auth` values are opened here too (the cache is compared with what the control plane wrote). A
  // workflow whose `auth` cannot be opened still routes its webhooks (with a warning naming the key id): the
  // executor refuses its executions with that message, a clearer answer than a 404.
  const workflowCache = new KvCache<WorkflowRecord>({
    client,
    bucket: KV_BUCKETS.workflows,
    logger: log,
    decode: (v) => decodeWorkflowForRouting(v, config.dataKeys, (err) => log.warn({ keyId: err.keyId, err: err.message }, 'a stored node auth cannot be opened')),
  });
  const workspaceCache = new KvCache<WorkspaceRecord>({ client, bucket: WORKSPACES_BUCKET, logger: log });
  const limiter = new RateLimiter();
  workflowCache.onChange((id, value) => {
    if (value === undefined) limiter.forget(id);
  });

  let stores: Stores | undefined;
  let closing = false;
  let settingUp = false;
  // Ensure the stream and buckets on every (re)connect: NATS may have come back without its data.
  const setup = async (): Promise<void> => {
    if (settingUp) return;
    settingUp = true;
    try {
      while (!closing && client.state === 'connected') {
        try {
          const nc = client.nc;
          const jsm = await jetstreamManager(nc, { timeout: 3000 });
          const maxJob = maxJobBytes(config.maxBodyBytes);
          await ensureJobsStream(jsm, { ...config.stream, maxMsgSize: maxJob });
          const buckets = await ensureKvBuckets(nc, jsm, { idempotencyTtlMs: config.idempotencyTtlMs, replicas: config.stream.replicas, timeoutMs: 3000 });
          const workspaces = await ensureWorkspacesBucket(nc, jsm, { replicas: config.stream.replicas });
          const problem = checkMaxPayload(nc, maxJob);
          if (problem) log.error({ maxBodyBytes: config.maxBodyBytes }, `${problem}; larger webhooks are answered 413`);
          stores = {
            idempotency: buckets.idempotency,
            workflows: new WorkflowRepository(buckets.workflows, buckets.webhooks, jsm, config.dataKeys),
            executions: new ExecutionRepository(buckets.executions, jsm),
            workspaces: new WorkspaceRepository(workspaces),
            maxPayload: nc.info?.max_payload,
          };
          return;
        } catch (err) {
          log.warn({ err: (err as Error).message }, 'setting up the JOBS stream and KV buckets failed, retrying');
          await new Promise((r) => setTimeout(r, 1000));
        }
      }
    } finally {
      settingUp = false;
    }
  };
  client.onState((s) => {
    metrics.setNatsConnected(s === 'connected');
    if (s === 'connected') void setup();
  });

  const ready = () => !closing && client.isConnected && stores !== undefined && workflowCache.ready && workspaceCache.ready;

  const connectHandler = connectNodeAdapter({
    connect: true,
    grpcWeb: true,
    // gRPC needs HTTP/2; this port is HTTP/1.1 (see control-plane.ts).
    grpc: false,
    readMaxBytes: 64 * MiB,
    jsonOptions: controlPlaneJsonOptions(),
    interceptors: [adminAuth(config.adminToken), strictEnums()],
    routes: (router) => registerControlPlane(router, { config, stores: () => stores, workflowCache, log }),
    fallback: (_req, res) => sendError(res as http.ServerResponse, new WebhookError('not_found', 'no such route')),
  });

  const webhookDeps = {
    config,
    workflows: workflowCache,
    workspaces: workspaceCache,
    // One socket write per event-loop turn for the jobs (and queued records) of all requests in it.
    publisher: new PublishBatcher(publisher),
    stores: () => stores,
    limiter,
    random: pooledRandom(),
    log,
    observeEnqueue: (s: number, outcome: string) => metrics.enqueue(s, outcome),
  };

  const isAdmin = adminTokenCheck(config.adminToken);
  const server = http.createServer(http1ServerOptions(config.http), (req, res) => {
    const started = performance.now();
    const target = splitTarget(req.url ?? '/');
    let route: RouteLabel = 'other';
    let outcome: WebhookOutcome | undefined;
    res.once('finish', () => {
      metrics.request(route, res.statusCode);
      const fields = { route, method: req.method, url: scrubUrl(req.url ?? ''), status: res.statusCode, ms: Math.round((performance.now() - started) * 10) / 10 };
      if (route === 'webhook') {
        // An accepted webhook is logged at debug: the executor logs every execution at info (with its ids), and
        // ldbox_gateway_requests_total counts the 202s; a line per accepted call cost ~10 % of the gateway's CPU
        // (bench/webhook). Refused calls (4xx/5xx) stay at info.
        const line = { ...fields, workflowId: outcome?.workflowId, executionId: outcome?.executionId, code: outcome?.code };
        if (res.statusCode === 202) log.debug(line, 'webhook');
        else log.info(line, 'webhook');
      }
      else if (route === 'control_plane' || route === 'other') log.info(fields, 'request');
      else log.debug(fields, 'request');
    });
    if (target.pathname.startsWith(WEBHOOK_PATH_PREFIX)) {
      route = 'webhook';
      void handleWebhook(req, res, target, webhookDeps).then((o) => (outcome = o));
      return;
    }
    switch (target.pathname) {
      case '/healthz':
        route = 'healthz';
        sendJson(res, 200, { status: 'ok' });
        return;
      case '/readyz':
        route = 'readyz';
        sendJson(res, ready() ? 200 : 503, {
          status: ready() ? 'ready' : 'not_ready',
          nats: client.state,
          streamReady: stores !== undefined,
          workflowsLoaded: workflowCache.ready,
          workspacesLoaded: workspaceCache.ready,
        });
        return;
      case '/metrics':
        route = 'metrics';
        sendMetrics(res, metrics.registry, (err) => {
          log.error({ err }, 'metrics failed');
          sendError(res, new WebhookError('internal_error', 'metrics failed'));
        });
        return;
    }
    const input = CONTROL_PLANE_INPUTS.get(target.pathname);
    if (input === undefined) {
      answerThenDiscard(req, res, UNAUTHENTICATED_BODY_BYTES, () => sendError(res, new WebhookError('not_found', 'no such route')));
      return;
    }
    route = 'control_plane';
    // The admin token is checked on the request head, before connect-node reads (and decompresses) a
    // body: 20 unauthenticated 340 KiB gzip bodies of 60 MiB JSON each took the gateway to 2 GB.
    if (!isAdmin(req.headers.authorization)) {
      answerThenDiscard(req, res, UNAUTHENTICATED_BODY_BYTES, () => sendUnauthenticated(req, res));
      return;
    }
    if ((req.headers['content-type'] ?? '').startsWith('application/json')) nameEnumFieldInErrors(res, input);
    connectHandler(req, res);
  });
  limitHttp1Server(server, config.http);

  // The port is taken (or not ours): undo what started, so the process can exit with the error.
  const port = await listenOrUndo(server, config.port, config.host, async () => {
    closing = true;
    publisher.close();
    await Promise.all([workflowCache.stop(), workspaceCache.stop()]);
    await client.close();
  });
  if (!config.baseUrlSet) config.baseUrl = `http://127.0.0.1:${port}`;
  log.info({ host: config.host, port, nats: config.nats.shown, baseUrl: config.baseUrl, maxBodyBytes: config.maxBodyBytes, webhookRate: config.webhookRate }, 'gateway listening');

  return {
    port,
    ready,
    async close(timeoutMs = 10_000) {
      if (closing) return;
      closing = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([closed, new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)))]);
      clearTimeout(timer);
      server.closeAllConnections();
      await closed;
      publisher.close();
      await Promise.all([workflowCache.stop(), workspaceCache.stop()]);
      await client.close();
      log.info('gateway stopped');
    },
  };
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
