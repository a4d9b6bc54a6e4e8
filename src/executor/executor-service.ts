/**
 * The executor role: pulls webhook jobs from the JOBS stream's durable consumer (shared by all executors,
 * so the stream balances jobs across them), runs each as an execution (run-execution.ts) against the
 * runners of LDBOX_RUNNER_URLS, and serves `/healthz`, `/readyz` and `/metrics` on an HTTP/1.1 port.
 *
 * It starts before NATS (and before the gateway has created the stream and buckets) and rides out
 * outages: the connection reconnects forever, the buckets are re-opened after every reconnect, and the
 * consumer loop waits and pulls again. The executor never creates or changes the stream or the buckets —
 * their limits are the gateway's configuration — it only creates its durable consumer.
 *
 * Stopping (SIGTERM): no new pulls; running jobs get `drainMs` to finish, then their runner calls are
 * cancelled and the jobs given back (nak) for another executor, without waiting out the ack wait.
 */
import { setMaxListeners } from 'node:events';
import http from 'node:http';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { EXECUTE_DEADLINE_SLACK_MS, type ExecutorConfig } from '../config/executor-config.js';
import { http1ServerOptions, limitHttp1Server } from '../http/connection-limits.js';
import { listenOrUndo, sendMetrics } from '../http/server-helpers.js';
import type { Logger } from '../logging/logger.js';
import { connectNats, type ConnectNatsOptions } from '../nats/connect.js';
import { ensureJobConsumer, type Job, JOBS_CONSUMER, runJobConsumer } from '../nats/job-consumer.js';
import { isStreamNotFound, JOBS_STREAM, KV_BUCKETS } from '../nats/streams.js';
import { ExecutionRepository } from '../store/execution-repository.js';
import { WorkflowRepository } from '../store/workflow-repository.js';
import { WORKSPACES_BUCKET, WorkspaceRepository } from '../store/workspace-repository.js';
import { MalformedJobError, parseWebhookJob } from '../workflows/webhook-job.js';
import { createExecutorMetrics } from './executor-metrics.js';
import { type ExecutionDeps, recordExhausted, recordMalformed, runExecution } from './run-execution.js';
import { RunnerClients } from './runner-clients.js';

export interface Executor {
  /** The bound port of the health/metrics server. */
  readonly port: number;
  /** What `/readyz` answers: NATS connected, buckets open, consumer in place. */
  ready(): boolean;
  /** Jobs running now. */
  readonly inFlight: number;
  /** Stops pulling, lets running jobs finish for up to `drainMs`, gives the rest back, disconnects. */
  close(drainMs?: number): Promise<void>;
}

export interface StartExecutorOptions {
  /** NATS reconnect tuning (tests reconnect fast). */
  nats?: Pick<ConnectNatsOptions, 'reconnectTimeWaitMs' | 'reconnectJitterMs' | 'connectTimeoutMs'>;
  /** Server-side wait of one pull; shorter in tests so that stopping is quick. Default 5 s. */
  pullExpiresMs?: number;
  /** Delay before a failed attempt is retried. Default 1 s, 2 s, 4 s … capped at 30 s. */
  retryDelayMs?: (attempt: number) => number;
}

interface Stores {
  nc: NatsConnection;
  executions: ExecutionRepository;
  workflows: WorkflowRepository;
  workspaces: WorkspaceRepository;
}

/** Stores are re-opened after this long without success (NATS up but the gateway never created them). */
const SETUP_RETRY_MS = 1000;
const DEFAULT_MAX_PAYLOAD = 1024 * 1024;

