/**
 * The executor role: pulls webhook jobs from the JOBS stream's durable consumer (shared by all executors,
 * so the stream balances jobs across them), runs each as an execution (run-execution.ts) against the
 * runners of LDBOX_RUNNER_URLS, and serves `/healthz`, `/readyz` and `/metrics` on an HTTP/1.1 port.
 *
 * It starts before NATS (and before the gateway has created the stream and buckets) and rides out
 * outages: the connection reconnects forever, the buckets are re-opened after every reconnect, and the
 * consumer loop waits and pulls again. The executor never changes the stream or the buckets — their limits
 * are the gateway's configuration — it creates its durable consumer, and the CHARGES stream when a gateway
 * older than it has not (with the executions bucket's retention and replicas, as a gateway would).
 *
 * Stopping (SIGTERM, `close(drainMs)`): no new pulls; running jobs get `drainMs` to finish, then their runner
 * calls are cancelled and the jobs given back (nak) for another executor, without waiting out the ack wait.
 * `destroy()` does the same without the wait. States: src/lifecycle/role-lifecycle.ts.
 */
import { setMaxListeners } from 'node:events';
import http from 'node:http';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { EXECUTE_DEADLINE_SLACK_MS, type ExecutorConfig } from './executor-config.js';
import { http1ServerOptions, limitHttp1Server } from '../http/connection-limits.js';
import { createOpsRoutes } from '../http/ops-routes.js';
import { sendJson } from '../http/send-json.js';
import { listenOrUndo } from '../http/server-helpers.js';
import { type Grace, RoleLifecycle, type RoleState } from '../lifecycle/role-lifecycle.js';
import type { Logger } from '../logging/logger.js';
import { connectNats, type ConnectNatsOptions, type NatsClient } from '../nats/connect.js';
import { ensureJobConsumer, type Job, type JobConsumerLoop, JOBS_CONSUMER, runJobConsumer } from '../nats/job-consumer.js';
import { keepSetUp, type KeptSetUp } from '../nats/keep-set-up.js';
import { CANCEL_SUBJECTS, isStreamNotFound, JOBS_STREAM, KV_BUCKETS } from '../nats/streams.js';
import { ExecutionRepository } from '../store/execution-repository.js';
import { WorkflowRepository } from '../store/workflow-repository.js';
import { CHARGES_STREAM, ChargeLedger, ensureChargesStream } from '../store/charge-ledger.js';
import { WORKSPACES_BUCKET, type WorkspaceRecord, WorkspaceRepository } from '../store/workspace-repository.js';
import { KvCache } from '../nats/kv-cache.js';
import { createSpendingCap } from './spending-cap.js';
import { WorkflowCopies } from './workflow-copies.js';
import { MalformedJobError, parseWebhookJob } from '../workflows/webhook-job.js';
import { createExecutorMetrics, type ExecutorMetrics } from './executor-metrics.js';
import { type ExecutionDeps, ExecutionCancelledError, recordExhausted, recordMalformed, runExecution } from './run-execution.js';
import { RunnerClients } from './runner-clients.js';
import { JobPublisher } from '../nats/job-publisher.js';
import { PublishBatcher } from '../nats/publish-batcher.js';

export interface Executor {
  /** The bound port of the health/metrics server. */
  readonly port: number;
  /** Where the executor is in its lifecycle (src/lifecycle/role-lifecycle.ts). */
  readonly state: RoleState;
  /** What `/readyz` answers: NATS connected, buckets open, consumer in place. */
  ready(): boolean;
  /** Jobs running now. */
  readonly inFlight: number;
  /** Stops pulling, lets running jobs finish for up to `drainMs`, gives the rest back, disconnects. Idempotent. */
  close(drainMs?: number): Promise<void>;
  /** Stops pulling, cancels running jobs at once and gives them back, disconnects. Idempotent. */
  destroy(): Promise<void>;
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
  ledger: ChargeLedger;
}

