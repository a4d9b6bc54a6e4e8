/**
 * The executor's side of the job stream: a durable pull consumer with explicit acks, and a loop that
 * keeps pulling across NATS outages and server restarts.
 *
 * Delivery semantics (at least once, nothing silently dropped):
 * - A job not acked within `ack_wait` (default 30 s) is redelivered; a long run keeps its job with
 *   `working()` heartbeats (sent automatically by {@link runJobConsumer} every ack_wait/3).
 * - A job whose handler resolved is acked without waiting for a confirmation ({@link Job.ackNoWait}); while
 *   the loop stops, with one, so that close() resolves with finished jobs removed from the queue.
 * - Attempts are bounded by `maxAttempts` (default 5). {@link Job.isLastAttempt} tells the handler that a
 *   failure now is final, so it records the execution as failed instead of retrying.
 * - The server's `max_deliver` is `maxAttempts + extraDeliveries` (default +2), not `maxAttempts`: if the
 *   process dies during the last attempt, the job still comes back once more and {@link runJobConsumer}
 *   hands it to `onExhausted` (record "failed") instead of the handler. With `max_deliver = maxAttempts`
 *   the server would stop delivering it and it would sit unacked in the stream with nobody told. Should
 *   even the extra deliveries fail, the server's MAX_DELIVERIES advisory is logged at error level.
 * - A job with a {@link NOT_BEFORE_HEADER} (a webhook over a throttling workflow's rate,
 *   gateway/cluster-rate-limiter.ts) is handed back on its first delivery with a server-side delay
 *   (`nak(delay)`) up to its time, and run when it comes back. That first delivery is not an attempt
 *   ({@link Job.attempt} counts from the next one). A later delivery still early by more than a second (its
 *   first executor died before handing it back, or clocks disagree) is handed back again, and that one
 *   counts as an attempt. A job waiting so stays pending on the consumer (unacked), which is why
 *   `max_ack_pending` is large: executors pull one job per free slot, so the jobs actually running stay
 *   bounded by their concurrency, and the rest of the pending count is throttled jobs waiting their time.
 * - `term()` on nats-server 2.9 must be sent **without a reason**: measured on 2.9.10, `+TERM <reason>`
 *   (a 2.10 feature) is ignored and the job comes back after ack_wait; a bare `+TERM` removes it from
 *   the work queue.
 */
import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  jetstream,
  ReplayPolicy,
  type Consumer,
  type ConsumerConfig,
  type ConsumerInfo,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import type { MsgHdrs, NatsConnection, Subscription } from '@nats-io/transport-node';
import { setMaxListeners } from 'node:events';
import { silentLogger, type Logger } from '../logging/logger.js';
import type { NatsClient } from './connect.js';
import { isStreamNotFound, JOBS_STREAM } from './streams.js';

const MS = 1_000_000;

/** Header of a job that must not start before a time: milliseconds since the epoch (see the module comment). */
export const NOT_BEFORE_HEADER = 'Ldbox-Not-Before';

/** How early a job with {@link NOT_BEFORE_HEADER} may start (clock differences between gateway and executor). */
const NOT_BEFORE_SLACK_MS = 1000;

/** Default durable consumer name of the executors (all executors share it: the stream load-balances). */
export const JOBS_CONSUMER = 'executor';

export interface JobConsumerOptions {
  stream?: string;
  durable?: string;
  /** Only jobs on these subjects (a single filter: 2.9 has no multiple filter subjects). */
  filterSubject?: string;
  /** Redelivery timeout without ack or heartbeat. Default 30 s. */
  ackWaitMs?: number;
  /** Attempts before a job counts as failed. Default 5. */
  maxAttempts?: number;
  /** Deliveries past `maxAttempts` the server still makes so a crash in the last attempt is recorded. Default 2. */
  extraDeliveries?: number;
  /** Jobs delivered and not yet acked across all executors, throttled jobs waiting their time included. Default 100,000. */
  maxAckPending?: number;
}

