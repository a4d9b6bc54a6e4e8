/**
 * Bench-only: one keep-alive HTTP/1.1 connection on a raw TCP socket (node:net), one request in flight at a
 * time, for bench/lib/webhook-e2e.ts. As bench/lib/webhook-load.ts's generator, but with a body per request
 * and the answer's body returned (the execution id is in it).
 *
 * Why not node:http: measured in bench:webhook part 2, its client cost the measuring process ~150 µs of CPU
 * per request (the agent, ClientRequest, header processing, a header write and a body write per request),
 * CPU taken from the processes being measured on a 2-core machine. Here a request is one buffer and one
 * write, and the answer is parsed just enough: the status line, `Content-Length`, that many bytes of body.
 * An answer without `Content-Length` (chunked), a closed connection or a socket error rejects the request
 * in flight and every later one (the caller opens a new connection if it wants to go on).
 */
import { connect, type Socket } from 'node:net';

export interface RawAnswer {
  status: number;
  text: string;
}

const CRLFCRLF = Buffer.from('\r\n\r\n');
const CONTENT_LENGTH = /\r\ncontent-length:[ \t]*(\d+)/i;
const STATUS_LINE = /^HTTP\/1\.[01] (\d{3})/;

/** A keep-alive connection to `host:port`; {@link post} sends one request and resolves with the answer. */
export class RawHttpConnection {
  readonly #socket: Socket;
  readonly #hostHeader: string;
  readonly #opened: Promise<void>;
  #buf: Buffer = Buffer.alloc(0);
  #pending: { resolve: (a: RawAnswer) => void; reject: (e: Error) => void } | undefined;
  #failed: Error | undefined;

  constructor(host: string, port: number) {
    this.#hostHeader = `${host}:${port}`;
    this.#socket = connect({ host, port, noDelay: true });
    this.#opened = new Promise((resolve, reject) => {
      this.#socket.once('connect', resolve);
      this.#socket.once('error', reject);
    });
    this.#opened.catch(() => undefined);
    this.#socket.on('data', (d: Buffer) => this.#onData(d));
    this.#socket.on('error', (err) => this.#fail(err));
    this.#socket.on('close', () => this.#fail(new Error('connection closed by the server')));
  }

  /** POST `body` (JSON) to `path`; one request at a time per connection. */
  async post(path: string, body: string): Promise<RawAnswer> {
    if (this.#pending) throw new Error('RawHttpConnection: one request at a time');
    await this.#opened;
    if (this.#failed) throw this.#failed;
    const bytes = Buffer.byteLength(body);
    const head = `POST ${path} HTTP/1.1\r\nHost: ${this.#hostHeader}\r\nContent-Type: application/json\r\nContent-Length: ${bytes}\r\n\r\n`;
    return new Promise<RawAnswer>((resolve, reject) => {
      this.#pending = { resolve, reject };
      this.#socket.write(head + body, 'utf8');
    });
  }

  /** The connection failed (closed, a socket error, an unparseable answer): open another to go on. */
  get failed(): boolean {
    return this.#failed !== undefined;
  }

  close(): void {
    this.#socket.destroy();
  }

  #onData(d: Buffer): void {
    this.#buf = this.#buf.length === 0 ? d : Buffer.concat([this.#buf, d]);
    const end = this.#buf.indexOf(CRLFCRLF);
    if (end < 0) return;
    const head = this.#buf.toString('latin1', 0, end);
    const status = STATUS_LINE.exec(head);
    const length = CONTENT_LENGTH.exec(head);
    if (!status || !length) {
      this.#fail(new Error(`unparseable answer (no status line or no Content-Length): ${JSON.stringify(head.slice(0, 200))}`));
      this.#socket.destroy();
      return;
    }
    const total = end + 4 + Number(length[1]);
    if (this.#buf.length < total) return;
    const text = this.#buf.toString('utf8', end + 4, total);
    this.#buf = this.#buf.subarray(total);
    const p = this.#pending;
    this.#pending = undefined;
    p?.resolve({ status: Number(status[1]), text });
  }

  #fail(err: Error): void {
    this.#failed ??= err;
    const p = this.#pending;
    this.#pending = undefined;
    p?.reject(err);
  }
}
