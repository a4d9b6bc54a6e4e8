/**
 * Bench-only: a small keep-alive HTTP/1.1 load generator for bench/webhook.ts, in its own process. Run as
 *
 *   node dist/bench/lib/webhook-load.js '<json LoadSpec>'      (with an IPC channel)
 *
 * `conns` raw TCP connections (node:net), each with one request in flight at a time (closed loop, like
 * wrk without pipelining): the request bytes are built once, and responses are parsed just enough to get
 * the status and skip `Content-Length` bytes of body — far cheaper per request than node:http, undici or
 * fetch, so that on this 2-core machine the generator is not what limits a fast server. (No wrk or
 * autocannon here, and no new dependencies.) A response without `Content-Length`, or a closed connection,
 * counts as a socket error and the connection is reopened.
 *
 * IPC from the parent: `{type:'mark'}` starts the measured window (counters reset), `{type:'stop'}` ends it:
 * the generator answers `{type:'result', ...LoadResult}`, stops sending and exits. It starts sending as soon
 * as it runs (the time until `mark` is the warm-up) and sends `{type:'started'}` once all connections are
 * open.
 */
import { connect, type Socket } from 'node:net';
import { Samples } from './stats.js';

export interface LoadSpec {
  host: string;
  port: number;
  path: string;
  headers: Record<string, string>;
  body: string;
  conns: number;
}

export interface LoadResult {
  /** 202 answers inside the window. */
  accepted: number;
  /** Other answers inside the window, by status. */
  otherStatus: Record<string, number>;
  /** Connection errors / closes / unparseable answers inside the window. */
  socketErrors: number;
  firstError: string | undefined;
  windowMs: number;
  acceptedPerSec: number;
  /** Latency of the 202 answers, ms. */
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
  /** 202 answers over the whole run (warm-up included): what the stream should now hold at least. */
  acceptedTotal: number;
  /** This process's CPU over the window, µs per accepted request. */
  loadCpuUsPerReq: number;
}

const spec = JSON.parse(process.argv[2] ?? '{}') as LoadSpec;
if (!process.send) {
  console.error('webhook-load.js must be started with an IPC channel (by bench/webhook.ts)');
  process.exit(2);
}
const send = (m: unknown) => process.send!(m);

const body = Buffer.from(spec.body, 'utf8');
let head = `POST ${spec.path} HTTP/1.1\r\nHost: ${spec.host}:${spec.port}\r\nConnection: keep-alive\r\nContent-Length: ${body.length}\r\n`;
for (const [k, v] of Object.entries(spec.headers)) head += `${k}: ${v}\r\n`;
const request = Buffer.concat([Buffer.from(`${head}\r\n`, 'latin1'), body]);

const CRLFCRLF = Buffer.from('\r\n\r\n');
const CONTENT_LENGTH = /\r\ncontent-length:[ \t]*(\d+)/i;
const CONNECTION_CLOSE = /\r\nconnection:[ \t]*close/i;

let running = true;
let measuring = false;
let accepted = 0;
let acceptedTotal = 0;
let socketErrors = 0;
let firstError: string | undefined;
let otherStatus: Record<string, number> = {};
let latency = new Samples();
let windowStart = 0;
let cpuStart = process.cpuUsage();

function noteError(msg: string): void {
  if (!measuring) return;
  socketErrors++;
  firstError ??= msg;
}

class Conn {
  sock!: Socket;
  buf: Buffer | undefined;
  sentAt = 0;
  inFlight = false;
  opened: Promise<void>;

  constructor() {
    this.opened = this.open();
  }

  open(): Promise<void> {
    this.buf = undefined;
    this.inFlight = false;
    return new Promise((resolve) => {
      const s = connect({ host: spec.host, port: spec.port, noDelay: true });
      this.sock = s;
      s.on('connect', () => {
        resolve();
        this.fire();
      });
      s.on('data', (d: Buffer) => this.onData(d));
      s.on('error', (err) => noteError(`socket: ${err.message}`));
      s.on('close', () => {
        if (this.sock !== s) return;
        if (this.inFlight) noteError('connection closed with a request in flight');
        if (running) setTimeout(() => void this.open(), 10);
        resolve();
      });
    });
  }

  fire(): void {
    if (!running) return;
    this.inFlight = true;
    this.sentAt = performance.now();
    this.sock.write(request);
  }

  onData(d: Buffer): void {
    let buf = this.buf ? Buffer.concat([this.buf, d]) : d;
    for (;;) {
      const end = buf.indexOf(CRLFCRLF);
      if (end < 0) break;
      const headText = buf.toString('latin1', 0, end);
      const cl = CONTENT_LENGTH.exec(headText);
      if (!cl) {
        noteError(`response without Content-Length: ${headText.split('\r\n', 1)[0]}`);
        this.sock.destroy();
        return;
      }
      const total = end + 4 + Number(cl[1]);
      if (buf.length < total) break;
      const status = Number(headText.slice(9, 12));
      const now = performance.now();
      if (measuring) {
        if (status === 202) {
          accepted++;
          latency.push(now - this.sentAt);
        } else {
          otherStatus[status] = (otherStatus[status] ?? 0) + 1;
          firstError ??= `HTTP ${status}: ${buf.toString('utf8', end + 4, Math.min(total, end + 4 + 300))}`;
        }
      }
      if (status === 202) acceptedTotal++;
      buf = buf.subarray(total);
      this.inFlight = false;
      if (CONNECTION_CLOSE.test(headText)) {
        this.sock.destroy(); // 'close' reopens
        return;
      }
      this.fire();
    }
    this.buf = buf.length > 0 ? buf : undefined;
  }
}

const conns = Array.from({ length: spec.conns }, () => new Conn());
void Promise.all(conns.map((c) => c.opened)).then(() => send({ type: 'started' }));

process.on('message', (msg: { type: string }) => {
  if (msg.type === 'mark') {
    accepted = 0;
    socketErrors = 0;
    firstError = undefined;
    otherStatus = {};
    latency = new Samples();
    measuring = true;
    windowStart = performance.now();
    cpuStart = process.cpuUsage();
  } else if (msg.type === 'stop') {
    const windowMs = performance.now() - windowStart;
    measuring = false;
    running = false;
    const cpu = process.cpuUsage(cpuStart);
    const result: LoadResult = {
      accepted,
      otherStatus,
      socketErrors,
      firstError,
      windowMs,
      acceptedPerSec: (accepted * 1000) / windowMs,
      p50Ms: latency.percentile(0.5),
      p99Ms: latency.percentile(0.99),
      meanMs: latency.mean(),
      acceptedTotal,
      loadCpuUsPerReq: accepted > 0 ? (cpu.user + cpu.system) / accepted : Number.NaN,
    };
    // Let the answers in flight arrive (they count for acceptedTotal), then report and leave.
    setTimeout(() => {
      result.acceptedTotal = acceptedTotal;
      send({ type: 'result', ...result });
      for (const c of conns) c.sock.destroy();
      setTimeout(() => process.exit(0), 50);
    }, 300);
  }
});
process.on('disconnect', () => process.exit(0));