/** The durable consumer's configuration; see the module comment for `max_deliver`. */
export function jobConsumerConfig(opts: JobConsumerOptions = {}): ConsumerConfig {
  const cfg: ConsumerConfig = {
    durable_name: opts.durable ?? JOBS_CONSUMER,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    replay_policy: ReplayPolicy.Instant,
    ack_wait: (opts.ackWaitMs ?? 30_000) * MS,
    max_deliver: (opts.maxAttempts ?? 5) + (opts.extraDeliveries ?? 2),
    max_ack_pending: opts.maxAckPending ?? 100_000,
  };
  if (opts.filterSubject) cfg.filter_subject = opts.filterSubject;
  return cfg;
}

/** Create the durable consumer or update its ack_wait / max_deliver / max_ack_pending. Idempotent. */
export async function ensureJobConsumer(jsm: JetStreamManager, opts: JobConsumerOptions = {}): Promise<ConsumerInfo> {
  const stream = opts.stream ?? JOBS_STREAM;
  const want = jobConsumerConfig(opts);
  let info: ConsumerInfo | undefined;
  try {
    info = await jsm.consumers.info(stream, want.durable_name!);
  } catch (err) {
    if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.ConsumerNotFound)) throw err;
  }
  if (!info) return jsm.consumers.add(stream, want);
  const have = info.config;
  if (have.ack_wait !== want.ack_wait || have.max_deliver !== want.max_deliver || have.max_ack_pending !== want.max_ack_pending) {
    return jsm.consumers.update(stream, want.durable_name!, {
      ack_wait: want.ack_wait,
      max_deliver: want.max_deliver,
      max_ack_pending: want.max_ack_pending,
    });
  }
  return info;
}

/** One delivery of a job. Settle it exactly once with {@link ack}, {@link nak} or {@link term}. */
export class Job {
  #settled = false;
  #hb: NodeJS.Timeout | undefined;
  /** Read once: every attempt count asks, and each header lookup allocates. */
  readonly #notBefore: number | undefined;

  constructor(
    readonly msg: JsMsg,
    readonly maxAttempts: number,
  ) {
    const raw = msg.headers?.get(NOT_BEFORE_HEADER);
    const ms = raw ? Number(raw) : Number.NaN;
    this.#notBefore = Number.isFinite(ms) ? ms : undefined;
  }

  get subject(): string {
    return this.msg.subject;
  }
  get data(): Uint8Array {
    return this.msg.data;
  }
  get headers(): MsgHdrs | undefined {
    return this.msg.headers;
  }
  /** The job's stream sequence (stable across redeliveries). */
  get seq(): number {
    return this.msg.seq;
  }
  /** The publisher's `Nats-Msg-Id` (the execution id, by convention), if any. */
  get msgID(): string | undefined {
    return this.msg.headers?.get('Nats-Msg-Id') || undefined;
  }
  /** Not to start before this time (ms since the epoch), from {@link NOT_BEFORE_HEADER}; undefined for most jobs. */
  get notBefore(): number | undefined {
    return this.#notBefore;
  }
  /** 1 on the first attempt (the first delivery of a throttled job only hands it back: see the module comment). */
  get attempt(): number {
    return this.msg.info.deliveryCount - (this.notBefore === undefined ? 0 : 1);
  }
  /** Whether this delivery must be handed back to wait for {@link notBefore}: its first, or one still early. */
  deferralMs(now: number): number | undefined {
    const nb = this.notBefore;
    if (nb === undefined) return undefined;
    if (this.msg.info.deliveryCount === 1) return Math.max(0, nb - now);
    return nb - now > NOT_BEFORE_SLACK_MS ? nb - now : undefined;
  }
  /** A failure of this attempt is final: record it, do not expect another delivery. */
  get isLastAttempt(): boolean {
    return this.attempt >= this.maxAttempts;
  }
  /** All attempts were used up before (the last one died without settling): record failure only. */
  get attemptsExhausted(): boolean {
    return this.attempt > this.maxAttempts;
  }
  /** Attempts made so far, this one included; a delivery past the last attempt only records, it is not one. */
  get attemptsMade(): number {
    return Math.min(this.attempt, this.maxAttempts);
  }
  get settled(): boolean {
    return this.#settled;
  }
  json<T = unknown>(): T {
    return this.msg.json<T>();
  }

