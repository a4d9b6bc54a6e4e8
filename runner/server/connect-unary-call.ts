import type http from 'node:http';
import type http2 from 'node:http2';
import { Code } from '@connectrpc/connect';
import { codeToHttpStatus, errorToJsonBytes } from '@connectrpc/connect/protocol-connect';
import { ConnectError } from '@connectrpc/connect';
import { answerAfterDiscard, answerThenDiscard } from '../../src/http/discard-body.js';
import type { CallRefusal, UnaryCall } from './unary-call.js';

/** How much of an oversized body (× the limit) is read and dropped before the answer. */
const DISCARD_FACTOR = 2;
/** How much of a refused call's body (no token, bad deadline) is read and dropped after the answer. */
const REFUSED_BODY_BYTES = 64 * 1024;

type Request = http.IncomingMessage | http2.Http2ServerRequest;
type Response = http.ServerResponse | http2.Http2ServerResponse;

/**
 * A unary call of the Connect protocol ("Unary-Request": POST, the message as the whole body, no
 * framing), over HTTP/1.1 or HTTP/2 through node's request/response API. Only uncompressed calls come
 * here (execute-route.ts leaves those with a Content-Encoding to connect-node). Errors are answered as
 * connect-node does: the code's HTTP status and `{"code", "message"}` as JSON.
 */
export class ConnectUnaryCall implements UnaryCall {
  answered = false;
  /** The request's size limit, once `read` was called. */
  private maxBytes = 0;

  constructor(
    private readonly req: Request,
    private readonly res: Response,
    /** The request's content type, answered back (application/json or application/proto). */
    private readonly contentType: string,
  ) {
    // An aborted upload is an 'error' on the request; unhandled, it would end the process.
    req.on('error', () => {});
  }

  read(maxBytes: number, onMessage: (message: Uint8Array) => void, onRefused: (refusal: CallRefusal) => void): void {
    const tooLarge = (size: number): CallRefusal => ({
      code: Code.ResourceExhausted,
      message: `the request message is ${size} bytes, over the limit of ${maxBytes} bytes`,
    });
    this.maxBytes = maxBytes;
    const declared = Number(this.req.headers['content-length'] ?? NaN);
    if (declared > maxBytes) return onRefused(tooLarge(declared));
    const chunks: Buffer[] = [];
    let received = 0;
    let refused = false;
    const onData = (chunk: Buffer): void => {
      if (refused) return;
      received += chunk.length;
      if (received > maxBytes) {
        refused = true;
        chunks.length = 0;
        // The rest is not collected; `fail` discards it, bounded.
        this.req.off('data', onData);
        this.req.pause();
        return onRefused(tooLarge(received));
      }
      chunks.push(chunk);
    };
    this.req.on('data', onData);
    this.req.once('end', () => {
      if (refused || this.answered) return;
      // An ArrayBuffer of its own: the message is transferred to a worker as it is.
      const message = new Uint8Array(received);
      let at = 0;
      for (const c of chunks) {
        message.set(c, at);
        at += c.length;
      }
      onMessage(message);
    });
  }

  reply(body: Uint8Array): void {
    if (!this.claim()) return;
    this.res.writeHead(200, { 'content-type': this.contentType, 'content-length': body.byteLength });
    this.res.end(body);
  }

  fail(code: Code, message: string): boolean {
    if (!this.claim()) return false;
    const body = errorToJsonBytes(new ConnectError(message, code), {});
    const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': body.byteLength };
    const answer = (): void => {
      this.res.writeHead(codeToHttpStatus(code), headers);
      this.res.end(body);
    };
    if (this.req.httpVersionMajor !== 1 || this.req.complete) {
      answer();
      return true;
    }
    // HTTP/1.1 with a body not (fully) read: the rest is read and dropped, bounded, so that clients that
    // send the whole body before reading (Node's fetch) see the status instead of EPIPE; past the bound
    // the connection is closed after the answer (discard-body.ts).
    const req = this.req as http.IncomingMessage;
    const res = this.res as http.ServerResponse;
    if (code === Code.ResourceExhausted && this.maxBytes > 0) void answerAfterDiscard(req, res, DISCARD_FACTOR * this.maxBytes, answer);
    else answerThenDiscard(req, res, REFUSED_BODY_BYTES, answer);
    return true;
  }

  onAbandoned(listener: () => void): void {
    this.res.once('close', () => {
      if (this.answered) return;
      this.answered = true;
      listener();
    });
  }

  private claim(): boolean {
    if (this.answered) return false;
    this.answered = true;
    return !this.res.destroyed;
  }
}
