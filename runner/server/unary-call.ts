import type { Code } from '@connectrpc/connect';

/** A refusal of the request as read off the wire: the status and the message sent to the client. */
export interface CallRefusal {
  code: Code;
  message: string;
}

/**
 * One unary call on one of the runner's own protocol paths (grpc-unary-call.ts, connect-unary-call.ts):
 * what execute-route.ts needs to read the request message and answer, whatever the protocol.
 */
export interface UnaryCall {
  /** True once an answer (a reply or a failure) is on its way, or the client went away. */
  readonly answered: boolean;
  /**
   * Reads the request's one message, at most `maxBytes`. Bytes are only read from here on, so a call
   * refused on its headers never buffers its body. `onRefused` gets what was wrong with the body (too
   * large, truncated, compressed, extra data); the call is not answered yet.
   */
  read(maxBytes: number, onMessage: (message: Uint8Array) => void, onRefused: (refusal: CallRefusal) => void): void;
  /** Answers with the encoded response (for gRPC, already framed). */
  reply(body: Uint8Array): void;
  /** Answers with an error status; false when the call was already answered (nothing is sent then). */
  fail(code: Code, message: string): boolean;
  /** Calls `listener` once if the client goes away (reset, disconnect) before the answer. */
  onAbandoned(listener: () => void): void;
}
