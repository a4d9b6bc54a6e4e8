/**
 * One NATS connection per process, kept alive for as long as the process runs.
 *
 * Why not just `connect()` from `@nats-io/transport-node`: its defaults give up. The first connect fails at
 * once when NATS is not up yet, and a lost connection is retried 10 times, 2 s apart (≈ 20 s), then the
 * client closes for good. Every ldbox role must instead start before NATS, ride out an outage of minutes,
 * report not-ready meanwhile, and recover without a restart. {@link connectNats} therefore
 * - retries the first connect forever (its own loop, so that {@link NatsClient.close} can stop it),
 * - reconnects forever (`maxReconnectAttempts: -1`), 1 s apart with jitter,
 * - starts over if the connection is ever closed by anything but {@link NatsClient.close},
 * - exposes a {@link NatsState} that readiness probes and the job publisher read.
 * Servers, credentials and TLS come from {@link natsConnectionOptions} (the one builder, so every role
 * connects the same way); logs show {@link NatsSettings.shown}, and error text is scrubbed of the password
 * and token before it is logged.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { silentLogger, type Logger } from '../logging/logger.js';
import { natsConnectionOptions, type NatsSettings, natsSettingsOf } from './connection-options.js';

/**
 * `connecting`: never connected yet (or starting over); `connected`; `reconnecting`: lost the server, the
 * client is retrying; `closed`: {@link NatsClient.close} was called. Ready ⇔ `connected`.
 */
export type NatsState = 'connecting' | 'connected' | 'reconnecting' | 'closed';

export interface ConnectNatsOptions {
  /** Connection name shown by the server (`ldbox-gateway`, `ldbox-executor`, …). */
  name: string;
  logger?: Logger;
  /** Pause between (re)connect attempts. Default 1000 ms (nats.js: 2000). */
  reconnectTimeWaitMs?: number;
  /** Random extra pause per attempt, so that N gateways do not reconnect in lock-step. Default 500 ms. */
  reconnectJitterMs?: number;
  /** Per-attempt connect timeout. Default 5000 ms (nats.js: 20 s). */
  connectTimeoutMs?: number;
  /**
   * Client PING interval. Default 10 s with 3 outstanding PINGs allowed, so a half-open TCP connection
   * (server host gone without a RST) is noticed within ~30 s instead of nats.js's ~4 min.
   */
  pingIntervalMs?: number;
  maxPingOut?: number;
}

export type NatsStateListener = (state: NatsState, previous: NatsState) => void;

/** Thrown by {@link NatsClient.nc} when there is no connection to hand out. */
export class NatsUnavailableError extends Error {
  override name = 'NatsUnavailableError';
}

/**
 * A self-healing NATS connection. Create with {@link connectNats}; read {@link state} for readiness;
 * {@link whenConnected} waits for the first (or next) connection; {@link close} drains and stops.
 */
export class NatsClient {
  #state: NatsState = 'connecting';
  #nc: NatsConnection | undefined;
  #listeners = new Set<NatsStateListener>();
  #waiters: Array<{ resolve: (nc: NatsConnection) => void; reject: (e: Error) => void }> = [];
  #closing = false;
  #retryTimer: NodeJS.Timeout | undefined;
  #retryWake: (() => void) | undefined;
  readonly #opts: Required<Omit<ConnectNatsOptions, 'logger'>>;
  readonly #log: Logger;
  readonly #settings: NatsSettings;
  /** The servers as logs show them (credentials as `***`). */
  readonly url: string;