  /** Reset the server's ack_wait timer ("still working on it"). */
  working(): void {
    if (!this.#settled) this.msg.working();
  }

  /** Send {@link working} every `intervalMs` until the job is settled; returns a stop function. */
  startHeartbeat(intervalMs: number): () => void {
    this.stopHeartbeat();
    this.#hb = setInterval(() => this.working(), intervalMs);
    this.#hb.unref();
    return () => this.stopHeartbeat();
  }

  stopHeartbeat(): void {
    clearInterval(this.#hb);
    this.#hb = undefined;
  }

  /**
   * Acknowledge and wait for the server to confirm (a double ack): resolves true when the job is known
   * to be removed from the queue, false if the confirmation did not come (then it may be redelivered:
   * the executor must treat a redelivery of a finished execution as a no-op).
   */
  async ack(timeoutMs = 5000): Promise<boolean> {
    if (this.#settle()) return true;
    try {
      return await this.msg.ackAck({ timeout: timeoutMs });
    } catch {
      return false;
    }
  }

  /**
   * Acknowledge without waiting for the server's confirmation: one message out, no request. What the loop
   * uses after a handler resolved — a lost ack only means a redelivery, which the executor treats as a
   * no-op for a finished execution — so a job does not cost a request and a round trip more.
   */
  ackNoWait(): void {
    if (this.#settle()) return;
    this.msg.ack();
  }

  /** Give the job back for another attempt, after `delayMs` (server-side delay). */
  nak(delayMs?: number): void {
    if (this.#settle()) return;
    this.msg.nak(delayMs);
  }

  /** Stop redelivering this job and remove it from the work queue. Record its failure first. */
  term(): void {
    if (this.#settle()) return;
    this.msg.term(); // no reason: 2.9 ignores `+TERM <reason>`
  }

  /**
   * Let go of this delivery without telling the server: another executor holds a later delivery of the
   * same job (it was redelivered to it), and an ack here would remove the job under that one, while a nak
   * would hand it to a third. The server's redelivery timer follows the later delivery.
   */
  abandon(): void {
    this.#settle();
  }

  #settle(): boolean {
    const was = this.#settled;
    this.#settled = true;
    this.stopHeartbeat();
    return was;
  }
}

export interface RunJobConsumerOptions extends JobConsumerOptions {
  client: NatsClient;
  /**
   * Run one job. Resolve → the job is acked (unless the handler settled it itself). Throw → nak with
   * {@link retryDelayMs}, or on the last attempt `onExhausted`.
   */
  handler: (job: Job) => Promise<void>;
  /**
   * Record the job's execution as failed. Called when the handler throws on the last attempt, and when a
   * job comes back after its last attempt died unsettled (then `error` is undefined). Resolve → the job is
   * removed (term); throw → it is retried (nak) within the extra deliveries.
   */
  onExhausted: (job: Job, error: unknown) => Promise<void>;
  /** Jobs handled at once (one fetch for the free slots, no prefetch: a prefetched job's ack_wait would tick). Default 1. */
  concurrency?: number;
  /** Delay before a failed attempt is redelivered. Default 1 s, 2 s, 4 s, … capped at 30 s. */
  retryDelayMs?: (attempt: number) => number;
  /** Heartbeat while the handler runs; 0 = off. Default ack_wait / 3. */
  heartbeatIntervalMs?: number;
  /**
   * (Re)create the stream and consumer. Called before the first pull and whenever they are missing (NATS
   * lost its data, or an operator deleted them). Default: {@link ensureJobConsumer} with these options.
   */
  ensure?: (jsm: JetStreamManager) => Promise<void>;
  /** Server-side wait of one pull (a job published meanwhile is delivered at once). Default 5 s. */
  pullExpiresMs?: number;
  logger?: Logger;
}

export interface JobConsumerLoop {
  /** Jobs being handled right now. */
  readonly inFlight: number;
  /** Stop pulling, wait for jobs in flight to finish. */
  close(): Promise<void>;
}

function safeUnsubscribe(sub: Subscription | undefined): void {
  try {
    sub?.unsubscribe();
  } catch {
    /* the connection is already closed */
  }
}

const defaultRetryDelay = (attempt: number): number => Math.min(30_000, 1000 * 2 ** Math.max(0, attempt - 1));

/**
 * Pull jobs from the durable consumer with `concurrency` slots until stopped. Survives NATS outages
 * (waits for the connection, then pulls again), restarts of nats-server (the durable consumer is kept on
 * disk) and a lost stream/consumer (recreated by `ensure`).
 */
export function runJobConsumer(opts: RunJobConsumerOptions): JobConsumerLoop {
  const log = opts.logger ?? silentLogger();
  const stream = opts.stream ?? JOBS_STREAM;
  const durable = opts.durable ?? JOBS_CONSUMER;
  const maxAttempts = opts.maxAttempts ?? 5;
  const ackWaitMs = opts.ackWaitMs ?? 30_000;
  const heartbeatMs = opts.heartbeatIntervalMs ?? Math.floor(ackWaitMs / 3);
  const retryDelay = opts.retryDelayMs ?? defaultRetryDelay;
  const expires = Math.max(1000, opts.pullExpiresMs ?? 5000);
  const ensure = opts.ensure ?? (async (jsm: JetStreamManager) => void (await ensureJobConsumer(jsm, opts)));
  const stopCtl = new AbortController();
  // Every slot waits on this one signal (for the connection, a pull, a retry pause): not a leak.
  setMaxListeners(Math.max(1, opts.concurrency ?? 1) * 3 + 10, stopCtl.signal);
  const STOPPED = Symbol('stopped');
  /**
   * `p`, or STOPPED as soon as the loop is stopped. Not `Promise.race([p, stopped])` with one long-lived
   * `stopped` promise: every race leaves a reaction on it (two closures and the race's promise, ~0.25 KB)
   * that only its settling frees, and the loop races once per fetch and once per job finished while every
   * slot is busy, so the executor's heap grew for the life of the process (a chain of ~1,500 reactions
   * after 19,000 jobs in bench:soak). Here the abort listener goes when `p` settles.
   */
  const orStopped = <T>(p: Promise<T>): Promise<T | typeof STOPPED> => {
    const signal = stopCtl.signal;
    if (signal.aborted) return Promise.resolve(STOPPED);
    return new Promise<T | typeof STOPPED>((resolve, reject) => {
      const onAbort = () => resolve(STOPPED);
      signal.addEventListener('abort', onAbort, { once: true });
      p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  };
  let inFlight = 0;
  let consumer: { nc: NatsConnection; c: Consumer } | undefined;
  let ensured: NatsConnection | undefined;
  let advisorySub: { nc: NatsConnection; sub: Subscription } | undefined;
  let lastErrLog = 0;

  const sleep = (ms: number) =>
    new Promise<void>((r) => {
      // The listener goes when the timer fires: the loop sleeps on every failed pull, for as long as NATS is away.
      const onAbort = () => (clearTimeout(t), r());
      const t = setTimeout(() => (stopCtl.signal.removeEventListener('abort', onAbort), r()), ms);
      stopCtl.signal.addEventListener('abort', onAbort, { once: true });
    });

  const watchAdvisories = (nc: NatsConnection) => {
    if (advisorySub?.nc === nc) return;
    safeUnsubscribe(advisorySub?.sub);
    const subject = `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${stream}.${durable}`;
    const sub = nc.subscribe(subject, {
      callback: (_err, m) => {
        let detail: unknown;
        try {
          detail = m.json();
        } catch {
          detail = m.string();
        }
        log.error({ stream, consumer: durable, advisory: detail }, 'job reached max deliveries and stays unacked in the stream: inspect it');
      },
    });
    advisorySub = { nc, sub };
  };

  const getConsumer = async (nc: NatsConnection): Promise<Consumer> => {
    if (consumer?.nc === nc) return consumer.c;
    if (ensured !== nc) {
      await ensure(await jetstream(nc).jetstreamManager());
      ensured = nc;
    }
    const c = await jetstream(nc).consumers.get(stream, durable);
    consumer = { nc, c };
    watchAdvisories(nc);
    return c;
  };

  const handle = async (msg: JsMsg): Promise<void> => {
    const job = new Job(msg, maxAttempts);
    const defer = job.deferralMs(Date.now());
    if (defer !== undefined) {
      job.nak(defer); // back when its time has come (server-side delay)
      return;
    }
    if (job.attemptsExhausted) {
      await exhausted(job, undefined);
      return;
    }
    if (heartbeatMs > 0) job.startHeartbeat(heartbeatMs);
    try {
      await opts.handler(job);
      // While stopping, the ack is confirmed before the slot counts as free: close() then resolves with the
      // job removed from the queue (and, acks being processed in order, every ack sent before it).
      if (!job.settled) {
        if (stopCtl.signal.aborted) await job.ack();
        else job.ackNoWait();
      }
    } catch (err) {
      if (job.settled) {
        log.error({ err, seq: job.seq }, 'job handler threw after settling the job');
      } else if (job.isLastAttempt) {
        await exhausted(job, err);
      } else {
        log.warn({ err: (err as Error)?.message, seq: job.seq, attempt: job.attempt }, 'job attempt failed, will retry');
        job.nak(retryDelay(job.attempt));
      }
    } finally {
      job.stopHeartbeat();
    }
  };

  const exhausted = async (job: Job, error: unknown): Promise<void> => {
    if (heartbeatMs > 0) job.startHeartbeat(heartbeatMs);
    try {
      await opts.onExhausted(job, error);
      job.term();
    } catch (err) {
      log.error({ err, seq: job.seq, attempt: job.attempt }, 'recording a failed job failed; it will be redelivered');
      job.nak(retryDelay(job.attempt));
    }
  };

  const concurrency = Math.max(1, opts.concurrency ?? 1);
  const running = new Set<Promise<void>>();
  /** Resolved (and replaced) whenever a job finishes: the puller waits on it while every slot is busy. */
  let freeSlot = (): void => undefined;
  let slotFreed = new Promise<void>((r) => (freeSlot = r));

  const start = (msg: JsMsg): void => {
    inFlight++;
    const p = handle(msg)
      .catch((err: unknown) => log.error({ err, seq: msg.seq }, 'job handling failed unexpectedly; the job will be redelivered'))
      .finally(() => {
        inFlight--;
        running.delete(p);
        freeSlot();
        slotFreed = new Promise<void>((r) => (freeSlot = r));
      });
    running.add(p);
  };

  /**
   * One pull for every free slot: a fetch of that many jobs (one request, not one per job), each job
   * started as it arrives. No prefetch — never more jobs delivered than slots free — so no job's ack_wait
   * ticks while it waits here. The next fetch is made when this one is complete (all its jobs arrived) or
   * expires.
   */
  const pull = async (): Promise<void> => {
    while (!stopCtl.signal.aborted) {
      if (inFlight >= concurrency) {
        await orStopped(slotFreed);
        continue;
      }
      let nc: NatsConnection;
      try {
        nc = await opts.client.whenConnected(stopCtl.signal);
      } catch {
        return; // stopped or client closed
      }
      try {
        const c = await getConsumer(nc);
        const batch = await c.fetch({ max_messages: concurrency - inFlight, expires });
        const delivered = (async () => {
          for await (const msg of batch) {
            // Stopped meanwhile: a job this fetch still brings is handed straight back.
            if (stopCtl.signal.aborted) msg.nak();
            else start(msg);
          }
        })();
        // Do not wait out the fetch when stopping (it goes on in the background, giving back what it brings).
        if ((await orStopped(delivered)) === STOPPED) {
          delivered.catch(() => undefined);
          return;
        }
      } catch (err) {
        if (stopCtl.signal.aborted) return;
        const missing = err instanceof JetStreamApiError && (err.code === JetStreamApiCodes.ConsumerNotFound || err.code === JetStreamApiCodes.StreamNotFound);
        if (missing || /not found/i.test((err as Error)?.message ?? '')) {
          ensured = undefined; // recreate on the next round
        }
        consumer = undefined;
        const now = Date.now();
        if (now - lastErrLog > 10_000) {
          lastErrLog = now;
          // A stream not created yet (a fresh start: the gateway creates it) is waited for, not warned about.
          if (isStreamNotFound(err)) {
            log.info({ stream, consumer: durable }, 'waiting for the jobs stream to be created');
          } else {
            log.warn({ err: (err as Error)?.message, stream, consumer: durable }, 'pulling jobs failed, retrying');
          }
        }
        await sleep(opts.client.isConnected ? 500 : 100);
      }
    }
  };

  const all = pull().then(async () => {
    while (running.size > 0) await Promise.allSettled([...running]);
  });
  return {
    get inFlight() {
      return inFlight;
    },
    async close() {
      stopCtl.abort();
      await all;
      // Acks sent without confirmation reach the server before close() resolves (a PING/PONG behind them).
      await opts.client.connection?.flush().catch(() => undefined);
      safeUnsubscribe(advisorySub?.sub);
    },
  };
}
