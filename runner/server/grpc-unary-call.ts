import http2 from 'node:http2';
import { Code } from '@connectrpc/connect';
import { encodeGrpcMessage } from './grpc-message-encoding.js';
import type { CallRefusal, UnaryCall } from './unary-call.js';

/**
 * A unary gRPC call (PROTOCOL-HTTP2) on a bare node:http2 stream.
 *
 * Why by hand rather than through connect-node or @grpc/grpc-js: on this project's 2-core machine
 * connect-node's server costs ~250 µs of CPU per unary call, @grpc/grpc-js ~40 µs and a bare stream
 * ~30 µs (docs/design.md, "Measurements"), and the runner answers Connect, gRPC-Web and HTTP/1.1 on
 * the same port, which grpc-js cannot share per stream. So the hot unary methods are read and answered
 * here, and everything else goes to connect-node (runner-server.ts routes by stream). Kept to what a
 * unary call needs:
 * - the request is exactly one Length-Prefixed-Message; its 5-byte header is checked as soon as it
 *   arrives: a Compressed-Flag is refused with INTERNAL (compressed calls, those with a `grpc-encoding`,
 *   never come here), a length over the limit with RESOURCE_EXHAUSTED, before the message is read;
 *   a stream that ends inside the message or carries a second one is INVALID_ARGUMENT;
 * - the answer is HEADERS + one DATA message + trailers (`grpc-status: 0`), or Trailers-Only
 *   (`grpc-status`, `grpc-message` percent-encoded as the spec asks) for an error;
 * - nothing is read before `read()`: the token is checked on the headers first;
 * - an answer sent before the request ended is followed by RST_STREAM(NO_ERROR), as RFC 9113 §8.1
 *   allows, so the client stops sending.
 * Tests: test/runner/grpc-wire.test.ts (hostile frames through a raw node:http2 client).
 */
export class GrpcUnaryCall implements UnaryCall {
  answered = false;
  /** The client sent END_STREAM, with its headers or after its body. */
  private requestEnded: boolean;

  constructor(private readonly stream: http2.ServerHttp2Stream) {
    this.requestEnded = stream.endAfterHeaders;
    // A stream error (a reset with an error code) is an 'error' event: unhandled, it would end the process.
    stream.on('error', () => {});
  }

  read(maxBytes: number, onMessage: (message: Uint8Array) => void, onRefused: (refusal: CallRefusal) => void): void {
    const header = new Uint8Array(5);
    let headerBytes = 0;
    let message: Uint8Array | undefined;
    let messageBytes = 0;
    let refused = false;
    const refuse = (code: Code, text: string): void => {
      refused = true;
      this.stream.pause();
      onRefused({ code, message: text });
    };
    this.stream.on('data', (chunk: Buffer) => {
      let at = 0;
      while (at < chunk.length && !refused && !this.answered) {
        if (message === undefined) {
          const n = Math.min(5 - headerBytes, chunk.length - at);
          header.set(chunk.subarray(at, at + n), headerBytes);
          headerBytes += n;
          at += n;
          if (headerBytes < 5) return;
          const flags = header[0]!;
          const length = new DataView(header.buffer).getUint32(1);
          if (flags !== 0) {
            return refuse(
              Code.Internal,
              (flags & 1) === 1
                ? 'protocol error: the message is compressed, but no grpc-encoding was sent'
                : `protocol error: unknown message flags 0x${flags.toString(16)}`,
            );
          }
          if (length > maxBytes) return refuse(Code.ResourceExhausted, `the request message is ${length} bytes, over the limit of ${maxBytes} bytes`);
          // An ArrayBuffer of its own: the message is transferred to a worker as it is.
          message = new Uint8Array(length);
        } else if (messageBytes === message.length) {
          return refuse(Code.InvalidArgument, 'protocol error: a unary request must carry exactly one message, got more');
        }
        const n = Math.min(message.length - messageBytes, chunk.length - at);
        message.set(chunk.subarray(at, at + n), messageBytes);
        messageBytes += n;
        at += n;
      }
    });
    this.stream.once('end', () => {
      this.requestEnded = true;
      if (refused || this.answered) return;
      if (message === undefined) {
        return refuse(
          Code.InvalidArgument,
          headerBytes === 0
            ? 'protocol error: the request has no message'
            : `protocol error: the request ended inside a message header (${headerBytes} of 5 bytes)`,
        );
      }
      if (messageBytes < message.length) {
        return refuse(Code.InvalidArgument, `protocol error: the request ended inside its message (${messageBytes} of ${message.length} bytes)`);
      }
      onMessage(message);
    });
  }

  reply(body: Uint8Array): void {
    if (!this.claim()) return;
    const stream = this.stream;
    stream.respond(OK_HEADERS, RESPOND_WITH_TRAILERS);
    stream.once('wantTrailers', () => stream.sendTrailers(OK_TRAILERS));
    stream.end(body);
  }

  fail(code: Code, message: string): boolean {
    if (!this.claim()) return false;
    this.stream.respond(
      { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': String(code), 'grpc-message': encodeGrpcMessage(message) },
      TRAILERS_ONLY,
    );
    if (!this.requestEnded) this.stream.close(http2.constants.NGHTTP2_NO_ERROR);
    return true;
  }

  onAbandoned(listener: () => void): void {
    this.stream.once('close', () => {
      if (this.answered) return;
      this.answered = true;
      listener();
    });
  }

  /** Marks the call answered; false when it already was or the stream is gone. */
  private claim(): boolean {
    if (this.answered) return false;
    this.answered = true;
    return !this.stream.destroyed && !this.stream.closed;
  }
}

const OK_HEADERS = { ':status': 200, 'content-type': 'application/grpc' };
const OK_TRAILERS = { 'grpc-status': '0' };
const RESPOND_WITH_TRAILERS: http2.ServerStreamResponseOptions = { waitForTrailers: true };
const TRAILERS_ONLY: http2.ServerStreamResponseOptions = { endStream: true };