/** Stores are re-opened after this long without success (NATS up but the gateway never created them). */
const SETUP_RETRY_MS = 1000;
const DEFAULT_MAX_PAYLOAD = 1024 * 1024;
/** How often the executor folds the CHARGES stream into the workspaces' spend (charge-ledger.ts). */
const ROLLUP_INTERVAL_MS = 1000;

/** Starts the executor and resolves once its HTTP port listens (NATS may still be connecting). */
export async function startExecutor(config: ExecutorConfig, log: Logger, options: StartExecutorOptions = {}): Promise<Executor> {
  const executor = new ExecutorRole(config, log, options);
  await executor.listen();
  return executor;
}

/** The executor's parts, wired in the constructor; {@link RoleLifecycle} holds its state. */
class ExecutorRole extends RoleLifecycle implements Executor {
  readonly #config: ExecutorConfig;
  readonly #log: Logger;
  readonly #client: NatsClient;
  readonly #runners: RunnerClients;
  /** Aborted when the drain is over (or at `destroy()`): running jobs' runner calls and NATS waits end. */
  readonly #cancelRuns = new AbortController();
  readonly #metrics: ExecutorMetrics;
  readonly #loop: JobConsumerLoop;
  readonly #setUp: KeptSetUp;
  readonly #server: http.Server;
  #stores: Stores | undefined;
  /** The runs in flight by execution id: CancelExecution's announcement aborts one (src/nats/streams.ts `cancelSubject`). */
  readonly #runs = new Map<string, AbortController>();
  #cancelSub: Subscription | undefined;
  #consumerReady = false;
  /** The "waiting for a gateway" line is logged once, not every retry. */
  #toldWaiting = false;
  #port: number | undefined;
  /** Budgets, watched: only workspaces with one are checked before a run (spending-cap.ts). */
  readonly #budgets: KvCache<WorkspaceRecord>;
  readonly #spendingCap: (workspace: string, now: Date) => Promise<string | undefined>;
  #rollUpTimer: NodeJS.Timeout | undefined;
  readonly #workflowCopies: WorkflowCopies;
  /** Record writes and charges: plain publishes with PubAcks matched by token (src/nats/job-publisher.ts). */
  readonly #publisher: JobPublisher;
  /** Over {@link #publisher}: the writes of one event-loop turn leave in one socket write (src/nats/publish-batcher.ts). */
  readonly #batched: PublishBatcher;
  #lastRollUpError = 0;

