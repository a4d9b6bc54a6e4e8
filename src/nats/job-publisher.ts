/**
 * Publishes jobs to JetStream and waits for the stream's PubAck, i.e. "stored" — the gateway answers 202
 * only after that.
 *
 * Why not `js.publish()`: measured on this machine (docs/design.md, "Measurements"), one nats.js client
 * tops out near 26k acked publishes/s with `js.publish()` because of client CPU (an Error built per
 * request for async traces, another one to "cancel" every resolved request, a header block on every
 * message). Sending the message with a reply subject under one wildcard inbox and matching PubAcks by token
 * (what Go's `PublishAsync` does) measured ~110k/s, and doubled the webhook gateway's req/s versus stock
 * `js.publish()`. Same semantics: the promise resolves only on the server's ack.
 *
 * Failures are values, not exceptions, because every one of them maps to an HTTP answer:
 * - `unavailable` (→ 503): not connected, connection lost with the ack outstanding, no responders (no
 *   stream / JetStream not up yet), ack timeout, or a server-side storage error. The job may or may not
 *   have been stored: a retry with the same `msgID` is de-duplicated inside the stream's window.
 * - `full` (→ 429/503 with Retry-After): the stream is at `max_msgs`/`max_bytes` and, being discard-new,
 *   refuses new jobs. nats-server 2.9 answers `{"code":503,"err_code":10077,"description":"maximum
 *   messages exceeded"}` ("maximum bytes exceeded" for bytes); see {@link classifyPubAckError}.
 * - `too_large` (→ 413): over the stream's `max_msg_size` (err_code 10054) or the server's `max_payload`
 *   (checked here before sending).
 * - `rejected` (→ 500): any other JetStream error (misconfiguration, expected-stream mismatch, …).
 */