  constructor(target: NatsSettings | string, opts: ConnectNatsOptions) {
    this.#settings = typeof target === 'string' ? natsSettingsOf(target) : target;
    this.url = this.#settings.shown;
    this.#opts = {
      name: opts.name,
      reconnectTimeWaitMs: opts.reconnectTimeWaitMs ?? 1000,
      reconnectJitterMs: opts.reconnectJitterMs ?? 500,
      connectTimeoutMs: opts.connectTimeoutMs ?? 5000,
      pingIntervalMs: opts.pingIntervalMs ?? 10_000,
      maxPingOut: opts.maxPingOut ?? 3,
    };
    this.#log = opts.logger ?? silentLogger();
    void this.#connectLoop();
  }

  /** Current connection state; the process is ready for NATS work only when this is `connected`. */
  get state(): NatsState {
    return this.#state;
  }

  get isConnected(): boolean {
    return this.#state === 'connected';
  }

  /** The live connection, or undefined before the first connect (and after close). */
  get connection(): NatsConnection | undefined {
    return this.#nc;
  }

  /** The connection object (it stays the same across reconnects); throws {@link NatsUnavailableError} before the first connect. */
  get nc(): NatsConnection {
    if (!this.#nc || this.#state === 'closed') throw new NatsUnavailableError(`NATS is ${this.#state}`);
    return this.#nc;
  }

  /** Subscribe to state changes; returns the unsubscribe function. */
  onState(listener: NatsStateListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Resolves with the connection once the state is `connected` (at once if it is); rejects on close or abort. */
  whenConnected(signal?: AbortSignal): Promise<NatsConnection> {
    if (this.#state === 'connected' && this.#nc) return Promise.resolve(this.#nc);
    if (this.#state === 'closed') return Promise.reject(new NatsUnavailableError('NATS client closed'));
    if (signal?.aborted) return Promise.reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        this.#waiters = this.#waiters.filter((x) => x !== w);
        reject(signal!.reason instanceof Error ? signal!.reason : new Error('aborted'));
      };
      // Settling either way removes the abort listener: callers wait on one long-lived signal many times.
      const w = {
        resolve: (nc: NatsConnection) => (signal?.removeEventListener('abort', onAbort), resolve(nc)),
        reject: (e: Error) => (signal?.removeEventListener('abort', onAbort), reject(e)),
      };
      this.#waiters.push(w);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * Drain (let in-flight work finish: subscriptions get their pending messages, publishes are flushed),
   * then close. If not connected, close at once: a drain would wait for a reconnect.
   */
  async close(drainTimeoutMs = 5000): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    clearTimeout(this.#retryTimer);
    this.#retryWake?.();
    const nc = this.#nc;
    if (nc && !nc.isClosed()) {
      if (this.#state === 'connected') {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([nc.drain().catch(() => undefined), new Promise<void>((r) => (timer = setTimeout(r, drainTimeoutMs)))]);
        clearTimeout(timer);
      }
      if (!nc.isClosed()) await nc.close().catch(() => undefined);
    }
    this.#setState('closed');
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w.reject(new NatsUnavailableError('NATS client closed'));
  }

  #setState(next: NatsState): void {
    const prev = this.#state;
    if (prev === next || prev === 'closed') return;
    this.#state = next;
    if (next === 'connected') {
      this.#log.info({ nats: this.url, previous: prev }, 'NATS connected');
      const waiters = this.#waiters;
      this.#waiters = [];
      for (const w of waiters) w.resolve(this.#nc!);
    } else if (next === 'reconnecting') {
      this.#log.warn({ nats: this.url }, 'NATS connection lost, reconnecting');
    }
    for (const l of this.#listeners) {
      try {
        l(next, prev);
      } catch (err) {
        this.#log.error({ err }, 'NATS state listener threw');
      }
    }
  }

  #delay(): Promise<void> {
    const ms = this.#opts.reconnectTimeWaitMs + Math.random() * this.#opts.reconnectJitterMs;
    return new Promise((r) => {
      this.#retryWake = r;
      this.#retryTimer = setTimeout(r, ms);
    });
  }

  async #connectLoop(): Promise<void> {
    let attempts = 0;
    while (!this.#closing) {
      try {
        const nc = await connect({
          // Servers, credentials and TLS: the one builder every role uses.
          ...natsConnectionOptions(this.#settings),
          name: this.#opts.name,
          maxReconnectAttempts: -1,
          reconnectTimeWait: this.#opts.reconnectTimeWaitMs,
          reconnectJitter: this.#opts.reconnectJitterMs,
          timeout: this.#opts.connectTimeoutMs,
          pingInterval: this.#opts.pingIntervalMs,
          maxPingOut: this.#opts.maxPingOut,
          // Measured: nats.js builds an Error per request for async stack traces; turning that off is
          // +40-45 % gateway throughput with js.publish() (docs/design.md, "Measurements").
          noAsyncTraces: true,
          // Keep reconnecting even on repeated auth errors: an operator fixing credentials must not
          // require restarting every role.
          ignoreAuthErrorAbort: true,
        });
        if (this.#closing) {
          await nc.close().catch(() => undefined);
          return;
        }
        this.#nc = nc;
        this.#watch(nc);
        this.#setState('connected');
        return;
      } catch (err) {
        attempts++;
        // Log the first failure and then every 30th, not every second of an outage.
        if (attempts === 1 || attempts % 30 === 0) {
          const message = this.#scrub((err as Error).message);
          if ((err as Error).name === 'AuthorizationError' || (err as Error).name === 'UserAuthenticationExpiredError') {
            this.#log.error(
              { nats: this.url, attempts, err: message },
              'NATS refused the credentials (NATS_URL user:password, NATS_TOKEN, NATS_CREDS or NATS_NKEY_SEED_FILE), retrying',
            );
          } else {
            this.#log.warn({ nats: this.url, attempts, err: message }, 'NATS not reachable, retrying');
          }
        }
        await this.#delay();
      }
    }
  }

  /** An error message with the password or token (should a library or server ever echo one) replaced by `***`. */
  #scrub(message: string | undefined): string | undefined {
    let m = message;
    for (const secret of [this.#settings.pass, this.#settings.token]) if (m && secret) m = m.split(secret).join('***');
    return m;
  }

  #watch(nc: NatsConnection): void {
    void (async () => {
      for await (const s of nc.status()) {
        if (this.#closing) return;
        if (s.type === 'disconnect' || s.type === 'staleConnection') this.#setState('reconnecting');
        else if (s.type === 'reconnect') this.#setState('connected');
        else if (s.type === 'error') this.#log.warn({ err: this.#scrub(s.error?.message) }, 'NATS async error');
        else if (s.type === 'slowConsumer') this.#log.warn({ subject: s.sub.getSubject(), pending: s.pending }, 'NATS slow consumer');
        else if (s.type === 'ldm') this.#log.warn({ server: s.server }, 'NATS server entering lame-duck mode');
      }
    })().catch(() => undefined);
    void nc.closed().then((err) => {
      if (this.#closing) return;
      // Closed without close(): e.g. the server refused us for good. Start over rather than stay dead.
      this.#log.error({ err: this.#scrub(err?.message) }, 'NATS connection closed unexpectedly, starting over');
      if (this.#nc === nc) this.#nc = undefined;
      this.#setState('connecting');
      void this.#connectLoop();
    });
  }
}

/**
 * Start connecting to NATS and return at once: a role can start before NATS and report not-ready
 * until {@link NatsClient.state} is `connected`. Reconnects forever; see {@link NatsClient}.
 */
export function connectNats(target: NatsSettings | string, opts: ConnectNatsOptions): NatsClient {
  return new NatsClient(target, opts);
}