  constructor(config: ExecutorConfig, log: Logger, options: StartExecutorOptions) {
    super();
    this.#config = config;
    this.#log = log;
    const client = (this.#client = connectNats(config.nats, { name: 'ldbox-executor', logger: log, ...options.nats }));
    this.#runners = new RunnerClients(config.runnerUrls, config.runnerToken, { tls: config.runnerTls, unaryOnly: config.runnerCalls === 'unary' });
    // Every job in flight listens on it (its runner call, a wait for NATS): not a leak.
    setMaxListeners(config.concurrency * 4 + 10, this.#cancelRuns.signal);
    this.#metrics = createExecutorMetrics({
      concurrency: config.concurrency,
      inFlight: () => this.#loop.inFlight,
      queueDepth: async () => {
        if (!client.isConnected) return undefined;
        const jsm = await jetstreamManager(client.nc, { timeout: 1000 });
        const info = await jsm.consumers.info(JOBS_STREAM, JOBS_CONSUMER);
        return { pending: info.num_pending, unacked: info.num_ack_pending };
      },
    });

    this.#loop = runJobConsumer({
      client,
      handler: (job) => this.#handle(job),
      onExhausted: (job, error) => this.#onExhausted(job, error),
      concurrency: config.concurrency,
      ackWaitMs: config.ackWaitMs,
      maxAttempts: config.maxAttempts,
      pullExpiresMs: options.pullExpiresMs,
      retryDelayMs: options.retryDelayMs,
      logger: log,
      ensure: async (jsm: JetStreamManager) => {
        await ensureJobConsumer(jsm, { ackWaitMs: config.ackWaitMs, maxAttempts: config.maxAttempts });
        this.#consumerReady = true;
      },
    });

    this.#publisher = new JobPublisher(client, { timeoutMs: 3000 });
    this.#batched = new PublishBatcher(this.#publisher);
    this.#budgets = new KvCache<WorkspaceRecord>({ client, bucket: WORKSPACES_BUCKET, logger: log });
    this.#workflowCopies = new WorkflowCopies(client, config.dataKeys, async (id) => (await this.#currentStores()).workflows.get(id), log);
    this.#spendingCap = createSpendingCap({
      budgets: this.#budgets,
      read: async (workspace, now) => (await this.#currentStores()).workspaces.get(workspace, now),
    });
    this.#scheduleRollUp();

    client.onState((state) => this.#metrics.setNatsConnected(state === 'connected'));
    // Open the stores on every (re)connect too, so /readyz tells the truth before the first job arrives.
    this.#setUp = keepSetUp(client, {
      setup: async (nc) => void (await this.#openStores(nc)),
      retryMs: SETUP_RETRY_MS,
      onError: (err) => this.#setUpFailed(err),
    });

    const ops = createOpsRoutes({ ready: () => this.ready(), readyDetails: () => this.#readyDetails(), registry: this.#metrics.registry, log });
    this.#server = http.createServer(http1ServerOptions(config.http), (req, res) => {
      if (ops(req, res) !== undefined) return;
      sendJson(res, 404, { error: { code: 'not_found', message: 'no such route: the executor serves /healthz, /readyz and /metrics' } });
    });
    limitHttp1Server(this.#server, config.http);
  }

  get port(): number {
    return this.#port ?? 0;
  }

  get inFlight(): number {
    return this.#loop.inFlight;
  }

  // nats.js keeps one connection object across reconnects, so the consumer and stores, once set up on it,
  // stay valid after a reconnect (the consumer loop re-creates them should NATS have lost them).
  ready(): boolean {
    return this.state === 'ready' && this.#client.isConnected && this.#stores?.nc === this.#client.connection && this.#consumerReady;
  }

  /** Binds the ops port; when it cannot, what the constructor started is stopped and the error rethrown. */
  async listen(): Promise<void> {
    const config = this.#config;
    this.#port = await listenOrUndo(this.#server, config.port, config.host, () => this.destroy());
    this.started();
    this.#log.info(
      { host: config.host, port: this.#port, nats: config.nats.shown, runners: config.runnerUrls, concurrency: config.concurrency },
      'executor started',
    );
  }

  protected async drain(grace: Grace): Promise<void> {
    this.#setUp.close();
    clearTimeout(this.#rollUpTimer);
    this.#rollUpTimer = undefined;
    const stopped = this.#loop.close();
    if (!(await grace.within(stopped))) {
      if (this.#loop.inFlight > 0)
        this.#log.warn({ inFlight: this.#loop.inFlight }, 'jobs still running at shutdown: cancelling them, they go back to the queue');
      this.#cancelRuns.abort();
      for (const run of this.#runs.values()) run.abort(this.#cancelRuns.signal.reason);
      await stopped;
    }
    this.#log.debug('job loop stopped');
  }

  protected async release(): Promise<void> {
    const serverClosed = new Promise<void>((r) => this.#server.close(() => r()));
    this.#server.closeAllConnections();
    await serverClosed;
    this.#log.debug('http server closed');
    this.#publisher.close();
    this.#runners.close();
    await Promise.all([this.#budgets.close(), this.#workflowCopies.close()]);
    await this.#client.close(this.destroyed ? 0 : undefined);
    if (this.#port !== undefined) this.#log.info('executor stopped');
  }

  #readyDetails(): Record<string, unknown> {
    return { nats: this.#client.state, storesOpen: this.#stores !== undefined, consumerReady: this.#consumerReady, inFlight: this.#loop.inFlight };
  }

  #setUpFailed(err: unknown): void {
    // The gateway creates the buckets: until it has (a fresh start of everything), waiting is normal.
    if (!isStreamNotFound(err)) this.#log.warn({ err: (err as Error).message }, 'opening the KV buckets failed, retrying');
    else if (!this.#toldWaiting) {
      this.#log.info('waiting for a gateway to create the KV buckets');
      this.#toldWaiting = true;
    }
  }

  async #openStores(nc: NatsConnection): Promise<Stores> {
    if (this.#stores?.nc === nc) return this.#stores;
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
      jsm.streams.info(CHARGES_STREAM).catch(async (err: unknown) => {
        if (!isStreamNotFound(err)) throw err;
        // Gateways older than the ledger do not create it (upgrades go executors first): create it as a
        // gateway would, from the limits the gateways gave the executions bucket. The gateways own it after.
        const records = (await jsm.streams.info(`KV_${KV_BUCKETS.executions}`)).config;
        await ensureChargesStream(jsm, { maxAgeMs: records.max_age / 1_000_000, replicas: records.num_replicas });
      }),
    ]);
    this.#listenForCancels(nc);
    const ledger = new ChargeLedger(jetstream(nc, { timeout: 3000 }), jsm, workspaces, this.#batched);
    this.#stores = {
      nc,
      workflows: new WorkflowRepository(workflows, webhooks, jsm, this.#config.dataKeys),
      executions: new ExecutionRepository(executions, jsm, undefined, undefined, this.#batched),
      workspaces: new WorkspaceRepository(workspaces, ledger),
      ledger,
    };
    return this.#stores;
  }

  /**
   * Subscribes to CancelExecution's announcements once per connection (nats.js keeps a subscription across
   * reconnects). A cancel missed while disconnected still stops the run at its next record write.
   */
  #listenForCancels(nc: NatsConnection): void {
    try {
      this.#cancelSub?.unsubscribe(); // of a connection given up (the stores are opened anew only for a new one)
    } catch {
      // that connection is closed: so is its subscription
    }
    this.#cancelSub = nc.subscribe(CANCEL_SUBJECTS, {
      callback: (err, msg) => {
        if (err) return;
        const executionId = msg.subject.slice(msg.subject.lastIndexOf('.') + 1);
        const run = this.#runs.get(executionId);
        if (!run) return;
        this.#log.info({ executionId }, 'execution cancelled: stopping its run');
        run.abort(new ExecutionCancelledError(`execution ${executionId} was cancelled`));
      },
    });
  }

  // Aborted at shutdown too: a job must not hold close() while it waits for NATS to come back.
  async #currentStores(): Promise<Stores> {
    return this.#openStores(await this.#client.whenConnected(this.#cancelRuns.signal));
  }

  #deps(s: Stores): ExecutionDeps {
    return {
      executions: s.executions,
      workflows: this.#workflowCopies,
      charges: s.ledger,
      spendingCap: this.#spendingCap,
      runners: this.#runners,
      executeDeadlineMs: this.#config.executeDeadlineMs,
      executeDeadlineSlackMs: EXECUTE_DEADLINE_SLACK_MS,
      runningRecordDelayMs: this.#config.runningRecordDelayMs,
      maxRecordBytes: () => s.nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD,
      log: this.#log,
      observer: { execute: (seconds, outcome) => this.#metrics.execute(seconds, outcome) },
    };
  }

  /**
   * Folds the charges stored since the last roll-up into the workspaces' spend, every ROLLUP_INTERVAL_MS
   * while the stores are open (every executor does; they do not count anything twice, charge-ledger.ts).
   */
  #scheduleRollUp(): void {
    this.#rollUpTimer = setTimeout(async () => {
      const s = this.#stores;
      if (s && this.#client.connection === s.nc && this.#client.isConnected) {
        try {
          while ((await s.ledger.rollUp((ws, charges, end) => s.workspaces.fold(ws, charges, end, new Date()).then(() => undefined))) >= 10_000);
        } catch (err) {
          if (Date.now() - this.#lastRollUpError > 10_000) {
            this.#lastRollUpError = Date.now();
            this.#log.warn({ err: (err as Error).message }, 'rolling up charges failed; retrying (spend reads stay exact)');
          }
        }
      }
      if (this.#rollUpTimer !== undefined) this.#scheduleRollUp();
    }, ROLLUP_INTERVAL_MS);
    this.#rollUpTimer.unref();
  }

  async #handle(job: Job): Promise<void> {
    const log = this.#log;
    const metrics = this.#metrics;
    const cancelled = this.#cancelRuns.signal;
    const t0 = performance.now();
    let s: Stores;
    try {
      s = await this.#currentStores();
    } catch (err) {
      if (!cancelled.aborted) throw err;
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
      if (workflowId && executionId) await recordMalformed({ workflowId, executionId }, err.message, this.#deps(s));
      metrics.execution('malformed', (performance.now() - t0) / 1000);
      metrics.attempt('done');
      return; // acked: it can never run
    }
    if (job.attempt === 1) metrics.queueWait(Math.max(0, Date.now() - Date.parse(parsed.receivedAt)) / 1000);
    // One controller per run, aborted by a cancel of the execution or by shutdown (see close()). Not
    // AbortSignal.any([cancelled, run.signal]): on Node 20 the long-lived shutdown signal keeps every signal
    // combined with it, and what listens to it, for the life of the process (~80 B per job at least: one of
    // the causes of the executor's growth in bench:soak).
    const run = new AbortController();
    if (cancelled.aborted) run.abort(cancelled.reason);
    this.#runs.set(parsed.executionId, run);
    try {
      const outcome = await runExecution(parsed, job.attempt, this.#deps(s), run.signal);
      if (outcome === 'superseded') {
        job.abandon(); // another executor runs this job now (runExecution logged it)
        return;
      }
      metrics.execution(outcome, (performance.now() - t0) / 1000);
      metrics.attempt('done');
      // A success is a debug line: its record and the metrics keep it, and at a thousand executions a second
      // an info line each is the log pipeline's load (and, with pino's asynchronous stdout, a thread-pool
      // round trip per execution). Whatever did not succeed stays at info.
      const level = outcome === 'succeeded' || outcome === 'already_finished' ? 'debug' : 'info';
      if (log.isLevelEnabled(level)) {
        log[level](
          { executionId: parsed.executionId, workflowId: parsed.workflowId, outcome, attempt: job.attempt, ms: Math.round(performance.now() - t0) },
          'execution',
        );
      }
    } catch (err) {
      if (cancelled.aborted) {
        // Shutting down: hand the job to another executor now, without using up its last attempt.
        job.nak();
        metrics.attempt('retry');
        return;
      }
      if (!job.isLastAttempt) metrics.attempt('retry');
      throw err;
    } finally {
      if (this.#runs.get(parsed.executionId) === run) this.#runs.delete(parsed.executionId);
    }
  }

  async #onExhausted(job: Job, error: unknown): Promise<void> {
    const s = await this.#currentStores();
    let parsed;
    try {
      parsed = parseWebhookJob(job.data);
    } catch {
      return; // the handler records malformed jobs; nothing more can be said of this one
    }
    this.#log.error(
      { executionId: parsed.executionId, workflowId: parsed.workflowId, attempt: job.attempt, err: (error as Error | undefined)?.message },
      'execution failed: attempts used up',
    );
    if ((await recordExhausted(parsed, job.attemptsMade, error, this.#deps(s))) === 'superseded') {
      job.abandon(); // another executor runs this job now: not ours to remove
      return;
    }
    this.#metrics.execution('failed', 0);
    this.#metrics.attempt('exhausted');
  }
}