import { createInbox, headers as natsHeaders, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import type { NatsClient, NatsState } from './connect.js';

export type PublishOk = { ok: true; stream: string; seq: number; duplicate: boolean };
export type PublishErrorKind = 'unavailable' | 'full' | 'too_large' | 'rejected';
export type PublishFailure = { ok: false; error: PublishErrorKind; message: string; errCode?: number };
export type PublishResult = PublishOk | PublishFailure;

export interface PublishOptions {
  /** `Nats-Msg-Id`: the stream drops a second message with this id inside its duplicate window and acks it with `duplicate: true` and the first message's seq. Use the execution id. */
  msgID?: string;
  /** `Nats-Expected-Stream`: refuse (→ `rejected`) if the subject is captured by another stream. */
  expectStream?: string;
  /** Extra headers. */
  headers?: Record<string, string>;
}

export interface JobPublisherOptions {
  /** How long to wait for a PubAck before answering `unavailable`. Default 5000 ms. */
  timeoutMs?: number;
}

interface Pending {
  resolve: (r: PublishResult) => void;
  deadline: number;
}

/**
 * Classification of PubAck errors (nats-server 2.9 wording, checked on 2.9.10 by test/nats/publisher.test.ts):
 * - full: `maximum messages exceeded` / `maximum bytes exceeded` (err_code 10077, code 503) on a
 *   discard-new stream at its limit; `insufficient resources` / `resource limits exceeded for account`
 *   when JetStream's own storage limits are reached;
 * - too_large: `message size exceeds maximum allowed` (err_code 10054) over the stream's max_msg_size;
 * - unavailable: any other code 503 (JetStream temporarily unavailable, a store failure);
 * - rejected: the rest (4xx: wrong expected stream, bad headers, …).
 */
const FULL = /maximum (messages|bytes|messages per subject) exceeded|insufficient resources|resource limits exceeded/i;
const TOO_LARGE = /message size exceeds maximum/i;

/** Map a JetStream API error (from a PubAck) to a publish failure. */
export function classifyPubAckError(e: { code?: number; err_code?: number; description?: string }): PublishFailure {
  const message = e.description ?? `JetStream error ${e.err_code ?? e.code}`;
  const errCode = e.err_code;
  if (errCode === 10054 || TOO_LARGE.test(message)) return { ok: false, error: 'too_large', message, errCode };
  if (FULL.test(message)) return { ok: false, error: 'full', message, errCode };
  if (e.code === 503) return { ok: false, error: 'unavailable', message, errCode };
  return { ok: false, error: 'rejected', message, errCode };
}

const dec = new TextDecoder();

/** The headers of a publish; throws nats.js's error on a value it refuses (a CR or LF would end the header early). */
function publishHeaders(opts: PublishOptions): MsgHdrs {
  const hdrs = natsHeaders();
  if (opts.msgID) hdrs.set('Nats-Msg-Id', opts.msgID);
  if (opts.expectStream) hdrs.set('Nats-Expected-Stream', opts.expectStream);
  if (opts.headers) for (const [k, v] of Object.entries(opts.headers)) hdrs.set(k, v);
  return hdrs;
}

const unavailable = (message: string): PublishFailure => ({ ok: false, error: 'unavailable', message });

/**
 * A fast JetStream publisher with awaited PubAcks; see the module comment for why it exists and what
 * each failure means. One per process is enough (it multiplexes any number of concurrent publishes).
 */
export class JobPublisher {
  readonly #client: NatsClient;
  readonly #timeoutMs: number;
  readonly #pending = new Map<string, Pending>();
  #sub: Subscription | undefined;
  #subNc: NatsConnection | undefined;
  #prefix = '';
  #next = 0;
  #sweeper: NodeJS.Timeout | undefined;
  #offState: () => void;
  #closed = false;

  constructor(client: NatsClient, opts: JobPublisherOptions = {}) {
    this.#client = client;
    this.#timeoutMs = opts.timeoutMs ?? 5000;
    // An ack still outstanding when the connection drops will not come: answer now, not at the timeout.
    this.#offState = client.onState((s: NatsState) => {
      if (s !== 'connected') this.#failAll(`NATS ${s}: connection lost before the PubAck`);
    });
  }

  /** Publishes awaiting their PubAck. */
  get pending(): number {
    return this.#pending.size;
  }

  /** Publish `data` on `subject` and resolve with the PubAck (or a typed failure). Never throws. */
  publish(subject: string, data: Uint8Array, opts?: PublishOptions): Promise<PublishResult> {
    if (this.#closed) return Promise.resolve(unavailable('publisher closed'));
    const nc = this.#client.connection;
    if (!nc || this.#client.state !== 'connected') return Promise.resolve(unavailable(`NATS ${this.#client.state}`));
    if (nc !== this.#subNc) this.#subscribe(nc);

    let hdrs: MsgHdrs | undefined;
    if (opts?.msgID || opts?.expectStream || opts?.headers) {
      try {
        hdrs = publishHeaders(opts);
      } catch (err) {
        return Promise.resolve({ ok: false, error: 'rejected', message: (err as Error).message });
      }
    }
    const max = nc.info?.max_payload;
    if (max !== undefined && data.length > max) {
      return Promise.resolve({ ok: false, error: 'too_large', message: `job of ${data.length} bytes exceeds the NATS max_payload of ${max}` });
    }
    const token = (this.#next++).toString(36);
    return new Promise<PublishResult>((resolve) => {
      this.#pending.set(token, { resolve, deadline: Date.now() + this.#timeoutMs });
      try {
        nc.publish(subject, data, hdrs ? { reply: this.#prefix + token, headers: hdrs } : { reply: this.#prefix + token });
      } catch (err) {
        this.#pending.delete(token);
        const message = (err as Error).message;
        resolve(/max_payload/i.test(message) ? { ok: false, error: 'too_large', message } : unavailable(message));
        return;
      }
      this.#armSweeper();
    });
  }

  /** Stop: fail outstanding publishes as `unavailable` and drop the inbox subscription. */
  close(): void {
    this.#closed = true;
    this.#offState();
    this.#failAll('publisher closed');
    safeUnsubscribe(this.#sub);
    this.#sub = undefined;
  }

  #subscribe(nc: NatsConnection): void {
    safeUnsubscribe(this.#sub);
    this.#prefix = `${createInbox()}.`;
    const prefixLen = this.#prefix.length;
    this.#subNc = nc;
    // Core subscriptions are re-established by nats.js after a reconnect, so this lives as long as nc.
    this.#sub = nc.subscribe(`${this.#prefix}*`, {
      callback: (err, msg) => {
        if (err) return;
        const p = this.#pending.get(msg.subject.slice(prefixLen));
        if (!p) return; // timed out or failed already
        this.#pending.delete(msg.subject.slice(prefixLen));
        p.resolve(parseAck(msg));
      },
    });
  }

  #failAll(message: string): void {
    if (this.#pending.size === 0) return;
    const all = [...this.#pending.values()];
    this.#pending.clear();
    for (const p of all) p.resolve(unavailable(message));
  }

  // One timer for all publishes instead of one per publish. All share one timeout, so Map order (insertion
  // order) is deadline order and the sweep stops at the first one not yet due.
  #armSweeper(): void {
    if (this.#sweeper) return;
    const tick = Math.max(10, Math.min(250, Math.floor(this.#timeoutMs / 4)));
    this.#sweeper = setInterval(() => {
      const now = Date.now();
      for (const [token, p] of this.#pending) {
        if (p.deadline > now) break;
        this.#pending.delete(token);
        p.resolve(unavailable(`no PubAck within ${this.#timeoutMs} ms`));
      }
      if (this.#pending.size === 0) {
        clearInterval(this.#sweeper);
        this.#sweeper = undefined;
      }
    }, tick);
    this.#sweeper.unref();
  }
}

function safeUnsubscribe(sub: Subscription | undefined): void {
  try {
    sub?.unsubscribe();
  } catch {
    /* the connection is already closed */
  }
}

function parseAck(msg: Msg): PublishResult {
  // A status message (no payload, a status code in the header line): 503 = no responders, i.e. nothing
  // listens on the subject — no stream captures it, or JetStream is not up (yet).
  const code = msg.headers?.code ?? 0;
  if (msg.data.length === 0 && code >= 300) {
    return unavailable(code === 503 ? 'no responders: no JetStream stream for this subject (or JetStream not ready)' : `NATS status ${code}`);
  }
  let body: { stream?: string; seq?: number; duplicate?: boolean; error?: { code?: number; err_code?: number; description?: string } };
  try {
    body = JSON.parse(dec.decode(msg.data)) as typeof body;
  } catch {
    return { ok: false, error: 'rejected', message: 'unparseable PubAck' };
  }
  if (body.error) return classifyPubAckError(body.error);
  if (typeof body.seq !== 'number' || typeof body.stream !== 'string') return { ok: false, error: 'rejected', message: 'malformed PubAck' };
  return { ok: true, stream: body.stream, seq: body.seq, duplicate: body.duplicate === true };
}
