import type http2 from 'node:http2';

/** Takes a stream (answers it on the stream itself) or leaves it: true when taken. */
export type StreamClaim = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => boolean;

/**
 * Lets `claim` see every HTTP/2 stream of `server` before node's compatibility API does, so that a hot
 * path is served on the bare stream (no Http2ServerRequest/Response pair, no connect-node) while every
 * other stream still reaches the server's 'request' handler as before.
 *
 * Why this way: node implements the compatibility API as one more 'stream' listener, added when the
 * server gets its 'request' listener (createServer(handler) does that at once); a second 'stream'
 * listener alone would see each stream as well, and both would answer it. So the compatibility
 * listeners are taken off and called only for the streams `claim` leaves. Test:
 * test/runner/grpc-wire.test.ts (gRPC, Connect, gRPC-Web and health on one HTTP/2 connection).
 */
export function claimStreamsFirst(server: http2.Http2Server, claim: StreamClaim): void {
  const compat = server.listeners('stream') as ((...args: unknown[]) => void)[];
  if (compat.length === 0) throw new Error('claimStreamsFirst: the server has no request handler to fall back to');
  server.removeAllListeners('stream');
  server.on('stream', (stream, headers, ...rest) => {
    if (claim(stream, headers)) return;
    for (const listener of compat) listener.call(server, stream, headers, ...rest);
  });
}