/** Starts the executor and resolves once its HTTP port listens (NATS may still be connecting). */
export async function startExecutor(config: ExecutorConfig, log: Logger, options: StartExecutorOptions = {}): Promise<Executor> {
  const client = connectNats(config.nats, { name: 'ldbox-executor', logger: log, ...options.nats });
  const runners = new RunnerClients(config.runnerUrls, config.runnerToken, { tls: config.runnerTls });
  const cancelRuns = new AbortController();
  // Every job in flight listens on it (its runner call, a wait for NATS): not a leak.
  setMaxListeners(config.concurrency * 4 + 10, cancelRuns.signal);
  let stores: Stores | undefined;
  let consumerReady = false;
  let closing = false;

  const metrics = createExecutorMetrics({
    concurrency: config.concurrency,
    inFlight: () => loop.inFlight,
    queueDepth: async () => {
      if (!client.isConnected) return undefined;
      const jsm = await jetstreamManager(client.nc, { timeout: 1000 });
      const info = await jsm.consumers.info(JOBS_STREAM, JOBS_CONSUMER);
      return { pending: info.num_pending, unacked: info.num_ack_pending };
    },
  });

  const openStores = async (nc: NatsConnection): Promise<Stores> => {
    if (stores?.nc === nc) return stores;
    const jsm = await jetstreamManager(nc, { timeout: 3000 });
    const kvm = new Kvm(jetstream(nc, { timeout: 3000 }));
    const open = async (name: string): Promise<KV> => {
      await jsm.streams.info(`KV_${name}`); // throws "stream not found" until the gateway created it
      return kvm.open(name);
    };
    const [workflows, webhooks, executions, workspaces] = await Promise.all([
      open(KV_BUCKETS.workflows),
      open(KV_BUCKETS.webhooks),
      open(KV_BUCKETS.executions),
      open(WORKSPACES_BUCKET),
    ]);
    stores = {
      nc,
      workflows: new WorkflowRepository(workflows, webhooks, jsm, config.dataKeys),
      executions: new ExecutionRepository(executions, jsm),
      workspaces: new WorkspaceRepository(workspaces),
    };
    return stores;
  };

  const deps = (s: Stores): ExecutionDeps => ({
    executions: s.executions,
    workflows: s.workflows,
    workspaces: s.workspaces,
    runners,
    executeDeadlineMs: config.executeDeadlineMs,
    executeDeadlineSlackMs: EXECUTE_DEADLINE_SLACK_MS,
    maxRecordBytes: () => s.nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD,
    log,
    observer: { execute: (seconds, outcome) => metrics.execute(seconds, outcome) },
  });

  // Aborted at shutdown too: a job must not hold close() while it waits for NATS to come back.
  const currentStores = async (): Promise<Stores> => openStores(await client.whenConnected(cancelRuns.signal));

  const handler = async (job: Job): Promise<void> => {
    const t0 = performance.now();
    let s: Stores;
    try {
      s = await currentStores();
    } catch (err) {
      if (!cancelRuns.signal.aborted) throw err;
      job.nak(); // shutting down while NATS is away: give the job back, not an attempt used up
      return;
    }
    let parsed;
    try {
      parsed = parseWebhookJob(job.data);
    } catch (err) {
      if (!(err instanceof MalformedJobError)) throw err;
      const { workflowId, executionId } = err.ids;
      log.error({ seq: job.seq, subject: job.subject, workflowId, executionId, reason: err.message }, 'malformed job removed from the queue');
      if (workflowId && executionId) await recordMalformed({ workflowId, executionId }, err.message, deps(s));
      metrics.execution('malformed', (performance.now() - t0) / 1000);
      metrics.attempt('done');
      return; // acked: it can never run
    }
    if (job.attempt === 1) metrics.queueWait(Math.max(0, Date.now() - Date.parse(parsed.receivedAt)) / 1000);
    try {
      const outcome = await runExecution(parsed, job.attempt, deps(s), cancelRuns.signal);
      metrics.execution(outcome, (performance.now() - t0) / 1000);
      metrics.attempt('done');
      log.info({ executionId: parsed.executionId, workflowId: parsed.workflowId, outcome, attempt: job.attempt, ms: Math.round(performance.now() - t0) }, 'execution');
    } catch (err) {
      if (cancelRuns.signal.aborted) {
        // Shutting down: hand the job to another executor now, without using up its last attempt.
        job.nak();
        metrics.attempt('retry');
        return;
      }
      if (!job.isLastAttempt) metrics.attempt('retry');
      throw err;
    }
  };

  const onExhausted = async (job: Job, error: unknown): Promise<void> => {
    const s = await currentStores();
    let parsed;
    try {
      parsed = parseWebhookJob(job.data);
    } catch {
      return; // the handler records malformed jobs; nothing more can be said of this one
    }
    log.error({ executionId: parsed.executionId, workflowId: parsed.workflowId, attempt: job.attempt, err: (error as Error | undefined)?.message }, 'execution failed: attempts used up');
    await recordExhausted(parsed, job.attemptsMade, error, deps(s));
    metrics.execution('failed', 0);
    metrics.attempt('exhausted');
  };

  const loop = runJobConsumer({
    client,
    handler,
    onExhausted,
    concurrency: config.concurrency,
    ackWaitMs: config.ackWaitMs,
    maxAttempts: config.maxAttempts,
    pullExpiresMs: options.pullExpiresMs,
    retryDelayMs: options.retryDelayMs,
    logger: log,
    ensure: async (jsm: JetStreamManager) => {
      await ensureJobConsumer(jsm, { ackWaitMs: config.ackWaitMs, maxAttempts: config.maxAttempts });
      consumerReady = true;
    },
  });

  // Open the stores on every (re)connect too, so /readyz tells the truth before the first job arrives.
  let toldWaiting = false;
  const setup = async (): Promise<void> => {
    while (!closing && client.isConnected) {
      try {
        await openStores(client.nc);
        return;
      } catch (err) {
        // The gateway creates the buckets: until it has (a fresh start of everything), waiting is normal.
        if (!isStreamNotFound(err)) log.warn({ err: (err as Error).message }, 'opening the KV buckets failed, retrying');
        else if (!toldWaiting) {
          log.info('waiting for a gateway to create the KV buckets');
          toldWaiting = true;
        }
        await new Promise((r) => setTimeout(r, SETUP_RETRY_MS));
      }
    }
  };
  client.onState((state) => {
    metrics.setNatsConnected(state === 'connected');
    if (state === 'connected') void setup();
  });

  // nats.js keeps one connection object across reconnects, so the consumer and stores, once set up on it,
  // stay valid after a reconnect (the consumer loop re-creates them should NATS have lost them).
  const ready = (): boolean => !closing && client.isConnected && stores?.nc === client.connection && consumerReady;

  const server = http.createServer(http1ServerOptions(config.http), (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (path === '/healthz') return json(200, { status: 'ok' });
    if (path === '/readyz') {
      const ok = ready();
      return json(ok ? 200 : 503, { status: ok ? 'ready' : 'not_ready', nats: client.state, storesOpen: stores !== undefined, consumerReady, inFlight: loop.inFlight });
    }
    if (path === '/metrics') {
      sendMetrics(res, metrics.registry, (err) => {
        log.error({ err }, 'metrics failed');
        json(500, { error: { code: 'internal_error', message: 'metrics failed' } });
      });
      return;
    }
    json(404, { error: { code: 'not_found', message: 'no such route: the executor serves /healthz, /readyz and /metrics' } });
  });
  limitHttp1Server(server, config.http);
  // The port is taken (or not ours): undo what started, so the process can exit with the error.
  const port = await listenOrUndo(server, config.port, config.host, async () => {
    closing = true;
    await loop.stop();
    await client.close();
  });
  log.info({ host: config.host, port, nats: config.nats.shown, runners: config.runnerUrls, concurrency: config.concurrency }, 'executor started');

  return {
    port,
    ready,
    get inFlight() {
      return loop.inFlight;
    },
    async close(drainMs = 10_000) {
      if (closing) return;
      closing = true;
      const stopped = loop.stop();
      let timer: NodeJS.Timeout | undefined;
      const drained = await Promise.race([stopped.then(() => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), drainMs)))]);
      clearTimeout(timer);
      if (!drained) {
        log.warn({ inFlight: loop.inFlight }, 'jobs still running at shutdown: cancelling them, they go back to the queue');
        cancelRuns.abort();
        await stopped;
      }
      log.debug('job loop stopped');
      const serverClosed = new Promise<void>((r) => server.close(() => r()));
      server.closeAllConnections();
      await serverClosed;
      log.debug('http server closed');
      await client.close();
      log.info('executor stopped');
    },
  };
}
